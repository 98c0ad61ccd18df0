"""Rule provenance: what the run ran on (results/all/provenance.json and its table)."""

from helixclock.config import REPO
from helixclock.pipeline import start
from helixclock.provenance import write_provenance

start(snakemake)
cards = dict(zip(snakemake.params.models, snakemake.input.cards))
write_provenance(snakemake.params.device, REPO, cards, snakemake.output)

"""Rule provenance: what the run ran on (results/all/provenance.json and its table)."""

from helixclock.environment.provenance import write_provenance
from helixclock.jobs.pipeline import start
from helixclock.lm.config import REPO
from helixclock.project import outputs

start(snakemake)
# every model results/all compares: this command's (the inputs) and those with finished results
cards = {m: outputs.CARD.format(model=m) for m in snakemake.params.models}
write_provenance(snakemake.params.device, REPO, cards, snakemake.output)

"""Rule model_card: family, shape and checked token positions of a model (no forward pass)."""

from helixclock.io import write_json
from helixclock.model_card import model_card
from helixclock.pipeline import start

log = start(snakemake)
card = model_card(snakemake.wildcards.model, snakemake.params.spec, snakemake.params.tasks)
write_json(snakemake.output[0], card)
log.info("%s", card)

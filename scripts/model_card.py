"""Rule model_card: family, shape and checked token positions of a model (no forward pass)."""

from helixclock.jobs.pipeline import start
from helixclock.lm.model_card import model_card
from helixclock.lm.sources import model_resources
from helixclock.project.io import write_json

log = start(snakemake)
p = snakemake.params
card = model_card(snakemake.wildcards.model, p.spec, p.tasks, model_resources(snakemake.input.get("weights")))
write_json(snakemake.output[0], card)
log.info("%s", card)

"""Rule residual_cache: resid_pre of correct a+b prompts and bare numbers -> HDF5."""

from helixclock.jobs.cache_writer import write_residual_cache
from helixclock.jobs.model_jobs import open_model
from helixclock.jobs.pipeline import accuracy, minimum, require, start
from helixclock.jobs.preconditions import cache_needs
from helixclock.project.io import read_json

log = start(snakemake)
p = snakemake.params
acc = accuracy(snakemake)
card = read_json(snakemake.input.card)
require(snakemake, cache_needs(acc, minimum(snakemake), p.largest_bare_number, card.get("number_limit")))
correct = acc[acc["correct"]]
model, engine = open_model(snakemake)
attrs = write_residual_cache(
    model,
    p.spec["prompts"]["add"],
    correct["a"].to_numpy(),
    correct["b"].to_numpy(),
    snakemake.output[0],
    dtype=p.dtype,
    largest_bare_number=p.largest_bare_number,
    engine=engine,
    number_prompt=p.spec.get("number_prompt", "{a}"),
)
log.info("cached %d correct prompts: %s", len(correct), attrs)

"""Rule residual_cache: resid_pre of correct a+b prompts and bare numbers -> HDF5."""

from helixclock.cache_writer import write_residual_cache
from helixclock.io import read_json
from helixclock.model_jobs import open_model
from helixclock.pipeline import accuracy, minimum, require, start
from helixclock.preconditions import cache_needs

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

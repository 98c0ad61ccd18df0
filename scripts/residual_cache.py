"""Rule residual_cache: resid_pre of correct a+b prompts and bare numbers -> HDF5."""

from helixclock.cache import write_residual_cache
from helixclock.io import read_json
from helixclock.pipeline import accuracy, load, minimum, patching_engine, require, start
from helixclock.preconditions import cache_needs

log = start(snakemake)
acc = accuracy(snakemake)
card = read_json(snakemake.input.card)
require(snakemake, cache_needs(acc, minimum(snakemake), snakemake.params.max_number, card.get("max_number")))
correct = acc[acc["correct"]]
model = load(snakemake)
attrs = write_residual_cache(
    model,
    snakemake.params.spec["prompts"]["add"],
    correct["a"].to_numpy(),
    correct["b"].to_numpy(),
    snakemake.output[0],
    dtype=snakemake.params.dtype,
    max_number=snakemake.params.max_number,
    engine=patching_engine(snakemake, model),
    number_prompt=snakemake.params.spec.get("number_prompt", "{a}"),
    several=snakemake.params.spec.get("number_tokens", "one") == "several",
)
log.info("cached %d correct prompts: %s", len(correct), attrs)

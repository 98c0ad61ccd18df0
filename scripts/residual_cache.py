"""Rule residual_cache: resid_pre of correct a+b prompts and bare numbers -> HDF5."""
import pandas as pd

from helixclock.cache import write_residual_cache
from helixclock.pipeline import load, patching_engine, require, start

log = start(snakemake)
require(snakemake)
acc = pd.read_csv(snakemake.input.accuracy)
correct = acc[acc["correct"]]
model = load(snakemake)
attrs = write_residual_cache(model, snakemake.params.spec["prompts"]["add"],
                             correct["a"].to_numpy(), correct["b"].to_numpy(), snakemake.output[0],
                             dtype=snakemake.params.dtype, max_number=snakemake.params.max_number,
                             engine=patching_engine(snakemake, model))
log.info("cached %d correct prompts: %s", len(correct), attrs)

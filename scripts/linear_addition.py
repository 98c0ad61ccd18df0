"""Rule linear_addition: App. E, addition along a line fitted to the numbers (Fig. E1)."""

import pandas as pd

from helixclock.cache import read_residual_cache
from helixclock.pipeline import start
from helixclock.stages.errors.linear_addition import linear_addition_tables

log = start(snakemake)
cache = read_residual_cache(snakemake.input.cache, datasets=("numbers",))
out = linear_addition_tables(cache.numbers[:, snakemake.params.layer], pd.read_csv(snakemake.input.accuracy))
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("line R^2 %.4f", float(out["accuracy"]["line_r2"].iloc[0]))

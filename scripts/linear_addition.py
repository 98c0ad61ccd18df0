"""Rule linear_addition: App. E, addition along a line fitted to the numbers (Fig. E1)."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.project.cache import read_layer
from helixclock.stages.mistakes.linear_addition import linear_addition

log = start(snakemake)
numbers = read_layer(snakemake.input.cache, "numbers", snakemake.params.layer)
out = linear_addition(numbers, pd.read_csv(snakemake.input.accuracy))
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("line R^2 %.4f", float(out["accuracy"]["line_r2"].iloc[0]))

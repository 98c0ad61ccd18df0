"""Rule head_summary: the heads' tables with bootstrap intervals, and Table D1."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.project.io import write_table
from helixclock.stages.heads.tables import category_table, head_summary

start(snakemake)
raw = {
    name: pd.read_csv(snakemake.input[name])
    for name in ("screen", "effects", "fits", "topk", "mixed", "paths", "pairs")
}
out = head_summary(
    raw,
    pd.read_csv(snakemake.input.categories),
    pd.read_csv(snakemake.input.attention),
    resampling(snakemake),
    snakemake.params.threshold,
)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
write_table(category_table(out["categories"]), snakemake.output.table, snakemake.output.table_md, floatfmt=".3f")

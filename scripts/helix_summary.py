"""Rule helix_summary: means with bootstrap intervals, the best period subsets, the pairs' strata (Figs. 4, C5, C6)."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.stages.helix.tables import helix_summary

log = start(snakemake)
raw = {name: pd.read_csv(snakemake.input[name]) for name in ("sweep", "controls", "ablation", "nested", "pairs")}
for name, df in helix_summary(raw, resampling(snakemake), snakemake.params.compat).items():
    df.to_csv(snakemake.output[name], index=False)

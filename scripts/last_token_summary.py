"""Rule last_token_summary: means with bootstrap intervals of Figs. 5 and 6."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.stages.last_token.tables import last_token_summary

start(snakemake)
raw = {name: pd.read_csv(snakemake.input[name]) for name in ("fits", "layer_effects", "pairs")}
for name, df in last_token_summary(raw, resampling(snakemake)).items():
    df.to_csv(snakemake.output[name], index=False)

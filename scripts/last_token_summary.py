"""Rule last_token_summary: means with bootstrap intervals of Figs. 5 and 6."""

import pandas as pd

from helixclock.pipeline import resampling, start
from helixclock.stages.last_token.tables import effects_table
from helixclock.statistics import summarise

start(snakemake)
resample = resampling(snakemake)
summarise(pd.read_csv(snakemake.input.fits), resample).to_csv(snakemake.output.fits, index=False)
effects_table(pd.read_csv(snakemake.input.layer_effects), resample).to_csv(snakemake.output.layer_effects, index=False)

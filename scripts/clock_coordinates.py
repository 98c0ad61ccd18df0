"""Rule clock_coordinates: Fig. 1's a+b side, the last-token helix(a+b) where it patches best."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.project.cache import read_residual_cache
from helixclock.stages.report.clock import clock_coordinates

log = start(snakemake)
cache = read_residual_cache(snakemake.input.cache, datasets=("last", "ab"))
coords = clock_coordinates(pd.read_csv(snakemake.input.last_token), cache, snakemake.params.periods)
coords.to_csv(snakemake.output[0], index=False)
log.info("helix(a+b) at resid_pre[%d], R^2 %.3f", int(coords["layer"].iloc[0]), float(coords["r2"].iloc[0]))

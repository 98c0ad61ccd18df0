"""Rule helix_figure_tables: Fig. 3 and Figs. C1-C3 at the figure layer."""

import torch

from helixclock.cache import read_residual_cache
from helixclock.fit_files import load_fits
from helixclock.fits import unique_rows
from helixclock.pipeline import start
from helixclock.stages.helix.fitting import figure_tables

start(snakemake)
p = snakemake.params
cache = read_residual_cache(snakemake.input.cache, datasets=("a", "ab"))
values, H, _ = unique_rows(cache.ab[:, 0], torch.from_numpy(cache.a).transpose(0, 1))
for name, df in figure_tables(load_fits(snakemake.input.fits), H, values, p.figure_layer, p.periods).items():
    df.to_csv(snakemake.output[name], index=False)

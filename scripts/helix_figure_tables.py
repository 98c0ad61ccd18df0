"""Rule helix_figure_tables: Fig. 3 and Figs. C1-C3 at the figure layer."""

from helixclock.fitting.helix_files import load_helix_fits
from helixclock.jobs.pipeline import start
from helixclock.project.cache import read_residual_cache
from helixclock.stages.helix.fitting import helix_figure_tables

start(snakemake)
p = snakemake.params
cache = read_residual_cache(snakemake.input.cache, datasets=("a", "ab"))
tables = helix_figure_tables(cache, load_helix_fits(snakemake.input.fits), p.figure_layer, p.periods)
for name, df in tables.items():
    df.to_csv(snakemake.output[name], index=False)

"""Rule helix_fits: helix, circle and polynomial fits of the a-token residuals at every layer."""

from helixclock.fitting.bases import FitSettings
from helixclock.fitting.helix_files import save_helix_fits
from helixclock.jobs.pipeline import minimum, require, settings, start
from helixclock.jobs.preconditions import helix_fit_needs
from helixclock.project.cache import read_residual_cache
from helixclock.stages.helix.fitting import helix_fits, r2_table

log = start(snakemake)
fit = settings(snakemake, "fit", FitSettings)
cache = read_residual_cache(snakemake.input.cache, datasets=("a", "ab"))
require(snakemake, helix_fit_needs(cache.ab[:, 0], fit.periods, minimum(snakemake)))
fits = helix_fits(cache, fit)
convention = cache.attrs["layer_convention"]
save_helix_fits(snakemake.output.fits, fits, model=snakemake.wildcards.model, token="a", layer_convention=convention)
r2 = r2_table(fits)
r2.to_csv(snakemake.output.r2, index=False)
log.info("R^2 of the full helix by layer:\n%s", r2[r2["basis"] == f"helix(a)[{','.join(map(str, fit.periods))}]"])

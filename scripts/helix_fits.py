"""Rule helix_fits: helix, circle and polynomial fits of the a-token residuals at every layer."""

import torch

from helixclock.bases import FitSettings, standard_bases
from helixclock.cache import read_residual_cache
from helixclock.fit_files import save_fits
from helixclock.fits import fit_token
from helixclock.pipeline import minimum, require, settings, start
from helixclock.preconditions import helix_fit_needs
from helixclock.stages.helix.fitting import r2_table

log = start(snakemake)
fit = settings(snakemake, "fit", FitSettings)
cache = read_residual_cache(snakemake.input[0], datasets=("a", "ab"))
require(snakemake, helix_fit_needs(cache.ab[:, 0], fit.periods, minimum(snakemake)))
H = torch.from_numpy(cache.a).transpose(0, 1)  # [layers, rows, d]
fits = fit_token(H, cache.ab[:, 0], standard_bases(fit.periods, compat=fit.compat), fit.pca_components)
save_fits(
    snakemake.output.fits,
    fits,
    model=snakemake.wildcards.model,
    token="a",
    layer_convention=cache.attrs["layer_convention"],
)
r2 = r2_table(fits)
r2.to_csv(snakemake.output.r2, index=False)
log.info("R^2 of the full helix by layer:\n%s", r2[r2["basis"] == f"helix(a)[{','.join(map(str, fit.periods))}]"])

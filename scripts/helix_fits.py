"""Rule helix_fits: helix, circle and polynomial fits of the a-token residuals at every layer."""
import torch

from helixclock.cache import read_residual_cache
from helixclock.fits import FitSettings, fit_token, save_fits, standard_bases
from helixclock.pipeline import refuse_unless, settings, start
from helixclock.stages.helix.fitting import r2_table

log = start(snakemake)
fit = settings(snakemake, "fit", FitSettings)
cache = read_residual_cache(snakemake.input[0], datasets=("a", "ab"))
bases = standard_bases(fit.periods, compat=fit.compat)
refuse_unless(snakemake, "distinct a among correct prompts (more than the largest basis has columns)",
              len(set(cache.ab[:, 0])), max(len(b.columns()) for b in bases) + 1)
H = torch.from_numpy(cache.a).transpose(0, 1)  # [layers, rows, d]
fits = fit_token(H, cache.ab[:, 0], bases, fit.pca_components)
save_fits(snakemake.output.fits, fits, model=snakemake.wildcards.model, token="a",
          layer_convention=cache.attrs["layer_convention"])
r2 = r2_table(fits)
r2.to_csv(snakemake.output.r2, index=False)
log.info("R^2 of the full helix by layer:\n%s", r2[r2["basis"] == f"helix(a)[{','.join(map(str, fit.periods))}]"])

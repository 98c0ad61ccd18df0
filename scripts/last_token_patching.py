"""Rule last_token_patching: Fig. 5 (last-token fits at every layer) and Fig. 6 (layer TE, DE), per pair."""

from helixclock.bases import FitSettings
from helixclock.cache import read_residual_cache
from helixclock.pipeline import clock_job, settings
from helixclock.stages.last_token.patching import last_token_curves, layer_effects

job = clock_job(snakemake)
fit = settings(snakemake, "fit", FitSettings)
cache = read_residual_cache(snakemake.input.cache, datasets=("last", "ab"))
last_token_curves(job.engine, job.pairs, cache, fit.periods, fit.pca_components).to_csv(
    snakemake.output.fits, index=False
)
layer_effects(job.engine, job.pairs).to_csv(snakemake.output.layer_effects, index=False)

"""Rule last_token_patching: Fig. 5 (last-token fits at every layer) and Fig. 6 (layer TE, DE), per pair."""

from helixclock.fitting.bases import FitSettings
from helixclock.jobs.model_jobs import clock_job, selection
from helixclock.jobs.pipeline import settings
from helixclock.project.cache import read_residual_cache
from helixclock.stages.last_token.patching import last_token_patching

fit = settings(snakemake, "fit", FitSettings)
job = clock_job(snakemake, fit.periods)
cache = read_residual_cache(snakemake.input.cache, datasets=("last", "ab"))
step = snakemake.params.layer_step
ranked = job.ranking_pairs(selection(snakemake))
out = last_token_patching(job.engine, job.pairs, cache, fit, job.correct, job.template, step, ranked)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

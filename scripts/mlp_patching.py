"""Rule mlp_patching: every MLP's TE and DE, Fig. D8 top-k MLPs and every MLP's helix(a+b) fit patched in (per pair)."""

import pandas as pd

from helixclock.fitting.bases import FitSettings
from helixclock.jobs.model_jobs import clock_job, selection
from helixclock.jobs.pipeline import settings
from helixclock.stages.mlps.patching import mlp_patching

fit = settings(snakemake, "fit", FitSettings)
job = clock_job(snakemake, fit.periods, snakemake.params.fit_prompts)
effects = pd.read_csv(snakemake.input.layer_effects)
select = job.selection_pairs(selection(snakemake))
out = mlp_patching(job.engine, job.pairs, job.fit_rows, job.template, effects, fit.periods, fit.pca_components, select)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

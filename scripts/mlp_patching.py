"""Rule mlp_patching: Fig. D8 top-k MLPs and every MLP's helix(a+b) fit patched in (per pair)."""

import pandas as pd

from helixclock.bases import FitSettings
from helixclock.pipeline import clock_job, settings
from helixclock.stages.mlps.patching import mlp_stage
from helixclock.statistics import pair_values

job = clock_job(snakemake)
fit = settings(snakemake, "fit", FitSettings)
effects = pd.read_csv(snakemake.input.layer_effects)
mlp = effects[(effects["component"] == "MLP") & (effects["effect"] == "te")].sort_values("layer")
out = mlp_stage(
    job.engine,
    job.pairs,
    job.fit_ids,
    job.fit_a,
    job.fit_b,
    job.positions["last"],
    pair_values(mlp).mean(1),
    fit.periods,
    fit.pca_components,
)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

"""Rule other_tasks_patching: full fits patched at the a token for every task (Table 1, Fig. C7)."""

import pandas as pd

from helixclock.fitting.bases import FitSettings
from helixclock.jobs.model_jobs import open_for_tasks
from helixclock.jobs.pipeline import settings, start
from helixclock.stages.helix.patching import other_tasks_patching

start(snakemake)
p = snakemake.params
frames, model, engine = open_for_tasks(
    snakemake, {t: pd.read_csv(path) for t, path in zip(p.tasks, snakemake.input.accuracy)}
)
fit = settings(snakemake, "fit", FitSettings)
out = other_tasks_patching(engine, frames, p.spec["prompts"], fit, p.n_pairs, p.seed, p.layer_step)
out["raw"].to_csv(snakemake.output.raw, index=False)
out["pairs"].to_csv(snakemake.output.pairs, index=False)

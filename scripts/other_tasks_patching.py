"""Rule other_tasks_patching: full fits patched at the a token for every task (Table 1, Fig. C7)."""

import pandas as pd

from helixclock.bases import FitSettings
from helixclock.model_jobs import open_model
from helixclock.models import several_tokens
from helixclock.numbers import task_shapes
from helixclock.pipeline import settings, start, usable_tasks
from helixclock.stages.helix.patching import other_tasks_patching

start(snakemake)
p = snakemake.params
frames = usable_tasks(snakemake, {t: pd.read_csv(path) for t, path in zip(p.tasks, snakemake.input.accuracy)})
model, engine = open_model(snakemake)
if several_tokens(model):  # the exact count: partners share a token shape
    frames = usable_tasks(snakemake, frames, task_shapes(model.tokenizer, p.spec["prompts"], frames))
fit = settings(snakemake, "fit", FitSettings)
raw = other_tasks_patching(engine, frames, p.spec["prompts"], fit, p.n_pairs, p.seed, p.layer_step)
raw.to_csv(snakemake.output[0], index=False)

"""Rule other_tasks_left_out: the tasks other_tasks_patching leaves out of Table 1, and why."""

import pandas as pd

from helixclock.jobs.pipeline import minimum, start
from helixclock.jobs.preconditions import other_tasks_left_out
from helixclock.lm.model_card import tokenizer_task_shapes
from helixclock.lm.sources import model_resources

start(snakemake)
p = snakemake.params
model = snakemake.wildcards.model
frames = {t: pd.read_csv(path) for t, path in zip(p.tasks, snakemake.input.accuracy)}
shapes = tokenizer_task_shapes(model, p.spec, frames, model_resources(snakemake.input.get("weights")))
other_tasks_left_out(frames, p.periods, p.n_pairs, minimum(snakemake), model, shapes).to_csv(
    snakemake.output[0], index=False
)

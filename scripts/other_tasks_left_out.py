"""Rule other_tasks_left_out: the tasks other_tasks_patching leaves out of Table 1, and why."""

import pandas as pd

from helixclock.config import several_tokens
from helixclock.model_card import load_tokenizer
from helixclock.numbers import task_shapes
from helixclock.pipeline import minimum, start
from helixclock.preconditions import left_out, other_tasks_needs

start(snakemake)
p = snakemake.params
model = snakemake.wildcards.model
frames = {t: pd.read_csv(path) for t, path in zip(p.tasks, snakemake.input.accuracy)}
shapes = None
if several_tokens(p.spec):  # pairs of one token shape: the tokenizer counts them
    shapes = task_shapes(load_tokenizer(model, p.spec), p.spec["prompts"], frames)
needs = other_tasks_needs(frames, p.periods, p.n_pairs, minimum(snakemake), shapes)
left_out(needs, frames, model, "other_tasks_patching").to_csv(snakemake.output[0], index=False)

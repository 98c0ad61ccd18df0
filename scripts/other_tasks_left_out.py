"""Rule other_tasks_left_out: the tasks other_tasks_patching leaves out of Table 1, and why."""

import pandas as pd

from helixclock.pipeline import minimum, start
from helixclock.preconditions import left_out, other_tasks_needs

start(snakemake)
p = snakemake.params
frames = {t: pd.read_csv(path) for t, path in zip(p.tasks, snakemake.input.accuracy)}
needs = other_tasks_needs(frames, p.periods, p.n_pairs, minimum(snakemake))
left_out(needs, frames, snakemake.wildcards.model, "other_tasks_patching").to_csv(snakemake.output[0], index=False)

"""Rule other_tasks_patching: full fits patched at the a token for every task (Table 1, Fig. C7)."""
import pandas as pd

from helixclock.fits import FitSettings
from helixclock.pipeline import load, patching_engine, require_pairs, settings, start
from helixclock.stages.helix.patching import other_tasks_stage

start(snakemake)
p = snakemake.params
frames = {t: pd.read_csv(path) for t, path in zip(p.tasks, snakemake.input.accuracy)}
for task, acc in frames.items():
    require_pairs(snakemake, acc[acc["correct"]], p.n_pairs, p.seed, ("a",), what=f"{task} pairs")
model = load(snakemake)
fit = settings(snakemake, "fit", FitSettings)
raw = other_tasks_stage(patching_engine(snakemake, model), frames, p.spec["prompts"], fit, n_pairs=p.n_pairs,
                        seed=p.seed)
raw.to_csv(snakemake.output[0], index=False)

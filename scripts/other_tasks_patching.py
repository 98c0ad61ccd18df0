"""Rule other_tasks_patching: full fits patched at the a token for every task (Table 1, Fig. C7)."""
import pandas as pd

from helixclock.helix_patching import other_tasks_stage
from helixclock.pipeline import engine, load, start

log = start(snakemake)
p = snakemake.params
frames = {t: pd.read_csv(path) for t, path in zip(p.tasks, snakemake.input.accuracy)}
model = load(snakemake)
curves = other_tasks_stage(engine(snakemake, model), frames, p.spec["prompts"], n_pairs=p.n_pairs,
                           seed=p.seed, n_boot=p.bootstrap, periods=p.periods, n_components=p.pca_components)
curves.to_csv(snakemake.output[0], index=False)

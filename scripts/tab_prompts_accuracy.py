"""Rule tab_prompts_accuracy: tabA1, the a+b prompt and accuracy of every model."""

import pandas as pd

from helixclock.io import write_table
from helixclock.pipeline import start
from helixclock.stages.accuracy.tables import prompts_accuracy_table

start(snakemake)
frames = {m: pd.read_csv(p) for m, p in zip(snakemake.params.models, snakemake.input)}
write_table(prompts_accuracy_table(frames, snakemake.params.templates), *snakemake.output)

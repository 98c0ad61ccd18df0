"""Rule tab_other_tasks_accuracy: tabC1, accuracy on the five other tasks."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.project.io import write_table
from helixclock.stages.accuracy.tables import other_tasks_accuracy_table

start(snakemake)
frames = {}
for path in snakemake.input:
    df = pd.read_csv(path)
    frames[str(df["task"].iloc[0])] = df
write_table(other_tasks_accuracy_table(snakemake.wildcards.model, frames, snakemake.params.prompts), *snakemake.output)

"""Rule tab_prompts_accuracy: tabA1, the a+b prompt and accuracy of every model."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.project import outputs
from helixclock.project.io import write_table
from helixclock.stages.accuracy.tables import prompts_accuracy_table

start(snakemake)
# every model results/all compares: this command's (the inputs) and those with finished results
frames = {m: pd.read_csv(outputs.accuracy("add", m)) for m in snakemake.params.models}
write_table(prompts_accuracy_table(frames, snakemake.params.templates), *snakemake.output)

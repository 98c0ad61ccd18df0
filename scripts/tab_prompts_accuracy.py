"""Rule tab_prompts_accuracy: tabA1, the a+b prompt and accuracy of every model."""

import pandas as pd

from helixclock import outputs
from helixclock.io import write_table
from helixclock.pipeline import start
from helixclock.stages.accuracy.tables import prompts_accuracy_table

start(snakemake)
# every model results/all compares: this command's (the inputs) and those with finished results
frames = {m: pd.read_csv(outputs.accuracy("add", m)) for m in snakemake.params.models}
write_table(prompts_accuracy_table(frames, snakemake.params.templates), *snakemake.output)

"""Rule tab_other_tasks: Table 1, max over layers of mean LD per task and fit."""
import pandas as pd

from helixclock.tables import other_tasks_fit_table
from helixclock.io import write_table
from helixclock.pipeline import start
from helixclock.tasks import TASKS

start(snakemake)
curves = pd.read_csv(snakemake.input[0])
write_table(other_tasks_fit_table(curves, {t: TASKS[t].label for t in TASKS}), *snakemake.output, floatfmt=".3f")

"""Rule tab_other_tasks: Table 1, max over layers of mean LD per task and fit (and Fig. C7's curves)."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.project.io import write_table
from helixclock.stages.helix.tables import tab_other_tasks

start(snakemake)
out = tab_other_tasks(pd.read_csv(snakemake.input[0]), resampling(snakemake))
out["curves"].to_csv(snakemake.output.curves, index=False)
write_table(out["table"], snakemake.output.table, snakemake.output.table_md, floatfmt=".3f")

"""Rule wrong_answers: App. F, the wrong answers, the carry test and the final logits (Figs. F1, F2, F5, F6)."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.project.io import write_table
from helixclock.stages.mistakes.wrong_answers import wrong_answers

start(snakemake)
p = snakemake.params
out = wrong_answers(pd.read_csv(snakemake.input.accuracy), snakemake.input.logits, p.several, p.seed)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
write_table(out["carry_test"], snakemake.output.table, snakemake.output.table_md)

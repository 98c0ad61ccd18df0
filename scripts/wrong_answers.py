"""Rule wrong_answers: App. F, the wrong answers, the carry test and the final logits (Figs. F1, F2, F5, F6)."""

import pandas as pd

from helixclock.io import write_table
from helixclock.pipeline import start
from helixclock.stages.mistakes.answer_scores import read_answer_scores
from helixclock.stages.mistakes.wrong_answers import model_errors, read_answer_logits

start(snakemake)
if snakemake.params.several:  # L(n) of a sample of prompts, and its control
    s = read_answer_scores(snakemake.input.logits)
    scores = {"logits": s["scores"], "rows": s["rows"], "control": s["control"]}
else:
    scores = {"logits": read_answer_logits(snakemake.input.logits)}
out = model_errors(pd.read_csv(snakemake.input.accuracy), seed=snakemake.params.seed, **scores)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
write_table(out["carry_test"], snakemake.output.table, snakemake.output.table_md)

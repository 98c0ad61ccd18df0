"""Rule cross_model_figures: accuracy of every model on the six tasks and Table 1's LD ratios,
with the tasks a model did not run marked."""

import pandas as pd

from helixclock.io import save_figure
from helixclock.pipeline import start
from helixclock.stages.report.compare import load_paper_values, paper_accuracy, paper_tab01
from helixclock.stages.report.figures import figAll_accuracy, figAll_ld_ratios

start(snakemake)
models, inp, out = snakemake.params.models, snakemake.input, snakemake.output
paper = load_paper_values(inp.values)
tabC1 = {m: pd.read_csv(p) for m, p in zip(models, inp.other_tasks)}
tab01 = {m: pd.read_csv(p) for m, p in zip(models, inp.tab01)}
left_out = {m: pd.read_csv(p) for m, p in zip(models, inp.left_out)}
accuracy = figAll_accuracy(pd.read_csv(inp.accuracy), tabC1, paper_accuracy(paper), left_out)
save_figure(accuracy, [out.accuracy, out.accuracy_pdf])
save_figure(figAll_ld_ratios(tab01, paper_tab01(paper), left_out), [out.ratios, out.ratios_pdf])

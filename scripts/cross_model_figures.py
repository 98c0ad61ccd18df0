"""Rule cross_model_figures: accuracy of every model on the six tasks and Table 1's LD ratios,
with the tasks a model did not run marked."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.project import outputs
from helixclock.project.io import save_figure
from helixclock.stages.report.compare import load_paper_values, paper_accuracy, paper_tab01
from helixclock.stages.report.figures import figAll_accuracy, figAll_ld_ratios

start(snakemake)
models, inp, out = snakemake.params.models, snakemake.input, snakemake.output
paper = load_paper_values(inp.values)
# every model results/all compares: this command's (the inputs) and those with finished results
tabC1 = {m: pd.read_csv(outputs.table("tabC1_other_tasks_accuracy", m)[0]) for m in models}
tab01 = {m: pd.read_csv(outputs.table("tab01_other_tasks", m)[0]) for m in models}
left_out = {m: pd.read_csv(outputs.OTHER_TASKS_LEFT_OUT.format(model=m)) for m in models}
accuracy = figAll_accuracy(pd.read_csv(inp.accuracy), tabC1, paper_accuracy(paper), left_out)
save_figure(accuracy, [out.accuracy, out.accuracy_pdf])
save_figure(figAll_ld_ratios(tab01, paper_tab01(paper), left_out), [out.ratios, out.ratios_pdf])

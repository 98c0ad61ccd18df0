"""Rule accuracy: every prompt of every task -> results/{model}/accuracy/{task}.csv, and the
logits of the answers 0..198 on a+b -> accuracy/add_logits.h5 (numbers of several tokens:
greedy decoding, and the logits file records why it holds none)."""

from helixclock.jobs.model_jobs import open_model
from helixclock.jobs.pipeline import start
from helixclock.stages.accuracy.sweep import ANSWER_NUMBERS, model_accuracy, save_answer_logits

log = start(snakemake)
spec = snakemake.params.spec
model, engine = open_model(snakemake)
for task, path, df, logits in model_accuracy(model, spec, snakemake.params.tasks, engine, snakemake.output.tables):
    df.to_csv(path, index=False)
    if task == "add":
        save_answer_logits(snakemake.output.logits, logits, df, ANSWER_NUMBERS, spec["prompts"]["add"])
    log.info("%s: accuracy %.4f over %d prompts", task, df["correct"].mean(), len(df))

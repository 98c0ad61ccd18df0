"""Rule accuracy: every prompt of every task -> results/{model}/accuracy/{task}.csv, and the
logits of the answers 0..198 on a+b -> accuracy/add_logits.h5."""

from helixclock.pipeline import load, patching_engine, start
from helixclock.stages.accuracy.sweep import ANSWER_NUMBERS, save_answer_logits, task_accuracy
from helixclock.tasks import check_all_tasks, get_task

log = start(snakemake)
prompts = snakemake.params.spec["prompts"]
model = load(snakemake)
check_all_tasks(model.tokenizer, model.name, prompts, snakemake.params.tasks)
engine = patching_engine(snakemake, model)
for task, path in zip(snakemake.params.tasks, snakemake.output.tables):
    keep = ANSWER_NUMBERS if task == "add" else None
    df, logits = task_accuracy(model, get_task(task), prompts[task], engine, keep=keep)
    df.to_csv(path, index=False)
    if logits is not None:
        ids = df.drop_duplicates("answer").set_index("answer").loc[ANSWER_NUMBERS, "answer_token"].to_numpy()
        save_answer_logits(snakemake.output.logits, logits, ANSWER_NUMBERS, ids, prompts[task])
    log.info("%s: accuracy %.4f over %d prompts", task, df["correct"].mean(), len(df))

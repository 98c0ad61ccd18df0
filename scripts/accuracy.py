"""Rule accuracy: every prompt of every task -> results/{model}/accuracy/{task}.csv."""
from helixclock.accuracy import check_all_tasks, task_accuracy
from helixclock.pipeline import engine, load, start
from helixclock.tasks import get_task

log = start(snakemake)
prompts = snakemake.params.spec["prompts"]
model = load(snakemake)
check_all_tasks(model.tokenizer, model.name, prompts, snakemake.params.tasks)
runner = engine(snakemake, model)
for task, path in zip(snakemake.params.tasks, snakemake.output):
    df = task_accuracy(model, get_task(task), prompts[task], runner)
    df.to_csv(path, index=False)
    log.info("%s: accuracy %.4f over %d prompts", task, df["correct"].mean(), len(df))

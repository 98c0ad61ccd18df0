"""Rule head_patching: Figs. D2-D7, attention heads at the last token (per-pair tables); answers
of several tokens also at the answer positions."""

from helixclock.jobs.model_jobs import clock_job, selection
from helixclock.jobs.pipeline import settings
from helixclock.stages.heads.jobs import head_patching
from helixclock.stages.heads.patching import HeadSettings

p = snakemake.params
job = clock_job(snakemake, p.heads["periods"], p.fit_prompts)
heads = settings(snakemake, "heads", HeadSettings)
select = job.selection_pairs(selection(snakemake))
out = head_patching(job.engine, job.pairs, job.fit_rows, job.template, heads, select)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
job.log.info("head categories:\n%s", out["categories"].to_string())

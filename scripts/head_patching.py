"""Rule head_patching: Figs. D2-D7, attention heads at the last token (per-pair tables); answers
of several tokens also at the answer positions."""

from helixclock.model_jobs import clock_job
from helixclock.pipeline import settings
from helixclock.stages.heads.patching import HeadSettings, head_patching
from helixclock.stages.heads.readings import head_patching_readings

p = snakemake.params
job = clock_job(snakemake, p.heads["periods"], p.fit_prompts)
heads = settings(snakemake, "heads", HeadSettings)
if job.pairs.scoring == "logprob":  # answers of several tokens: two readings
    out = head_patching_readings(job.engine, job.pairs, job.fit_rows, job.template, heads)
else:
    out = head_patching(job.engine, job.pairs, job.fit_ids, job.fit_a, job.fit_b, job.positions, heads)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
job.log.info("head categories:\n%s", out["categories"].to_string())

"""Rule head_patching: Figs. D2-D7, attention heads at the last token (per-pair tables)."""

from helixclock.model_jobs import clock_job
from helixclock.pipeline import settings
from helixclock.stages.heads.patching import HeadSettings, head_patching

p = snakemake.params
job = clock_job(snakemake, p.heads["periods"], p.fit_prompts)
heads = settings(snakemake, "heads", HeadSettings)
out = head_patching(job.engine, job.pairs, job.fit_ids, job.fit_a, job.fit_b, job.positions, heads)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
job.log.info("head categories:\n%s", out["categories"].to_string())

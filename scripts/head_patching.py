"""Rule head_patching: Figs. D2-D7, attention heads at the last token (per-pair tables)."""

from helixclock.pipeline import clock_job, settings
from helixclock.stages.heads.patching import HeadSettings, head_stage

job = clock_job(snakemake)
out = head_stage(
    job.engine, job.pairs, job.fit_ids, job.fit_a, job.fit_b, job.positions, settings(snakemake, "heads", HeadSettings)
)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
job.log.info("head categories:\n%s", out["categories"].to_string())

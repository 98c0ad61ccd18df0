"""Rule head_patching: Figs. D2-D7, attention heads at the last token."""
from helixclock.heads import head_stage
from helixclock.pipeline import clock_job

p = snakemake.params
log, runner, pairs, ids, a, b, positions = clock_job(snakemake)
out = head_stage(runner, pairs, ids, a, b, positions, p.top_heads, p.head_threshold, p.periods, p.n_components,
                 p.bootstrap, p.seed)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("head categories:\n%s", out["categories"].to_string())

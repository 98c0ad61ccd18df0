"""Rule mlp_patching: Fig. 6 layer effects, Fig. D8 top-k MLPs, Fig. 7 MLP stages."""
from helixclock.mlps import mlp_stage
from helixclock.pipeline import clock_job

p = snakemake.params
log, runner, pairs, ids, a, b, positions = clock_job(snakemake)
out = mlp_stage(runner, pairs, ids, a, b, positions["last"], p.mlp_threshold, p.periods, p.n_components,
                p.bootstrap, p.seed)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("circuit MLPs:\n%s", out["mlp_stages"].to_string())

"""Rule mlp_summary: Fig. D8's curve and the circuit MLPs of Fig. 7, for the configured threshold."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.stages.mlps.tables import mlp_summary

log = start(snakemake)
out = mlp_summary(
    pd.read_csv(snakemake.input.topk),
    pd.read_csv(snakemake.input.fits),
    pd.read_csv(snakemake.input.effects),
    snakemake.params.threshold,
    resampling(snakemake),
    pd.read_csv(snakemake.input.selection),
    pd.read_csv(snakemake.input.pairs),
)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("circuit MLPs:\n%s", out["mlp_stages"].to_string())

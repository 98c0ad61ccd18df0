"""Rule fig_mlp_topk."""
from helixclock.pipeline import figure
from helixclock.plots import mlp_topk

figure(snakemake, mlp_topk)

"""Rule fig_head_topk."""
from helixclock.pipeline import figure
from helixclock.plots import head_topk

figure(snakemake, head_topk)

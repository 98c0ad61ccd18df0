"""Rule fig_mlp_stages."""
from helixclock.pipeline import figure
from helixclock.plots import mlp_stages

figure(snakemake, mlp_stages)

"""Rule fig_head_helix_fit."""
from helixclock.pipeline import figure
from helixclock.plots import head_helix_fit

figure(snakemake, head_helix_fit)

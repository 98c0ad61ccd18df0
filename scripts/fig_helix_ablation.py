"""Rule fig_helix_ablation."""
from helixclock.pipeline import figure
from helixclock.plots import helix_ablation

figure(snakemake, helix_ablation)

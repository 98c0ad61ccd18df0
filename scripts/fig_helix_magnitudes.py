"""Rule fig_helix_magnitudes."""
from helixclock.pipeline import figure
from helixclock.plots import helix_magnitudes

figure(snakemake, helix_magnitudes)

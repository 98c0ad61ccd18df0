"""Rule fig_helix_controls."""
from helixclock.pipeline import figure
from helixclock.plots import helix_controls

figure(snakemake, helix_controls)

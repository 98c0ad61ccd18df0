"""Rule fig_helix_patching."""
from helixclock.pipeline import figure
from helixclock.plots import helix_patching

figure(snakemake, helix_patching)

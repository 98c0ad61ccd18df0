"""Rule fig_helix_cosine."""
from helixclock.pipeline import figure
from helixclock.plots import helix_cosine

figure(snakemake, helix_cosine)

"""Rule fig_helix_projection."""
from helixclock.pipeline import figure
from helixclock.plots import helix_projection

figure(snakemake, helix_projection, periods=snakemake.params.periods)

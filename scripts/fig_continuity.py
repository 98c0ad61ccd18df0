"""Rule fig_continuity."""
from helixclock.pipeline import figure
from helixclock.plots import continuity

figure(snakemake, continuity)

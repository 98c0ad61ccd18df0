"""Rule fig_mixed_heads."""
from helixclock.pipeline import figure
from helixclock.plots import mixed_heads

figure(snakemake, mixed_heads)

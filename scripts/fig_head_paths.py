"""Rule fig_head_paths."""
from helixclock.pipeline import figure
from helixclock.plots import head_paths

figure(snakemake, head_paths)

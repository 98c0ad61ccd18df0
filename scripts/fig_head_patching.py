"""Rule fig_head_patching."""
from helixclock.pipeline import figure
from helixclock.plots import head_patching

figure(snakemake, head_patching)

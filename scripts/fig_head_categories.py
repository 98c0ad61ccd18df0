"""Rule fig_head_categories."""
from helixclock.pipeline import figure
from helixclock.plots import head_categories

figure(snakemake, head_categories)

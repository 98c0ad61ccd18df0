"""Rule fig_pc1_360: Fig. B4."""
from helixclock.pipeline import figure
from helixclock.plots import pc1_all

figure(snakemake, pc1_all, layer=snakemake.params.layer)

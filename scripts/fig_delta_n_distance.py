"""Rule fig_delta_n_distance: Fig. B3."""
from helixclock.pipeline import figure
from helixclock.plots import delta_n_distance_plot

figure(snakemake, delta_n_distance_plot, layer=snakemake.params.layer)

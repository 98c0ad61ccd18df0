"""Rule fig_accuracy_heatmap: Fig. A1, correctness over the (a, b) grid."""
from helixclock.pipeline import figure
from helixclock.plots import accuracy_heatmap

figure(snakemake, accuracy_heatmap)

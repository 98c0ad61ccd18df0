"""Rule fig_layer_patching."""
from helixclock.pipeline import figure
from helixclock.plots import layer_patching

figure(snakemake, layer_patching)

"""Rule fig_accuracy_heatmap: figA1, correctness over the (a, b) grid."""
import pandas as pd

from helixclock.io import save_figure
from helixclock.pipeline import start
from helixclock.plots import accuracy_heatmap

start(snakemake)
save_figure(accuracy_heatmap(pd.read_csv(snakemake.input[0]), snakemake.wildcards.model),
            snakemake.output)

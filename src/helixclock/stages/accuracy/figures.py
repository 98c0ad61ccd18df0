"""Fig. A1: correctness over the (a, b) grid."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from ...plotting.style import heatmap
from .tables import accuracy_grid


def figA1_accuracy_heatmap(df: pd.DataFrame, model: str):
    """figA1: correct (1) / wrong (0) over the 100 x 100 grid of a+b."""
    grid = accuracy_grid(df)
    fig, ax = plt.subplots(figsize=(5.4, 4.6))
    heatmap(ax, grid, ListedColormap(["#d62728", "#2ca02c"]), "", vmin=0, vmax=1, xlabel="b", ylabel="a", ticks=10)
    fig.axes[-1].remove()  # two colours need a legend, not a colour bar
    ax.set_title(f"{model}: a+b accuracy {np.nanmean(grid):.2%}")
    ax.legend(
        handles=[Patch(color="#2ca02c", label="correct"), Patch(color="#d62728", label="wrong")],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    return fig

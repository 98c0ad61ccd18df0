"""Figures of the paper, drawn from saved tables (never from the model)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .accuracy import accuracy_grid  # noqa: E402

plt.rcParams.update({"figure.dpi": 100, "axes.spines.top": False, "axes.spines.right": False,
                     "font.size": 10})


def accuracy_heatmap(df: pd.DataFrame, model: str):
    """figA1: correct (1) / wrong (0) over the 100 x 100 grid of a+b."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    grid = accuracy_grid(df)
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    ax.imshow(grid, origin="lower", cmap=ListedColormap(["#d62728", "#2ca02c"]), vmin=0, vmax=1,
              interpolation="nearest", aspect="equal")
    ax.set_xlabel("b")
    ax.set_ylabel("a")
    ax.set_title(f"{model}: a+b accuracy {np.nanmean(grid):.2%}")
    ax.legend(handles=[Patch(color="#2ca02c", label="correct"), Patch(color="#d62728", label="wrong")],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig

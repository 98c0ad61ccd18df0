"""The shared look of the figures of the errors and report stages (seaborn, no torch).

One theme, one palette and a few helpers, so that every figure says who made it (the model),
what was measured and what the paper reported, the same way.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

PALETTE = {"model": "#1f77b4", "linear addition": "#d62728", "paper": "#7f7f7f", "a": "#1f77b4",
           "b": "#ff7f0e", "a+b": "#2ca02c", "highlight": "#d62728", "other": "#9ecae1"}
PAPER_COLOR = PALETTE["paper"]


def use_look() -> None:
    """seaborn's "ticks" theme at paper size, without top and right spines."""
    sns.set_theme(context="paper", style="ticks", font_scale=1.15,
                  rc={"axes.spines.top": False, "axes.spines.right": False, "figure.dpi": 100,
                      "legend.frameon": False, "savefig.bbox": "tight"})


def figure(*args, **kwargs):
    """plt.subplots under the shared look."""
    use_look()
    return plt.subplots(*args, **kwargs)


def paper_note(ax, text: str, loc: str = "lower right") -> None:
    """A small grey note of what the paper reported, in a corner of the axes."""
    x, ha = (0.98, "right") if "right" in loc else (0.02, "left")
    y, va = (0.03, "bottom") if "lower" in loc else (0.97, "top")
    ax.text(x, y, text, transform=ax.transAxes, ha=ha, va=va, fontsize=8, color=PAPER_COLOR)


def percent_axis(ax, axis: str = "y") -> None:
    from matplotlib.ticker import PercentFormatter

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(PercentFormatter(1.0))

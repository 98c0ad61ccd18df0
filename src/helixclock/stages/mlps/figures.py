"""Fig. D8 (top-k MLPs) and Fig. 7 (circuit MLPs build or read out a+b); answers of several
tokens: a panel per reading (the last prompt token, the answer positions)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...style import WHERE, by_reading, legend_outside, suptitle, topk_figure, topk_panel, with_pairs
from ...style import title as set_title


def figD8_mlp_topk(topk: pd.DataFrame, model: str):
    """Fig. D8: top-k MLPs by TE patched together (each point names the MLP it adds)."""
    readings = by_reading(topk)
    if len(readings) == 1:
        return topk_figure(topk, model, "MLPs", annotate=True)
    fig, axes = plt.subplots(1, len(readings), figsize=(6.5 * len(readings), 3.8), sharey=True, squeeze=False)
    for ax, (reading, part) in zip(axes[0], readings):
        topk_panel(ax, part, "MLPs", annotate=True)
        ax.set_title(f"{WHERE[reading]} ({len(part) - 1} MLPs)")
    suptitle(fig, with_pairs(f"{model}: top-k MLPs", topk))
    return fig


def fig07_mlp_stages(stages: pd.DataFrame, model: str):
    """Fig. 7: per circuit MLP, helix(a+b)/TE and DE/TE."""
    readings = by_reading(stages)
    fig, axes = plt.subplots(1, len(readings), figsize=(6.5 * len(readings), 3.8), squeeze=False)
    for ax, (reading, part) in zip(axes[0], readings):
        _stages_panel(ax, part)
        if len(readings) > 1:
            ax.set_title(f"circuit MLPs {WHERE[reading]}")
    title = with_pairs(f"{model}: circuit MLPs build (helix) or read out (DE) a+b", stages)
    if len(readings) == 1:
        set_title(axes[0, 0], title)
    else:
        suptitle(fig, title)
    return fig


def _stages_panel(ax, stages: pd.DataFrame) -> None:
    long = pd.concat(
        [
            pd.DataFrame({"MLP": [f"MLP{l}" for l in stages["layer"]], "fraction": stages[col], "measure": label})
            for col, label in (("helix_sum_over_te", "helix(a+b) / TE"), ("de_over_te", "DE / TE"))
        ]
    )
    sns.lineplot(
        data=long,
        x="MLP",
        y="fraction",
        hue="measure",
        style="measure",
        markers=True,
        dashes=False,
        palette=["C2", "C1"],
        ax=ax,
        sort=False,
    )
    ax.set_xlabel("circuit MLP")
    ax.set_ylabel("fraction of total effect")
    ax.axhline(0, color="grey", lw=0.6)
    legend_outside(ax, title=None)

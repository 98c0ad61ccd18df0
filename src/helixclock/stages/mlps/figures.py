"""Fig. D8 (top-k MLPs) and Fig. 7 (circuit MLPs build or read out a+b); answers of several
tokens: a panel per reading (the last prompt token, the answer positions)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...plotting.figure_layout import category_ticks, panels_width, shared_legend, suptitle
from ...plotting.style import WHERE, by_reading, sns, topk_figure, topk_panel, with_pairs


def figD8_mlp_topk(topk: pd.DataFrame, model: str):
    """Fig. D8: top-k MLPs by TE patched together (each point names the MLP it adds), one legend
    under the panels."""
    readings = by_reading(topk)
    if len(readings) == 1:
        return topk_figure(topk, model, "MLPs", annotate=True)
    fig, axes = plt.subplots(1, len(readings), figsize=(6.5 * len(readings), 4.6), sharey=True, squeeze=False)
    for ax, (reading, part) in zip(axes[0], readings):
        topk_panel(ax, part, "MLPs", annotate=True, heading=f"{WHERE[reading]} ({len(part) - 1} MLPs)")
    shared_legend(fig, axes[0])
    suptitle(fig, with_pairs(f"{model}: top-k MLPs", topk))
    return fig


def fig07_mlp_stages(stages: pd.DataFrame, model: str):
    """Fig. 7: per circuit MLP, helix(a+b)/TE and DE/TE (a panel per reading, one legend under
    them)."""
    readings = by_reading(stages)
    fig, axes = plt.subplots(
        1, len(readings), figsize=(panels_width(len(readings), 5.0), 4.4), sharey=True, squeeze=False
    )
    for ax, (reading, part) in zip(axes[0], readings):
        _stages_panel(ax, part)
        if len(readings) > 1:
            ax.set_title(f"circuit MLPs {WHERE[reading]}")
    shared_legend(fig, axes[0])
    suptitle(fig, with_pairs(f"{model}: circuit MLPs build (helix) or read out (DE) a+b", stages))
    return fig


def _stages_panel(ax, stages: pd.DataFrame) -> None:
    names = [f"MLP{l}" for l in stages["layer"]]
    for col, label, color, marker in (
        ("helix_sum_over_te", "helix(a+b) / TE", "C2", "o"),
        ("de_over_te", "DE / TE", "C1", "X"),
    ):
        sns.lineplot(x=np.arange(len(names)), y=stages[col].to_numpy(), ax=ax, marker=marker, color=color, label=label)
    category_ticks(ax, range(len(names)), names)
    ax.set_xlabel("circuit MLP")
    ax.set_ylabel("fraction of total effect")
    ax.axhline(0, color="grey", lw=0.6)

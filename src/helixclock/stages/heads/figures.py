"""Figs. D2-D7: attention heads."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.patches import Patch

from ...style import CATEGORY_COLOR, empty, fraction_curve, heatmap, topk_figure, with_pairs


def head_grid(df: pd.DataFrame, col: str) -> np.ndarray:
    """A [layers, heads] grid of one column."""
    L, H = int(df["layer"].max()) + 1, int(df["head"].max()) + 1
    grid = np.full((L, H), np.nan)
    grid[df["layer"].to_numpy(), df["head"].to_numpy()] = df[col].to_numpy()
    return grid


def figD2_head_patching(effects: pd.DataFrame, model: str):
    """Fig. D2: total (and direct) effect of every head at the last token."""
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.4))
    for ax, col, title in zip(axes, ("te", "de"), ("total effect", "direct effect")):
        grid = head_grid(effects, col)
        lim = float(np.nanmax(np.abs(grid))) or 1.0
        heatmap(ax, grid, "RdBu_r", "logit difference", center=0, vmin=-lim, vmax=lim, xlabel="head", ylabel="layer")
        ax.set_title(title)
    fig.suptitle(with_pairs(f"{model}: attention heads patched at the last token", effects))
    fig.tight_layout()
    return fig


def figD3_head_topk(topk: pd.DataFrame, model: str):
    """Fig. D3: top-k heads by TE patched together."""
    return topk_figure(topk, model, "heads")


def figD4_head_helix_fit(effects: pd.DataFrame, model: str):
    """Fig. D4: fraction of each head's TE kept by its helix(a,b,a+b) fit."""
    fig, ax = plt.subplots(figsize=(6, 4.6))
    weak = effects["te"].abs() < 0.05 * effects["te"].abs().max()  # ratios of negligible effects are noise
    df = effects.assign(fraction=np.where(weak, np.nan, effects["fit_all"] / effects["te"]))
    heatmap(
        ax,
        head_grid(df, "fraction"),
        "viridis",
        "helix(a,b,a+b) fit LD / TE",
        vmin=0,
        vmax=1,
        xlabel="head",
        ylabel="layer",
    )
    ax.set_title(
        with_pairs(f"{model}: heads modelled by helix(a,b,a+b)", effects) + "\n(blank: TE below 5% of the largest)"
    )
    return fig


def figD5_mixed_heads(mixed: pd.DataFrame, model: str):
    """Fig. D5: effect of the categorised top heads vs the number of mixed heads, with the m
    used for the categories (config clock.mixed_heads, the authors' 4) and the smallest m
    reaching the threshold."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    thr = float(mixed["threshold"].iloc[0])
    fraction_curve(ax, mixed, "m", thr, "m (least confident heads allowed to be mixed)")
    used, smallest = int(mixed["m_used"].iloc[0]), int(mixed["smallest_m"].iloc[0])
    at = mixed.loc[mixed["m"] == used, "fraction"]
    ax.axvline(
        used, color="C2", ls="--", lw=1, label=f"m = {used} used" + (f": {float(at.iloc[0]):.0%}" if len(at) else "")
    )
    ax.axvline(smallest, color="C3", ls=":", lw=1, label=f"smallest m for {thr:.0%}: {smallest}")
    ax.set_ylabel("fraction of patching the top heads' actual outputs")
    ax.legend(fontsize=8)
    ax.set_title(
        with_pairs(
            f"{model}: a,b heads as helix(a,b) (indirect only), a+b heads as helix(a+b) to the\n"
            "logits, mixed heads as helix(a,b,a+b) (paper: m = 4 → ~80%, m = 0 → ~70%)",
            mixed,
        ),
        fontsize=9,
    )
    return fig


def figD6_head_categories(props: pd.DataFrame, model: str):
    """Fig. D6: per category, the heads' layers and where they attend from the last token."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    order = [c for c in CATEGORY_COLOR if c in set(props["category"])]
    kw = dict(data=props, x="category", order=order, hue="category", palette=CATEGORY_COLOR, size=7, legend=False)
    sns.stripplot(y="layer", ax=axes[0], **kw)
    sns.stripplot(y="attn_last", ax=axes[1], **kw)
    for cat in order:
        part = props[props["category"] == cat]
        axes[2].scatter(part["attn_a"], part["attn_b"], color=CATEGORY_COLOR[cat], s=30, label=f"{cat} ({len(part)})")
    axes[0].set_ylabel("layer")
    axes[1].set_ylabel("attention to the last token")
    for ax in axes[:2]:
        ax.set_xlabel("")
        ax.set_xticks(range(len(order)), [f"{c} heads" for c in order])
    axes[2].set_xlabel("attention to the a token")
    axes[2].set_ylabel("attention to the b token")
    axes[2].legend()
    fig.suptitle(f"{model}: properties of the top heads by category")
    fig.tight_layout()
    return fig


def figD7_head_paths(paths: pd.DataFrame, model: str):
    """Fig. D7: heads as senders (effect through each downstream component) and as
    receivers (dependence on each upstream component)."""
    groups = list(dict.fromkeys(zip(paths["analysis"], paths["role"], paths["head"])))
    if not groups:
        return empty("no heads in the categories with paths")
    width = max(7, 0.25 * paths.groupby("head").size().max())
    fig, axes = plt.subplots(len(groups), 1, figsize=(width, 2.8 * len(groups)), squeeze=False)
    for ax, (analysis, role, head) in zip(axes[:, 0], groups):
        part = paths[(paths["analysis"] == analysis) & (paths["head"] == head) & (paths["role"] == role)]
        part = part.sort_values(["other_layer", "other_kind"])
        sns.barplot(
            x=np.arange(len(part)),
            y=part["ld_mean"].to_numpy(),
            hue=part["other_kind"].to_numpy(),
            palette={"MLP": "C1", "head": "C0"},
            dodge=False,
            ax=ax,
            legend=False,
        )
        step = max(1, len(part) // 40)
        ax.set_xticks(range(0, len(part), step), part["other"].iloc[::step], rotation=90, fontsize=7)
        verb = "sends through" if analysis == "sender" else "receives from"
        ax.set_title(f"{role} {head} as {analysis}: effect of the path it {verb} each component", fontsize=9)
        ax.set_ylabel("logit difference")
        ax.axhline(0, color="grey", lw=0.6)
    axes[0, 0].legend(handles=[Patch(color="C1", label="MLP"), Patch(color="C0", label="head")])
    fig.suptitle(with_pairs(f"{model}: path patching of heads", paths))
    fig.tight_layout()
    return fig

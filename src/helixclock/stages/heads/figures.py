"""Figs. D2-D7: attention heads."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ...plotting.figure_layout import empty, shared_legend, suptitle, thin_ticks
from ...plotting.figure_layout import title as set_title
from ...plotting.style import (
    CATEGORY_COLOR,
    WHERE,
    by_reading,
    fraction_curve,
    heatmap,
    mark_unmeasured,
    smallest_mark,
    sns,
    topk_figure,
    topk_panel,
    with_pairs,
)


def head_grid(df: pd.DataFrame, col: str, shape: tuple[int, int] | None = None) -> np.ndarray:
    """A [layers, heads] grid of one column (``shape``: the model's, default the table's extent);
    NaN where the table has no row."""
    L, H = shape or (int(df["layer"].max()) + 1, int(df["head"].max()) + 1)
    grid = np.full((L, H), np.nan)
    grid[df["layer"].to_numpy(), df["head"].to_numpy()] = df[col].to_numpy()
    return grid


def _screen_and_model(screen, model):
    """(screen, model) of a heads figure called with or without the raw screen table (the rule
    passes raw/screen.csv after the effects: every head of the model, ``screened`` or not)."""
    return (None, screen) if model is None else (screen, model)


def _shape(effects: pd.DataFrame, screen: pd.DataFrame | None) -> tuple[int, int]:
    """The model's [layers, heads]: the screen's (every head) or, without it, the effects'."""
    heads = effects if screen is None else screen
    return int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1


def ld_label(table: pd.DataFrame) -> str:
    """What LD is in a summary table: the log-likelihood ratio where it has LD's terms (answers of
    several tokens), the paper's logit difference otherwise."""
    several = "term" in table or table.attrs.get("ld") == "log-likelihood ratio"
    return "LD (log-likelihood ratio)" if several else "logit difference"


def figD2_head_patching(effects: pd.DataFrame, screen: pd.DataFrame | None, model: str | None = None):
    """Fig. D2: total (and direct) effect of every head at the last token (answers of several
    tokens: a row of panels per reading).  With the raw ``screen`` (every head of the model), the
    heads the attribution screen left out (config ``clock.head_screen``) are hatched grey, "not
    patched", never white, the colour of no effect.  Called as ``(effects, model)``, the heads of
    the effects table are the model's."""
    screen, model = _screen_and_model(screen, model)
    shape = _shape(effects, screen)
    readings = by_reading(effects)
    fig, axes = plt.subplots(len(readings), 2, figsize=(10.5, 4.4 * len(readings)), squeeze=False)
    unmeasured = None
    for row, (reading, part) in zip(axes, readings):
        for ax, col, title in zip(row, ("te", "de"), ("total effect", "direct effect")):
            grid = head_grid(part, col, shape)
            lim = float(np.nanmax(np.abs(grid))) or 1.0
            heatmap(ax, grid, "RdBu_r", ld_label(part), center=0, vmin=-lim, vmax=lim, xlabel="head", ylabel="layer")
            if np.isnan(grid).any():
                unmeasured = mark_unmeasured(ax, shape)
            ax.set_title(f"{title} {WHERE[reading]}" if len(readings) > 1 else title)
    where = WHERE[readings[0][0]] if len(readings) == 1 else f"({len(readings[0][1])} heads a reading)"
    title = with_pairs(f"{model}: attention heads patched {where}", effects)
    if unmeasured is not None:
        n = len(readings[0][1])
        unmeasured.set_label(
            f"not patched: outside the attribution screen ({n} of {shape[0] * shape[1]} heads patched)"
        )
        fig.legend(handles=[unmeasured], loc="outside lower center", fontsize=8)
    suptitle(fig, title)
    return fig


def figD3_head_topk(topk: pd.DataFrame, model: str):
    """Fig. D3: top-k heads by TE patched together (a panel per reading)."""
    readings = by_reading(topk)
    if len(readings) == 1:
        return topk_figure(topk, model, "heads")
    fig, axes = plt.subplots(1, len(readings), figsize=(6.0 * len(readings), 4.2), sharey=True, squeeze=False)
    for ax, (reading, part) in zip(axes[0], readings):
        topk_panel(ax, part, "heads", heading=f"{WHERE[reading]} ({len(part) - 1} heads)")
    shared_legend(fig, axes[0])
    suptitle(fig, with_pairs(f"{model}: top-k heads", topk))
    return fig


def figD4_head_helix_fit(effects: pd.DataFrame, screen: pd.DataFrame | None, model: str | None = None):
    """Fig. D4: fraction of each head's TE kept by its helix(a,b,a+b) fit (a panel per reading);
    white where the TE is below 5% of the largest (a ratio of noise), hatched grey where the
    head was never patched (outside the attribution screen, as in Fig. D2)."""
    screen, model = _screen_and_model(screen, model)
    shape = _shape(effects, screen)
    readings = by_reading(effects)
    fig, axes = plt.subplots(1, len(readings), figsize=(6 * len(readings), 4.6), squeeze=False)
    handles = [Patch(facecolor="white", edgecolor="0.6", lw=0.5, label="TE below 5% of the largest")]
    for ax, (reading, part) in zip(axes[0], readings):
        weak = part["te"].abs() < 0.05 * part["te"].abs().max()  # ratios of negligible effects are noise
        df = part.assign(fraction=np.where(weak, np.nan, part["fit_all"] / part["te"]))
        grid = head_grid(df, "fraction", shape)
        heatmap(ax, grid, "viridis", "helix(a,b,a+b) fit LD / TE", vmin=0, vmax=1, xlabel="head", ylabel="layer")
        patched = head_grid(part, "te", shape)
        if np.isnan(patched).any():  # white over the hatching where the head was patched
            ax.pcolormesh(np.where(np.isnan(patched), np.nan, 1.0), cmap="gray", vmin=0, vmax=1, zorder=0.7)
            handle = mark_unmeasured(ax, shape)
            handle.set_label("not patched (outside the attribution screen)")
            handles = handles[:1] + [handle]
        ax.set_title(WHERE[reading] if len(readings) > 1 else "")
    fig.legend(handles=handles, loc="outside lower center", fontsize=8, ncols=len(handles))
    suptitle(fig, with_pairs(f"{model}: heads modelled by helix(a,b,a+b)", effects))
    return fig


def figD5_mixed_heads(mixed: pd.DataFrame, model: str):
    """Fig. D5: effect of the categorised top heads vs the number of mixed heads, with the m
    used for the categories (config clock.mixed_heads, the authors' 4) and the smallest m
    reaching the threshold (a panel per reading)."""
    readings = by_reading(mixed)
    fig, axes = plt.subplots(1, len(readings), figsize=(6.0 * len(readings), 4.4), sharey=True, squeeze=False)
    for ax, (reading, part) in zip(axes[0], readings):
        thr = float(part["threshold"].iloc[0])
        fraction_curve(ax, part, "m", thr, "m (least confident heads allowed to be mixed)")
        used = int(part["m_used"].iloc[0])
        at = part.loc[part["m"] == used, "fraction"]
        ax.axvline(used, color="C2", ls="--", lw=1, label="m used (config clock.mixed_heads)")
        note = smallest_mark(ax, part, "m", "fraction", thr, int(part["smallest_m"].iloc[0]), "m")
        note = f"m = {used} used" + (f": {float(at.iloc[0]):.0%}" if len(at) else "") + f"; {note}"
        ax.set_ylabel("fraction of the top heads' effect")
        set_title(ax, f"{WHERE[reading]}\n{note}" if len(readings) > 1 else note, fontsize=9)
    shared_legend(fig, axes[0])
    suptitle(
        fig,
        with_pairs(
            f"{model}: the top heads patched as a,b heads = helix(a,b) (indirect only), a+b heads = "
            "helix(a+b) (to the logits), mixed heads = helix(a,b,a+b), against patching their actual "
            "outputs (paper: m = 4 → ~80%, m = 0 → ~70%)",
            mixed,
        ),
        fontsize=10,
    )
    return fig


def figD6_head_categories(props: pd.DataFrame, model: str):
    """Fig. D6: per category, the heads' layers and where they attend from the last token
    (answers of several tokens: a row per reading, the answer positions' mean attention, and a
    fourth panel with the attention to a's and b's units and tens digits, where some number has a
    tens digit of its own: never for the paper's models, whose numbers are one token each)."""
    readings = by_reading(props)
    digits = bool(props[["attn_a_tens", "attn_b_tens"]].notna().to_numpy().any())
    ncols = 4 if digits else 3
    fig, axes = plt.subplots(len(readings), ncols, figsize=(4.0 * ncols, 3.6 * len(readings)), squeeze=False)
    for row, (reading, part) in zip(axes, readings):
        _categories_row(row, part, digits)
        if len(readings) > 1:
            row[0].set_title(f"from {'the last token' if reading == 'last token' else 'the answer positions'}")
    order = [c for c in CATEGORY_COLOR if c in set(props["category"])]
    counts = {r: part["category"].value_counts() for r, part in readings}
    handles = [
        Line2D([], [], ls="none", marker="o", color=CATEGORY_COLOR[c], label=_category_label(c, counts)) for c in order
    ]
    shared_legend(fig, axes.ravel(), handles=handles)
    suptitle(fig, f"{model}: properties of the top heads by category")
    return fig


def _category_label(category: str, counts: dict) -> str:
    """A category's legend entry with its number of heads ("a,b heads (5)"; per reading where
    they differ)."""
    n = {int(c.get(category, 0)) for c in counts.values()}
    if len(n) == 1:
        return f"{category} heads ({n.pop()})"
    return f"{category} heads (" + ", ".join(f"{int(c.get(category, 0))} {WHERE[r]}" for r, c in counts.items()) + ")"


def _categories_row(axes, props: pd.DataFrame, digits: bool) -> None:
    """The strip panels' jitter comes from numpy's global generator (seaborn's stripplot has no
    seed): seeded here, so the figure's file is the same on every run, and the caller's state is
    given back afterwards."""
    state = np.random.get_state()
    np.random.seed(0)
    try:
        _strips(axes, props, digits)
    finally:
        np.random.set_state(state)


def _strips(axes, props: pd.DataFrame, digits: bool) -> None:
    order = [c for c in CATEGORY_COLOR if c in set(props["category"])]
    kw = dict(data=props, x="category", order=order, hue="category", palette=CATEGORY_COLOR, size=7, legend=False)
    sns.stripplot(y="layer", ax=axes[0], **kw)
    sns.stripplot(y="attn_last", ax=axes[1], **kw)
    for cat in order:
        part = props[props["category"] == cat]
        axes[2].scatter(part["attn_a"], part["attn_b"], color=CATEGORY_COLOR[cat], s=30)
    axes[0].set_ylabel("layer")
    thin_ticks(axes[0], "y")
    axes[1].set_ylabel("attention to the last token")
    for ax in axes[:2]:
        ax.set_xlabel("")
        ax.set_xticks(range(len(order)), [f"{c} heads" for c in order])
    span = " (all its tokens)" if digits else " token"
    axes[2].set_xlabel(f"attention to a{span}")
    axes[2].set_ylabel(f"attention to b{span}")
    if digits:
        keys = ["attn_a_units", "attn_a_tens", "attn_b_units", "attn_b_tens"]
        long = props.melt(id_vars=["category"], value_vars=keys, var_name="key", value_name="attention")
        long["key"] = long["key"].str.replace("attn_", "").str.replace("_", " ")
        sns.stripplot(
            data=long,
            x="key",
            y="attention",
            hue="category",
            hue_order=order,
            palette=CATEGORY_COLOR,
            ax=axes[3],
            size=5,
            legend=False,
        )
        axes[3].set_xlabel("")
        axes[3].set_ylabel("attention to the digit")
        axes[3].tick_params(axis="x", labelsize=8)


def figD7_head_paths(paths: pd.DataFrame, model: str):
    """Fig. D7: heads as senders (effect through each downstream component) and as
    receivers (dependence on each upstream component)."""
    groups = list(dict.fromkeys(zip(paths["reading"], paths["analysis"], paths["role"], paths["head"])))
    if not groups:
        return empty("no heads in the categories with paths")
    width = max(7, 0.25 * paths.groupby(["reading", "head"]).size().max())
    fig, axes = plt.subplots(len(groups), 1, figsize=(width, 2.8 * len(groups)), squeeze=False)
    for ax, (reading, analysis, role, head) in zip(axes[:, 0], groups):
        part = paths[
            (paths["reading"] == reading)
            & (paths["analysis"] == analysis)
            & (paths["head"] == head)
            & (paths["role"] == role)
        ]
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
        at = f" ({WHERE[reading]})" if paths["reading"].nunique() > 1 else ""
        set_title(ax, f"{role} {head} as {analysis}{at}: effect of the path it {verb} each component", fontsize=9)
        ax.set_ylabel("logit difference")
        ax.axhline(0, color="grey", lw=0.6)
    fig.legend(
        handles=[Patch(color="C1", label="MLP"), Patch(color="C0", label="head")],
        loc="outside lower center",
        ncols=2,
        fontsize=8,
    )
    suptitle(fig, with_pairs(f"{model}: path patching of heads", paths))
    return fig

"""The figures' shared look (seaborn) and the kinds of panel the stages share: LD against layers
with its bands (Figs. 4-6, C5-C7), heatmaps of layers (Figs. D2, D4), top-k and fraction curves
with the smallest k reaching a threshold (Figs. D3, D5, D8; paper App. D).

Figures are drawn from saved tables, never from the model, and this module imports no torch.
Layers are numbered as the paper numbers them; the axis label says which convention a
figure uses (see docs/outputs.md, "Layer numbering").  How the panels, legends, ticks and
titles are laid out is :mod:`helixclock.plotting.figure_layout`; here, what that layout holds: an axis
of about :data:`~helixclock.plotting.figure_layout.MAX_TICKS` ticks (:func:`ld_axes`, :func:`heatmap`),
and a "smallest k for x%" that the curve never reaches drawn and named as not reached
(:func:`smallest_mark`), never replaced by the last k.
"""

from __future__ import annotations

import sys

import matplotlib
from matplotlib.patches import Patch, Rectangle

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# seaborn, the one every figure module draws with (``from ...plotting.style import sns``), imported
# with scipy.stats and scipy.cluster hidden where this process has not imported them: seaborn
# imports both at its own import only for kernel density estimates (without them it uses the copy of
# gaussian_kde it carries) and clustered heatmaps, which no figure here draws, and they are about 0.8
# of the 2.7 CPU s of a figure job, whose interpreter draws one figure (the tiny run has 84:
# docs/benchmarks.md).  A None in sys.modules makes their import fail and seaborn's own try/except
# take its fallback; the entries go again after, so a later import of either works as usual, and a
# process that imported them first (a test, a notebook) gets seaborn as usual.
_HIDDEN = [name for name in ("scipy.stats", "scipy.cluster") if name not in sys.modules]
sys.modules.update(dict.fromkeys(_HIDDEN))
try:
    import seaborn as sns  # noqa: E402
finally:
    for _name in _HIDDEN:
        if _name in sys.modules and sys.modules[_name] is None:
            del sys.modules[_name]

from .figure_layout import DATA_LABEL, shared_legend, suptitle, thin_ticks, tick_step, title  # noqa: E402

# the one theme of every figure: seaborn's "ticks" at paper size, no top and right spines, laid
# out by matplotlib's constrained layout (a figure function never calls tight_layout)
sns.set_theme(
    context="paper",
    style="ticks",
    font_scale=1.1,
    rc={
        "axes.spines.top": False,
        "axes.spines.right": False,
        "figure.dpi": 100,
        "legend.frameon": False,
        "figure.constrained_layout.use": True,
    },
)

# colours of the errors and report stages' figures (the model, linear addition, the paper, a, b, a+b)
PALETTE = {
    "model": "#1f77b4",
    "linear addition": "#d62728",
    "paper": "#7f7f7f",
    "a": "#1f77b4",
    "b": "#ff7f0e",
    "a+b": "#2ca02c",
    "highlight": "#d62728",
    "other": "#9ecae1",
}
PAPER_COLOR = PALETTE["paper"]

METHOD_STYLE = {
    "layer": ("layer patch", "k"),
    "pca": ("PCA", "C0"),
    "helix": ("helix", "C3"),
    "circle": ("circle", "C2"),
    "poly": ("polynomial", "C1"),
    "helix (shuffled a)": ("helix, shuffled a", "C4"),
}
CATEGORY_COLOR = {"a,b": "C0", "a+b": "C3", "mixed": "C2"}

# What "layer l" means on an axis, per convention (docs/outputs.md, "Layer numbering")
LAYER_AXIS = {
    "input": "layer l (residual stream entering block l)",
    "output": "layer l (residual stream after block l)",
    "block": "layer l (block l)",
}


def layer_name(resid_layer: int) -> str:
    """resid_pre[l] in the paper's words: the output of layer l-1 (l = 0: the embedding)."""
    if resid_layer == 0:
        return "embedding (resid_pre[0])"
    return f"layer {resid_layer - 1} output (resid_pre[{resid_layer}])"


def pairs_note(*tables: pd.DataFrame) -> str:
    """ "n = k pairs" for the pairs behind a panel's means (the summaries' ``n_pairs``), or
    "n = k1–k2 pairs" when its curves rest on different numbers; "" when no table says.
    Every figure of means over pairs carries it in its panels' titles, so that a mean of a
    few pairs (a weak model, a small held-out split) reads as what it is."""
    counts = sorted({int(n) for t in tables if "n_pairs" in t for n in t["n_pairs"].dropna()})
    if not counts:
        return ""
    k = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"n = {k} pair" + ("" if counts == [1] else "s")


def with_pairs(title: str, *tables: pd.DataFrame) -> str:
    """``title`` with its :func:`pairs_note` in parentheses."""
    note = pairs_note(*tables)
    return f"{title} ({note})" if note else title


def band(ax, part: pd.DataFrame, label: str, color, x: str = "layer", prefix: str = "ld"):
    """A mean line with its 95% interval as a band (nothing for an empty table; no band
    where the interval is NaN, a mean of fewer than 2 pairs)."""
    if part.empty:
        return
    part = part.sort_values(x)
    sns.lineplot(
        x=part[x].to_numpy(),
        y=part[f"{prefix}_mean"].to_numpy(),
        ax=ax,
        marker="o",
        markersize=4,
        lw=1.4,
        label=label,
        color=color,
        errorbar=None,
    )
    ax.fill_between(part[x], part[f"{prefix}_low"], part[f"{prefix}_high"], color=color, alpha=0.15, lw=0)


def ld_axes(
    ax, title: str, convention: str = "input", pairs: pd.DataFrame | None = None, of: pd.DataFrame | None = None
):
    """Axes of LD against layers; with ``pairs`` (the panel's summary) the title says "n = k
    pairs"; the y label names LD as the table ``of`` (default ``pairs``) has it: the
    log-likelihood ratio of answers of several tokens, else the paper's logit difference."""
    if pairs is not None:
        title = with_pairs(title, pairs)
    if convention != "block":  # bar charts of blocks keep their categorical ticks
        thin_ticks(ax)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_xlabel(LAYER_AXIS[convention])
    of = pairs if of is None else of
    several = of is not None and of.attrs.get("ld") == "log-likelihood ratio"
    ax.set_ylabel("LD (log-likelihood ratio)" if several else "logit difference")
    ax.set_title(title, fontsize=10)


def heatmap(
    ax,
    grid: np.ndarray,
    cmap: str,
    label: str,
    center=None,
    vmin=None,
    vmax=None,
    xlabel: str = "",
    ylabel: str = "",
    ticks: int | str = "auto",
):
    """A heatmap with row 0 at the bottom (layers and numbers grow upwards); ``ticks`` "auto" labels
    every row and column up to :data:`MAX_TICKS` of them, else every n-th (:func:`tick_step`:
    seaborn's own "auto" measures the axes before the layout shrinks them)."""
    if ticks == "auto":
        ticks = (tick_step(grid.shape[1]), tick_step(grid.shape[0]))
    xticks, yticks = ticks if isinstance(ticks, tuple) else (ticks, ticks)
    sns.heatmap(
        grid,
        ax=ax,
        cmap=cmap,
        center=center,
        vmin=vmin,
        vmax=vmax,
        cbar_kws={"label": label},
        xticklabels=xticks,
        yticklabels=yticks,
        rasterized=True,
    )
    ax.collections[-1].set_zorder(1)  # above mark_unmeasured's hatching
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelrotation=0)  # seaborn's vertical row labels run into each other
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


UNMEASURED = {"facecolor": "0.88", "edgecolor": "0.6", "hatch": "///", "linewidth": 0}


def mark_unmeasured(ax, shape: tuple[int, int]):
    """Under a heatmap of ``shape`` (rows, columns) drawn by :func:`heatmap`, grey hatching that
    shows through its empty (NaN) cells: the cells never measured, which a white cell would pass
    off as an effect of zero.  Returns a legend handle (label "not patched")."""

    ax.add_patch(Rectangle((0, 0), shape[1], shape[0], zorder=0.5, **UNMEASURED))
    return Patch(label="not patched", **UNMEASURED)


def fraction_curve(ax, curve: pd.DataFrame, x: str, threshold: float | None, label: str, by: str = "fraction"):
    """A sweep's fraction of its reference, with its interval as a band: ``by`` "fraction" (of
    patching every component) or "fraction_of_max" (of the largest effect over the sweep, the
    authors' normalisation of the top-k curves)."""
    ref = curve["all_effect"] if by == "fraction" else curve["max_effect"]
    sns.lineplot(x=curve[x].to_numpy(), y=curve[by].to_numpy(), ax=ax, marker="o", markersize=4, errorbar=None)
    ax.fill_between(curve[x], curve["ld_low"] / ref, curve["ld_high"] / ref, alpha=0.15, lw=0)
    if threshold is not None:
        ax.axhline(threshold, color="grey", ls="--", lw=0.8, label=f"{threshold:.0%}")
    ax.set_xlabel(label)
    ax.set_ylabel("fraction of the all-components effect" if by == "fraction" else "fraction of the largest effect")
    thin_ticks(ax)


def percent_short_of(value: float, threshold: float) -> str:
    """``value`` (a share below ``threshold``) as a percentage with as many decimals as it takes
    not to print as the threshold: 0.7995 against 0.8 is "79.95%", never "80%"."""
    for digits in range(4):
        if round(100 * value, digits) < round(100 * threshold, digits):
            return f"{100 * value:.{digits}f}%"
    return f"{100 * value:.4f}%"


def smallest_mark(ax, curve: pd.DataFrame, x: str, by: str, threshold: float, smallest, what: str) -> str:
    """The smallest ``x`` whose ``by`` reaches ``threshold`` (``smallest``, from the table) marked
    on ``ax``: a dotted line where the curve does reach it there; where it never does (a table's
    smallest falls back to the last ``x``), a cross at the curve's highest point, never a line at
    the last ``x``.  The legend entry names the kind of mark, the returned text the value, for the
    panel's title: "smallest k for 80%: 6", or "80% not reached (at most 79.95%, at m = 10)"."""
    at = curve.loc[curve[x] == smallest, by]
    if len(at) and float(at.max()) >= threshold - 1e-12:
        ax.axvline(smallest, color="C3", ls=":", lw=1, label=f"smallest {what} for {threshold:.0%}")
        return f"smallest {what} for {threshold:.0%}: {int(smallest)}"
    if curve[by].notna().sum() == 0:  # a reference of no effect: no fraction at all
        return f"{threshold:.0%} not reached (no fraction: the reference effect is 0)"
    best = curve.loc[curve[by].idxmax()]
    ax.plot(
        [best[x]], [best[by]], ls="none", marker="X", ms=8, color="C3", label=f"{threshold:.0%} not reached: highest"
    )
    return f"{threshold:.0%} not reached (at most {percent_short_of(best[by], threshold)}, at {what} = {int(best[x])})"


def topk_figure(topk: pd.DataFrame, model: str, what: str, annotate: bool = False):
    """A top-k curve (Figs. D3, D8): fraction of the largest effect vs k, its legend below."""
    fig, ax = plt.subplots(figsize=(6.5, 4.6 if annotate else 4.2))
    topk_panel(ax, topk, what, annotate)
    shared_legend(fig, [ax])
    suptitle(fig, with_pairs(f"{model}: top-k {what} ({len(topk) - 1} in all)", topk))
    return fig


def topk_panel(ax, topk: pd.DataFrame, what: str, annotate: bool = False, heading: str = "") -> None:
    """One top-k curve on ``ax``, with the smallest k reaching its threshold marked (or the
    threshold named as not reached, :func:`smallest_mark`), and the same for the fraction of
    patching every component, in the panel's title under ``heading``; ``annotate``: the name of
    the component each k adds, across the axis over each point (under it on the upper half)."""
    thr = float(topk["threshold"].iloc[0])
    fraction_curve(ax, topk, "k", thr, f"k ({what} patched, by total effect)", by="fraction_of_max")
    note = smallest_mark(ax, topk, "k", "fraction_of_max", thr, int(topk["smallest_k"].iloc[0]), "k")
    k_all = int(topk["smallest_k_all"].iloc[0])
    if (topk.loc[topk["k"] == k_all, "fraction"] >= thr - 1e-12).any():
        every = f"{k_all} for {thr:.0%} of patching all {what}"
    else:
        every = f"{thr:.0%} of patching all not reached (at most {percent_short_of(topk['fraction'].max(), thr)})"
    title(ax, "\n".join(t for t in (heading, f"{note}; {every}") if t), fontsize=9)
    if annotate:
        top = float(topk["fraction_of_max"].max())
        for x, y, name in zip(topk["k"], topk["fraction_of_max"], topk["added"].fillna("")):
            below = y > 0.5 * top
            ax.annotate(
                name,
                (x, y),
                textcoords="offset points",
                xytext=(0, -5 if below else 5),
                fontsize=7,
                rotation=90,
                ha="center",
                va="top" if below else "bottom",
                gid=DATA_LABEL,
            )


# a reading's positions in words, for titles (helixclock.prompts.layout.READINGS)
WHERE = {"last token": "at the last token", "answer positions": "at the answer positions"}


def by_reading(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A table's readings (column ``reading``: the paper's models' one, "last token"; answers of
    several tokens also every position that predicts an answer token), in their order."""
    return [(r, table[table["reading"] == r]) for r in dict.fromkeys(table["reading"])]


def paper_note(ax, text: str, loc: str = "lower right") -> None:
    """A small grey note of what the paper reported, in a corner of the axes."""
    x, ha = (0.98, "right") if "right" in loc else (0.02, "left")
    y, va = (0.03, "bottom") if "lower" in loc else (0.97, "top")
    ax.text(x, y, text, transform=ax.transAxes, ha=ha, va=va, fontsize=8, color=PAPER_COLOR)

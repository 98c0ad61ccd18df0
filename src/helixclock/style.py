"""The figures' shared look (seaborn) and the helpers every stage's figures use.

Figures are drawn from saved tables, never from the model, and this module imports no torch.
Layers are numbered as the paper numbers them; the axis label says which convention a
figure uses (see docs/outputs.md, "Layer numbering").

What every figure keeps to, whatever the model (tests/helpers/figures.py checks it on the
figure's objects, on the toys' runs and on tables shaped as a real model's): a legend never covers
data (one legend for the figure, under its panels: :func:`shared_legend`; beside a lone panel:
:func:`legend_outside`), a grid of panels has no empty cell (:func:`panel_grid`), a panel is at
least :data:`MIN_PANEL_INCHES` wide (:func:`panels_width`), an axis carries at most about
:data:`MAX_TICKS` tick labels, never touching (:func:`thin_ticks`, :func:`category_ticks`,
:func:`heatmap`), labels at data points merge where their points crowd (:func:`label_points`),
titles fit the figure (:func:`suptitle`, :func:`title` break long ones at spaces), a figure that
draws less than the paper's says what it leaves out (:func:`left_out`), and a "smallest k for
x%" that the curve never reaches is drawn and named as not reached (:func:`smallest_mark`).
Every figure lays itself out with matplotlib's constrained layout, which makes room for titles,
labels, colorbars and the legends outside.
"""

from __future__ import annotations

import matplotlib
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator, PercentFormatter

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

MIN_PANEL_INCHES = 1.5  # the narrowest a panel of data is drawn
MAX_TICKS = 12  # about the most tick labels an axis carries (a tick a layer of 30 runs them together)

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


def ld_axes(ax, title: str, convention: str = "input", pairs: pd.DataFrame | None = None):
    """Axes of LD against layers; with ``pairs`` (the panel's summary) the title says "n = k
    pairs"."""
    if pairs is not None:
        title = with_pairs(title, pairs)
    if convention != "block":  # bar charts of blocks keep their categorical ticks
        thin_ticks(ax)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_xlabel(LAYER_AXIS[convention])
    several = pairs is not None and pairs.attrs.get("ld") == "log-likelihood ratio"
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


# the gid of a label set at a data point (a class mean on a helix circle): it sits where the data
# is, so two may overlap where their points do (tests/helpers/figures.py allows that, and only that)
DATA_LABEL = "data-label"

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


# a reading's positions in words, for titles (helixclock.layout.READINGS)
WHERE = {"last token": "at the last token", "answer positions": "at the answer positions"}


def by_reading(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A table's readings (answers of several tokens: at the last token and at every position
    that predicts an answer token, column ``reading``), or the one reading of the paper's
    models ("last token")."""
    if "reading" not in table:
        return [("last token", table)]
    return [(r, table[table["reading"] == r]) for r in dict.fromkeys(table["reading"])]


def wrapped(fig, text: str, fontsize=None, width: float | None = None) -> str:
    """``text`` with each of its lines broken at spaces so that none is wider than ``width``
    inches (default: the figure's width less 5%) in the font of size ``fontsize`` (points or
    a name, default a figure title's); text with mathtext ($...$) is left as it is.  The
    breaks are made once, here: matplotlib's own ``wrap=True`` wraps again at each draw and
    does not hold under ``savefig(bbox_inches="tight")``."""

    if "$" in text:
        return text
    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=fontsize if fontsize is not None else plt.rcParams["figure.titlesize"])
    limit = (width if width is not None else 0.95 * fig.get_figwidth()) * fig.dpi

    def too_wide(line: str) -> bool:
        return renderer.get_text_width_height_descent(line, font, ismath=False)[0] > limit

    lines = []
    for line in text.split("\n"):
        current = ""
        for word in line.split(" "):
            candidate = f"{current} {word}" if current else word
            if current and too_wide(candidate):
                lines.append(current)
                current = word
            else:
                current = candidate
        lines.append(current)
    return "\n".join(lines)


def suptitle(fig, text: str, **kwargs):
    """The figure's title, broken at spaces to fit the figure's width (:func:`wrapped`): a
    model's long name or a long note never runs past the edge."""
    return fig.suptitle(wrapped(fig, text, kwargs.get("fontsize")), **kwargs)


def title(ax, text: str, **kwargs):
    """``ax``'s title, broken at spaces to fit the axes' width (:func:`wrapped`; the width of
    the axes as placed now, before the layout: a little narrower or wider after it; for a figure
    title use :func:`suptitle`)."""
    size = kwargs.get("fontsize", plt.rcParams["axes.titlesize"])
    width = ax.get_position().width * ax.figure.get_figwidth()
    return ax.set_title(wrapped(ax.figure, text, size, width), **kwargs)


def legend_outside(ax, **kwargs):
    """``ax``'s legend beside the axes, on its right, never over the data; the constrained layout
    makes room for it.  (A legend under the panels: :func:`shared_legend` with "lower".)"""
    kwargs.setdefault("fontsize", 8)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kwargs)


def shared_legend(fig, axes, where: str = "lower", handles=None, **kwargs):
    """One legend for the figure: the entries of every axes in ``axes`` (each label once, in the
    order first met; or ``handles``), their own legends removed.  Under the panels, in as many
    columns as fit the figure's width (:func:`legend_columns`), so that no panel gives its width
    to a legend; beside the panel when there is one and ``where`` is "right"
    (:func:`legend_outside`).  (A figure legend at the top right would run into the figure's
    title, which the layout centres over the whole figure.)"""
    axes = list(axes)
    if len(axes) == 1 and where == "right":
        return legend_outside(axes[0], **kwargs)
    entries: dict = {h.get_label(): h for h in handles} if handles is not None else {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if handles is None and not label.startswith("_"):
                entries.setdefault(label, handle)
        if ax.get_legend():
            ax.get_legend().remove()
    if not entries:
        return None
    kwargs.setdefault("fontsize", 8)
    kwargs.setdefault("ncols", legend_columns(fig, list(entries), kwargs["fontsize"]))
    return fig.legend(list(entries.values()), list(entries.keys()), loc="outside lower center", **kwargs)


def legend_columns(fig, labels, fontsize=8, most: int = 4) -> int:
    """How many columns (up to ``most``) a legend of ``labels`` under the panels takes so that
    its rows fit the figure's width (each column as wide as its widest label and a handle)."""
    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=fontsize)
    widths = [
        max(renderer.get_text_width_height_descent(line, font, ismath=False)[0] for line in str(label).split("\n"))
        for label in labels
    ]
    handle = 4.0 * font.get_size_in_points() * fig.dpi / 72  # the handle, its gaps and the column's spacing
    for ncols in range(min(most, len(labels)), 1, -1):
        rows = int(np.ceil(len(widths) / ncols))  # matplotlib fills a column before the next
        columns = [max(widths[i : i + rows]) + handle for i in range(0, len(widths), rows)]
        if sum(columns) <= 0.95 * fig.bbox.width:
            return ncols
    return 1


def thin_ticks(ax, axis: str = "x", most: int = MAX_TICKS, integer: bool = True) -> None:
    """At most about ``most`` ticks on a numeric axis, at round steps (integers: layers, k), placed
    when the figure is drawn, after the layout has sized the axes."""
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(nbins=most, integer=integer))


def tick_step(n: int, most: int = MAX_TICKS) -> int:
    """Every how many of ``n`` categories (rows, columns, layers) a tick label goes so that at most
    ``most`` do."""
    return max(1, int(np.ceil(n / most)))


def category_ticks(ax, positions, labels, axis: str = "x", most: int = MAX_TICKS) -> None:
    """Tick labels of categories at ``positions`` (layers, circuit MLPs): every n-th where there
    are over ``most`` (:func:`tick_step`), upright where they are numbers or few and short, else
    across the axis (rotated 90°, so that neighbours never touch)."""
    positions, labels = list(positions), [str(label) for label in labels]
    step = tick_step(len(labels), most)
    longest = max(map(len, labels), default=0)
    rotate = axis == "x" and ((len(labels[::step]) > 6 and longest > 3) or longest > 8)
    setter = ax.set_xticks if axis == "x" else ax.set_yticks
    setter(positions[::step], labels[::step], rotation=90 if rotate else 0)


def label_points(ax, x, y, labels, fontsize: float = 8) -> None:
    """Labels at data points (``gid`` :data:`DATA_LABEL`) that never pile up: points whose labels
    would overlap share one, their names joined ("MLP22, 23, 24"), at the first of them.  The
    extents are measured on the axes as placed now (the layout changes them a little)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y, labels = x[ok], y[ok], [str(label) for label, keep in zip(labels, ok) if keep]
    if not len(x):
        return
    fig = ax.figure
    box = ax.get_position()
    width_in, height_in = box.width * fig.get_figwidth(), box.height * fig.get_figheight()
    span_x, span_y = (np.ptp(x) or 1.0) * 1.3, (np.ptp(y) or 1.0) * 1.3  # the data range and the margins
    char_w, line_h = 0.6 * fontsize / 72 / width_in * span_x, 1.4 * fontsize / 72 / height_in * span_y
    groups = [[i] for i in np.argsort(x, kind="stable")]
    merged = True
    while merged:
        merged = False
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                i, j = groups[a][0], groups[b][0]
                w = max(len(_joined(labels, groups[a])), len(_joined(labels, groups[b]))) * char_w
                if abs(x[i] - x[j]) < w and abs(y[i] - y[j]) < line_h:
                    groups[a] += groups.pop(b)
                    merged = True
                    break
            if merged:
                break
    for group in groups:
        ax.annotate(
            _joined(labels, group),
            (x[group[0]], y[group[0]]),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=fontsize,
            gid=DATA_LABEL,
        )


def _joined(labels, group) -> str:
    """The labels of ``group`` in one: "MLP22, 23, 24" where they share a prefix of letters."""
    names = [labels[i] for i in sorted(group, key=lambda i: labels[i])]
    prefix = names[0].rstrip("0123456789")
    if prefix and all(n.startswith(prefix) and n[len(prefix) :].isdigit() for n in names):
        names = sorted(names, key=lambda n: int(n[len(prefix) :]))
        return prefix + ", ".join(n[len(prefix) :] for n in names)
    return ", ".join(names)


def panels_width(n: int, per: float, least: float = 6.5) -> float:
    """The width of a figure of ``n`` panels side by side, ``per`` inches each and ``least`` in
    all (one panel of a sweep with one k is as wide as a figure of the paper's column)."""
    return max(least, per * n, MIN_PANEL_INCHES * n + 1.0)


def left_out(what: str, names) -> str:
    """A line for a figure's title naming what it does not draw that the paper's does: "not
    drawn: a//5, a*1.5 (too few pairs)"; "" when nothing is left out."""
    names = [str(n) for n in names]
    return f"not drawn: {', '.join(names)} ({what})" if names else ""


def panel_grid(n: int, max_cols: int = 3, size: tuple[float, float] = (4.2, 3.4), least: float = 0.0, **kwargs):
    """A figure with ``n`` panels of ``size`` (the figure ``least`` inches wide at least), at most
    ``max_cols`` a row and no empty cell: the rows are as even as they can be (4 panels: 2 x 2)
    and a shorter last row is centred.  Returns the figure and its ``n`` axes, row by row."""
    rows = max(1, int(np.ceil(n / max_cols)))
    cols = max(1, int(np.ceil(n / rows)))
    fig = plt.figure(figsize=(max(least, size[0] * cols), size[1] * rows), **kwargs)
    grid = fig.add_gridspec(rows, 2 * cols)
    axes = []
    for i in range(n):
        row, col = divmod(i, cols)
        in_row = min(cols, n - row * cols)
        start = (cols - in_row) + 2 * col  # a shorter row starts half a panel in per missing panel
        axes.append(fig.add_subplot(grid[row, start : start + 2]))
    return fig, axes


def empty(message: str):
    """A figure that says why there is nothing to draw (instead of a misleading plot)."""
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.text(0.5, 0.5, wrapped(fig, message, plt.rcParams["font.size"]), ha="center", va="center")
    ax.axis("off")
    return fig


def paper_note(ax, text: str, loc: str = "lower right") -> None:
    """A small grey note of what the paper reported, in a corner of the axes."""
    x, ha = (0.98, "right") if "right" in loc else (0.02, "left")
    y, va = (0.03, "bottom") if "lower" in loc else (0.97, "top")
    ax.text(x, y, text, transform=ax.transAxes, ha=ha, va=va, fontsize=8, color=PAPER_COLOR)


def percent_axis(ax, axis: str = "y") -> None:
    """Tick labels of a share as percentages."""
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(PercentFormatter(1.0))

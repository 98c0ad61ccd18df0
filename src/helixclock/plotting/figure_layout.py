"""How every figure is laid out, whatever the model (paper, all figures): panels of a least width,
one legend under them, tick labels that never touch, labels at crowded points merged, titles
that fit, and a line for what the paper draws and a figure does not.  A real model gives the
figures what the toys do not (30 layers, 11 circuit MLPs, one k, two readings, long labels):
tests/helpers/figures.py checks each of these on the figure's objects, on the toys' runs and on
tables of a real model's shape.  The look itself (theme, colours, the kinds of panel the stages
share) is :mod:`helixclock.plotting.style`.

Every figure lays itself out with matplotlib's constrained layout, which makes room for titles,
labels, colour bars and the legends outside; what is measured here before that layout (title
widths, label extents) is measured on the figure as sized."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from matplotlib.ticker import MaxNLocator, PercentFormatter  # noqa: E402

MIN_PANEL_INCHES = 1.5  # the narrowest a panel of data is drawn
MAX_TICKS = 12  # about the most tick labels an axis carries (a tick a layer of 30 runs them together)

# the gid of a label set at a data point (a class mean on a helix circle): it sits where the data
# is, so two may overlap where their points do (tests/helpers/figures.py allows that, and only that)
DATA_LABEL = "data-label"


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


def percent_axis(ax, axis: str = "y") -> None:
    """Tick labels of a share as percentages."""
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(PercentFormatter(1.0))

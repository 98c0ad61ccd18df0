"""Saving the figures a test draws, and what makes a figure readable, checked on the figure's
objects (never on pixels): no legend over the data, no empty panel, titles inside the figure
and apart from each other, tick labels apart, panels wide enough to read; and two sanity checks
of what a figure says: a share it plots lies in [0, 1], and "smallest k for x%" reaches x%."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

DATA_LABEL = "data-label"  # the gid of a label set at a data point (helixclock.plotting.figure_layout.DATA_LABEL)
MIN_PANEL_INCHES = 1.5  # the narrowest a data panel may be (helixclock.plotting.figure_layout.MIN_PANEL_INCHES)
MIN_PANEL_SHARE = 0.4  # and its least share of its grid cell's width
# "smallest k for 80%: 12", "smallest m for 80%: 4", "smallest number for 70% of ...: 312"
SMALLEST_FOR = re.compile(r"smallest [^\n]*? for (?P<p>\d+(?:\.\d+)?)%[^:\n]*: (?P<n>\d+)")


def save(fig, tmp_path: Path, name: str, readable: bool = True) -> Path:
    """Save a test figure as the pipeline does (also under $HELIXCLOCK_TEST_FIGURES when set, to
    look at) and check that it holds a drawing (over 10 kB) and, unless ``readable`` is False,
    that :func:`problems` finds nothing."""
    from helixclock.project.io import save_figure

    found = problems(fig) if readable else []
    paths = [tmp_path / f"{name}.png"]
    if os.environ.get("HELIXCLOCK_TEST_FIGURES"):
        paths.append(Path(os.environ["HELIXCLOCK_TEST_FIGURES"]) / f"{name}.png")
    save_figure(fig, paths)
    assert paths[0].stat().st_size > 10_000
    assert not found, f"{name}: {found}"
    return paths[0]


def _inside(box, xy) -> bool:
    """Whether any display-space point of ``xy`` (n, 2) lies inside ``box``."""
    return bool(((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)).any())


def _data_lines(ax):
    """The lines of ``ax`` drawn in data coordinates (curves, not axhline/axvline references),
    with at least two points."""
    return [
        line
        for line in ax.lines
        if line.get_visible() and line.get_transform().contains_branch(ax.transData) and len(line.get_xydata()) > 1
    ]


def _is_reference(line, ax) -> bool:
    return not line.get_transform().contains_branch(ax.transData)


def _covered(box, ax, renderer) -> list[str]:
    """What of ``ax``'s data the display-space box ``box`` covers: curves (the segments between
    points), markers and scatter points, bars."""
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Rectangle

    hits = []
    for line in ax.lines:
        if not line.get_visible() or _is_reference(line, ax) or line.get_label() in ("", None):
            continue
        xy = line.get_transform().transform(line.get_xydata())
        xy = xy[np.isfinite(xy).all(axis=1)]
        if len(xy) == 0:
            continue
        from matplotlib.path import Path as MPath

        crossed = (
            len(xy) > 1 and line.get_linestyle() not in ("None", "", " ") and MPath(xy).intersects_bbox(box, False)
        )
        marked = line.get_marker() not in ("None", "", " ", None) and _inside(box, xy)
        if crossed or marked:
            hits.append(f"line {line.get_label()!r}")
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_visible():
            xy = coll.get_offset_transform().transform(coll.get_offsets())
            xy = xy[np.isfinite(xy).all(axis=1)] if len(xy) else xy
            if len(xy) and _inside(box, xy):
                hits.append(f"points {coll.get_label()!r}")
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_height() and patch.get_width():
            if patch.get_window_extent(renderer).overlaps(box):
                hits.append("a bar")
                break
    return hits


def _tick_labels(ax) -> list:
    """The tick labels ``ax`` draws: those of its major ticks inside the view limits (matplotlib
    keeps labels for ticks beyond them, never drawn)."""
    drawn = []
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        slack = 1e-9 * (abs(hi - lo) + 1)
        for loc, label in zip(axis.get_majorticklocs(), axis.get_majorticklabels()):
            if lo - slack <= loc <= hi + slack and label.get_visible() and label.get_text():
                drawn.append(label)
    return drawn


def _points(ax):
    """The lines of ``ax`` that mark points in data coordinates (one point is data too)."""
    return [
        line
        for line in ax.lines
        if line.get_visible()
        and line.get_transform().contains_branch(ax.transData)
        and line.get_marker() not in ("None", "", " ", None)
        and np.isfinite(line.get_xydata()).all(axis=1).any()
    ]


def _has_data(ax) -> bool:
    return bool(_data_lines(ax) or _points(ax) or ax.collections or ax.patches or ax.images or ax.containers)


def _name(ax) -> str:
    return repr(ax.get_title() or ax.get_ylabel() or "an axes")


def tick_overlaps(ax, renderer) -> list[str]:
    """Neighbouring tick labels of an axis of ``ax`` that overlap ("0123456789101112" for a tick a
    layer), one line an axis with how many pairs overlap and the first pair."""
    found = []
    for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
        lo, hi = sorted(axis.get_view_interval())
        slack = 1e-9 * (abs(hi - lo) + 1)
        drawn = sorted(
            (loc, label)
            for loc, label in zip(axis.get_majorticklocs(), axis.get_majorticklabels())
            if lo - slack <= loc <= hi + slack and label.get_visible() and label.get_text()
        )
        boxes = [(label.get_text(), label.get_window_extent(renderer)) for _, label in drawn]
        pairs = [(a, b) for (a, box_a), (b, box_b) in zip(boxes, boxes[1:]) if box_a.overlaps(box_b)]
        if pairs:
            found.append(
                f"{len(pairs)} neighbouring {which} tick labels of {_name(ax)} overlap "
                f"(the first: {pairs[0][0]!r} and {pairs[0][1]!r})"
            )
    return found


def _width_share(spec) -> float:
    """The share of its figure's width the grid cell of ``spec`` takes (its columns' width ratios;
    a grid nested in a cell, its share of that cell)."""
    grid = spec.get_gridspec()
    ratios = grid.get_width_ratios() or [1] * grid.get_geometry()[1]
    share = sum(ratios[spec.colspan.start : spec.colspan.stop]) / sum(ratios)
    parent = getattr(grid, "_subplot_spec", None)  # a grid nested in a cell (GridSpecFromSubplotSpec)
    return share * (_width_share(parent) if parent is not None else 1.0)


def narrow_panels(ax) -> list[str]:
    """A data panel (not a colour bar) narrower than :data:`MIN_PANEL_INCHES` or than
    :data:`MIN_PANEL_SHARE` of its grid cell (a legend or a colour bar beside it took the rest)."""
    spec = ax.get_subplotspec()
    if spec is None or not ax.axison or not _has_data(ax):
        return []
    fig = ax.figure
    inches = ax.bbox.width / fig.dpi
    cell = _width_share(spec) * fig.bbox.width / fig.dpi
    if inches < MIN_PANEL_INCHES - 1e-6 or inches < MIN_PANEL_SHARE * cell - 1e-6:
        return [f"the panel {_name(ax)} is {inches:.2f} in wide, {inches / cell:.0%} of its cell of {cell:.2f} in"]
    return []


def _is_share_axis(axis) -> bool:
    from matplotlib.ticker import PercentFormatter

    formatter = axis.get_major_formatter()
    return "share" in axis.get_label_text().lower() or (isinstance(formatter, PercentFormatter) and formatter.xmax == 1)


def shares_outside(ax) -> list[str]:
    """A share (an axis labelled "share", or drawn as a percentage of 1) plotted outside [0, 1]:
    its curves, points and bars."""
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Rectangle

    found = []
    for i, axis in enumerate((ax.xaxis, ax.yaxis)):
        if not _is_share_axis(axis):
            continue
        values = [
            line.get_xydata()[:, i] for line in _data_lines(ax) + [ln for ln in ax.lines if len(ln.get_xydata()) == 1]
        ]
        values += [
            c.get_offsets()[:, i] for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets())
        ]
        for patch in ax.patches:
            if isinstance(patch, Rectangle) and patch.get_transform().contains_branch(ax.transData):
                start = (patch.get_x(), patch.get_y())[i]
                values.append(np.array([start, start + (patch.get_width(), patch.get_height())[i]]))
        v = np.concatenate([np.asarray(x, float) for x in values]) if values else np.array([])
        v = v[np.isfinite(v)]
        if len(v) and (v.min() < -1e-9 or v.max() > 1 + 1e-9):
            found.append(f"the share {axis.get_label_text()!r} of {_name(ax)} runs from {v.min():.3g} to {v.max():.3g}")
    return found


def unreached(ax) -> list[str]:
    """A "smallest k for x%: n" (a line's label, so its legend entry, a note on the panel or its title) whose
    curve on the panel is below x% at n: a value never reached, passed off as the last one."""
    statements = [line.get_label() for line in ax.lines] + [t.get_text() for t in ax.texts] + [ax.get_title()]
    curves = _data_lines(ax)
    found = []
    for text in statements:
        for match in SMALLEST_FOR.finditer(" ".join(str(text or "").split())):  # a title may wrap
            share, n = float(match["p"]) / 100, float(match["n"])
            at = [line.get_xydata()[line.get_xydata()[:, 0] == n, 1] for line in curves]
            at = np.concatenate(at) if at else np.array([])
            if not len(at):
                found.append(f"{match[0]!r} of {_name(ax)}: no curve has a point at {n:g}")
            elif np.nanmax(at) < share - 1e-9:
                found.append(f"{match[0]!r} of {_name(ax)}: the curve is at {np.nanmax(at):.4g} there, below {share:g}")
    return found


def problems(fig) -> list[str]:
    """What keeps ``fig`` from reading well, in words; [] when nothing does:

    - a legend (of an axes or of the figure) over the data of any axes: a curve's segments,
      markers, scatter points or bars inside its box;
    - an empty panel: an axes with nothing drawn in it (frame on or off), unless it is the
      figure's only panel and holds a message saying why;
    - a suptitle, an axes title or an axis label that runs past the figure's edge;
    - titles, axis labels, legends and the labels written on the panels that overlap each other,
      or a legend over tick labels.  Two labels set at data points (gid ``data-label``: the
      class means of Figs. 1 and 3) may overlap each other where their points do.

    - neighbouring tick labels of an axis that overlap (:func:`tick_overlaps`);
    - a data panel under :data:`MIN_PANEL_INCHES` wide or under :data:`MIN_PANEL_SHARE` of its
      grid cell (:func:`narrow_panels`);
    - a share outside [0, 1] (:func:`shares_outside`), a "smallest k for x%" whose curve does not
      reach x% (:func:`unreached`).

    A figure of one axes with a message (``helixclock.plotting.figure_layout.empty``) is fine."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    axes = [ax for ax in fig.axes if ax.get_visible()]
    plots = [ax for ax in axes if ax.get_label() != "<colorbar>"]
    legends = [(ax.get_legend(), ax.get_title() or "an axes") for ax in axes if ax.get_legend()]
    legends += [(legend, "the figure") for legend in fig.legends]
    for legend, owner in legends:
        if not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for ax in plots:
            hits = _covered(box, ax, renderer)
            if hits:
                found.append(f"the legend of {owner} covers {', '.join(hits)} of {ax.get_title() or 'an axes'!r}")
    for ax in plots:
        name = ax.get_title() or "an axes"
        if not _has_data(ax) and not ax.get_legend() and (len(plots) > 1 or not ax.texts):
            found.append(f"empty panel {name!r}" + ("" if ax.axison else " (switched off)"))
    width, height = fig.bbox.width, fig.bbox.height
    texts = [fig._suptitle] if fig._suptitle is not None and fig._suptitle.get_text() else []
    for ax in axes:
        texts += [t for t in (ax.title, ax._left_title, ax._right_title) if t.get_text()]
        texts += [t for t in (ax.xaxis.label, ax.yaxis.label) if t.get_text() and t.get_visible()]
    boxes = []
    for text in texts:
        box = text.get_window_extent(renderer)
        if box.x0 < -1 or box.x1 > width + 1 or box.y0 < -1 or box.y1 > height + 1:
            found.append(f"{text.get_text()!r} runs past the figure's edge")
        boxes.append((repr(text.get_text()), box, False))
    for ax in axes:  # labels written on the panels (peaks, bars, notes)
        for text in ax.texts:
            if text.get_visible() and text.get_text().strip():
                boxes.append((repr(text.get_text()), text.get_window_extent(renderer), text.get_gid() == DATA_LABEL))
    for legend, owner in legends:
        if legend.get_visible():
            box = legend.get_window_extent(renderer)
            boxes.append((f"the legend of {owner}", box, False))
            for ax in axes:
                if any(t.get_window_extent(renderer).overlaps(box) for t in _tick_labels(ax)):
                    found.append(f"the legend of {owner} covers tick labels of {ax.get_title() or 'an axes'!r}")
    for ax in axes:
        found += tick_overlaps(ax, renderer)
    for ax in plots:
        found += narrow_panels(ax) + shares_outside(ax) + unreached(ax)
    for i, (a, box_a, data_a) in enumerate(boxes):
        for b, box_b, data_b in boxes[i + 1 :]:
            if box_a.overlaps(box_b) and not (data_a and data_b):
                found.append(f"{a} and {b} overlap")
    return found

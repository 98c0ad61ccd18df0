"""Fig. 1 (the Clock drawn from the model's fits) and the cross-model figures figAll_accuracy
and figAll_ld_ratios, drawn from tables (no torch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.transforms import blended_transform_factory

from ...fitting.bases import SUM
from ...plotting.figure_layout import DATA_LABEL, percent_axis, suptitle
from ...plotting.style import PALETTE, sns
from ...prompts.tasks import TASKS
from .clock import available_example, clock_angles
from .quantities import standardised_column

TASK_ORDER = [t.label for t in TASKS.values()]
PAPER_GREYS = ["#4d4d4d", "#8c8c8c", "#bdbdbd"]


def _layer_name(layer: int) -> str:
    return "embedding (resid_pre[0])" if layer == 0 else f"layer {layer - 1} output (resid_pre[{layer}])"


def _clock_face(
    ax,
    coords: pd.DataFrame,
    value: str,
    var: str,
    T: int,
    marks: Mapping[str, tuple[int, str]],
    predicted: float | None = None,
):
    """One circle: every number faint (coloured by value mod T), class means labelled as on a
    clock face, and hands from the centre to the marked numbers."""
    c, s = coords[f"cos {var} T={T}"].to_numpy(), coords[f"sin {var} T={T}"].to_numpy()
    vals = coords[value].to_numpy()
    ax.scatter(c, s, c=vals % T, cmap="hsv", vmin=0, vmax=T, s=10, alpha=0.3, edgecolor="none")
    radius = float(np.median(np.hypot(c, s)))
    t = np.linspace(0, 2 * np.pi, 200)
    ax.plot(radius * np.cos(t), radius * np.sin(t), color="grey", lw=0.6, ls=":")
    step = 1 if T <= 10 else T // 10
    for r in range(0, T, step):
        sel = vals % T == r
        if sel.any():
            mc, ms = c[sel].mean(), s[sel].mean()
            norm = max(np.hypot(mc, ms), 1e-12)
            ax.text(
                mc / norm * radius * 1.18,
                ms / norm * radius * 1.18,
                str(r),
                ha="center",
                va="center",
                fontsize=7,
                color="grey",
                gid=DATA_LABEL,  # beside its class's mean: overlaps another only where the classes do
            )
    for name, (v, color) in marks.items():
        row = coords[coords[value] == v]
        if row.empty:
            continue
        x, y = float(row[f"cos {var} T={T}"].iloc[0]), float(row[f"sin {var} T={T}"].iloc[0])
        ax.annotate("", (x, y), (0, 0), arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2})
        ax.scatter([x], [y], color=color, s=40, zorder=3, label=f"{name} = {v}")
    ax.scatter([0], [0], color="k", s=8)
    if predicted is not None:  # where the Clock puts a+b: the angles of a and b added
        th = np.radians(predicted)
        ax.plot([0, radius * np.cos(th)], [0, radius * np.sin(th)], color="k", ls="--", lw=1.2, label="θ(a) + θ(b)")
    ax.set_aspect("equal", "datalim")
    ax.set_xlabel(f"cos(2π {var} / {T}) coordinate")
    ax.set_ylabel(f"sin(2π {var} / {T}) coordinate")
    ax.legend(loc="upper right", fontsize=8, bbox_to_anchor=(1.35, 1.0))


def fig01_clock(
    projection: pd.DataFrame,
    sum_coords: pd.DataFrame,
    model: str,
    a: int = 37,
    b: int = 45,
    periods: Sequence[int] = (10, 100),
):
    """Fig. 1: the Clock algorithm drawn from the model's own fits.

    projection: Fig. 3's coordinates of each a (``helix/projection.csv``: a, cos a T=..,
    sin a T=.., linear, layer); sum_coords: the last-token helix(a+b) coordinates per a+b
    (:func:`..clock.sum_helix_coordinates`).  Left: a and b as hands on the circle of period T;
    right: a+b on the same period of the answer helix, with the angles the Clock predicts.
    """
    asked = (a, b)
    a, b = available_example(projection, sum_coords, a, b)
    angles = clock_angles(projection, sum_coords, a, b, periods).set_index("T")
    fig, axes = plt.subplots(len(periods), 2, figsize=(10.5, 4.6 * len(periods)), squeeze=False)
    la = int(projection["layer"].iloc[0]) if "layer" in projection else None
    ls = int(sum_coords["layer"].iloc[0])
    for row, T in zip(axes, periods):
        g = angles.loc[T]
        _clock_face(row[0], projection, "a", "a", T, {"a": (a, PALETTE["a"]), "b": (b, PALETTE["b"])})
        where = f", {_layer_name(la)}" if la is not None else ""
        row[0].set_title(
            f"T = {T}: a and b on helix(a) (a token{where})\nθ(a) = {g.theta_a:.0f}°, θ(b) = {g.theta_b:.0f}°",
            fontsize=10,
        )
        _clock_face(row[1], sum_coords, SUM, SUM, T, {"a+b": (a + b, PALETTE["a+b"])}, predicted=g.predicted_sum)
        row[1].set_title(
            f"T = {T}: a+b on helix(a+b) (last token, {_layer_name(ls)})\n"
            f"θ(a+b) = {g.theta_sum:.0f}°; Clock: θ(a) + θ(b) = {g.predicted_sum:.0f}° "
            f"(off by {g.error:+.0f}°)",
            fontsize=10,
        )
    swap = "" if (a, b) == asked else f" (nearest to the configured {asked[0]}+{asked[1]} the fits cover)"
    suptitle(
        fig,
        f"{model}: the Clock algorithm for {a}+{b}={a + b}{swap}, drawn from the model's own helix fits\n"
        "(an illustration built from the data: points are projections into the fitted helix "
        "subspaces; the paper's Fig. 1 is a schematic)",
        fontsize=11,
    )
    return fig


def _accuracy_long(tabA1: pd.DataFrame, tabC1: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    rows = [tabA1[["model", "task", "accuracy"]]]
    rows += [df[["task", "accuracy"]].assign(model=m) for m, df in tabC1.items()]
    return pd.concat(rows, ignore_index=True)


LeftOut = Mapping[str, pd.DataFrame]
"""Per model, the tasks left out of Table 1 (``helix/other_tasks_left_out.csv``:
:func:`helixclock.jobs.preconditions.left_out`; columns label, correct, prompts, ...)."""


def not_run_marks(models: Sequence[str], tasks: Sequence[str], has: Mapping[str, set], left_out: LeftOut | None):
    """(model, task label) -> the mark of a bar that is not there because the task did not run
    for the model: "not run (1 of 77 correct)" for a task left out of Table 1 (its count of
    correct prompts), "not run" for one with no row for another reason.  ``has``: per model,
    the task labels it has a value for."""
    marks = {}
    for m in models:
        left = left_out.get(m) if left_out else None
        counts = {} if left is None else {r.label: (r.correct, r.prompts) for r in left.itertuples()}
        for task in tasks:
            if task not in has.get(m, set()):
                c = counts.get(task)
                marks[(m, task)] = "not run" + (f" ({c[0]} of {c[1]} correct)" if c else "")
    return marks


def _mark_bars(ax, tasks: Sequence[str], hues: Sequence[str], marks: Mapping[tuple[str, str], str], palette, y=None):
    """Write each mark upright where its bar would stand (seaborn's dodged bars: the default
    width 0.8 shared by the hues), from the foot of the axes or from ``y[(model, task)]``."""
    where = blended_transform_factory(ax.transData, ax.transAxes)
    width = 0.8 / len(hues)
    for (model, task), text in marks.items():
        if task not in tasks or model not in hues:
            continue
        x = tasks.index(task) - 0.4 + (hues.index(model) + 0.5) * width
        at = (y or {}).get((model, task))
        ax.text(
            x,
            0.02 if at is None else at + 0.02,
            text,
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=8,
            color=palette[model],
            transform=where if at is None else ax.transData,
        )


def figAll_accuracy(
    tabA1: pd.DataFrame,
    tabC1: Mapping[str, pd.DataFrame],
    paper: pd.DataFrame | None = None,
    left_out: LeftOut | None = None,
):
    """figAll_accuracy: every model's accuracy on the six tasks (a+b from tabA1, the others
    from each model's tabC1), beside the paper's values (``paper``: model, task, accuracy,
    e.g. :func:`..compare.paper_accuracy`).  A task a model has no accuracy for is marked "not
    run"; a task left out of its Table 1 (``left_out``) has its count of correct prompts above
    its bar ("1 of 77 correct: no Table 1")."""
    long = _accuracy_long(tabA1, tabC1)
    models = list(dict.fromkeys(long["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    if paper is not None and len(paper):
        p = paper.assign(model="paper: " + paper["model"].astype(str))
        long = pd.concat([long, p[["model", "task", "accuracy"]]], ignore_index=True)
        palette.update(zip(dict.fromkeys(p["model"]), PAPER_GREYS))
    tasks = [t for t in TASK_ORDER if t in set(long["task"])]
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(tasks) + 0.4 * len(palette)), 4.2))
    sns.barplot(long, x="task", y="accuracy", hue="model", order=tasks, hue_order=list(palette), palette=palette, ax=ax)
    has = {m: set(long.loc[long["model"] == m, "task"]) for m in models}
    _mark_bars(ax, tasks, list(palette), not_run_marks(models, tasks, has, None), palette)
    value = long.set_index(["model", "task"])["accuracy"]
    table1 = {
        (m, r.label): f"{r.correct} of {r.prompts} correct: no Table 1"
        for m, left in (left_out or {}).items()
        for r in left.itertuples()
        if (m, r.label) in value.index
    }
    _mark_bars(ax, tasks, list(palette), table1, palette, y={k: float(value[k]) for k in table1})
    ax.set_xlabel("task")
    ax.set_ylabel("accuracy (top token = answer)")
    ax.set_ylim(0, 1.05)
    percent_axis(ax)
    ax.legend(title=None, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("accuracy of every model on the six tasks (paper: Table A1 and Table C1, GPT-J)")
    return fig


RATIOS = (("Helix", "Helix / Full"), ("PCA", "PCA / Full"), ("Poly", "Poly / Full"))


def ld_ratios_long(tab01: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """tab01 of each model as ratios to Full: model, task, ratio, value; of the length-standardised
    maxima where a model's answers take several tokens (:func:`.quantities.standardised_column`),
    so that models whose pairs mix answer lengths differently are compared on one mix."""
    rows = []
    for m, df in tab01.items():
        full = df[standardised_column(df, "Full")]
        for col, name in RATIOS:
            value = df[standardised_column(df, col)] / full
            rows.append(pd.DataFrame({"model": m, "task": df["task"], "ratio": name, "value": value}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["model", "task", "ratio", "value"])


def figAll_ld_ratios(
    tab01: Mapping[str, pd.DataFrame], paper: pd.DataFrame | None = None, left_out: LeftOut | None = None
):
    """figAll_ld_ratios: per task, tab01's Helix/Full, PCA/Full and Poly/Full (max-over-layers
    LD of the fit patched at the a token over that of the layer patch), side by side per model;
    ``paper``: the paper's tab01 for GPT-J in the same format (task, Full, PCA, ...).  A task
    with no row in a model's tab01 is marked "not run" where its bars would be, with its count
    of correct prompts where ``left_out`` has it ("not run (1 of 77 correct)")."""
    long = ld_ratios_long(tab01)
    models = list(dict.fromkeys(long["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    if paper is not None and len(paper):
        long = pd.concat([long, ld_ratios_long({"paper: gptj": paper})], ignore_index=True)
        palette["paper: gptj"] = PAPER_GREYS[0]
    tasks = [t for t in TASK_ORDER if t in set(long["task"])]
    marks = not_run_marks(models, tasks, {m: set(df["task"]) for m, df in tab01.items()}, left_out)
    fig, axes = plt.subplots(1, len(RATIOS), figsize=(5.2 * len(RATIOS), 4.2), sharey=True, squeeze=False)
    for ax, (_, name) in zip(axes[0], RATIOS):
        sns.barplot(
            long[long["ratio"] == name],
            x="task",
            y="value",
            hue="model",
            order=tasks,
            hue_order=list(palette),
            palette=palette,
            ax=ax,
            legend=ax is axes[0, -1],
        )
        _mark_bars(ax, tasks, list(palette), marks, palette)
        ax.axhline(1.0, color="k", lw=0.6, ls="--")
        ax.set_title(f"{name}")
        ax.set_xlabel("task")
        ax.set_ylabel("max-over-layers LD, fit / layer patch")
        ax.tick_params(axis="x", rotation=30)
    axes[0, -1].legend(title=None, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    suptitle(fig, "fits of h_a patched at the a token, relative to the layer patch (Table 1 per model)")
    return fig

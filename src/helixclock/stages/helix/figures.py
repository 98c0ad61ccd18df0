"""Fig. 3, Fig. 4 and Figs. C1-C7: the helix, its fits and their causal tests."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...plotting.figure_layout import (
    DATA_LABEL,
    left_out,
    legend_outside,
    panel_grid,
    panels_width,
    shared_legend,
    suptitle,
)
from ...plotting.style import METHOD_STYLE, band, layer_name, ld_axes, sns, with_pairs
from ...prompts.tasks import TASKS


def fig03_helix_projection(proj: pd.DataFrame, model: str, periods=(2, 5, 10, 100)):
    """Fig. 3: each a projected through C^+: sin vs cos per period, and the linear component."""
    periods = list(periods)
    fig = plt.figure(figsize=(3.0 * len(periods), 6.2))
    grid = fig.add_gridspec(2, len(periods), height_ratios=[1.2, 1])
    a = proj["a"].to_numpy()
    for i, T in enumerate(periods):
        ax = fig.add_subplot(grid[0, i])
        x, y = proj[f"cos a T={T}"].to_numpy(), proj[f"sin a T={T}"].to_numpy()
        classes = a % T
        palette = "tab10" if T <= 10 else "viridis"
        sns.scatterplot(x=x, y=y, hue=classes, palette=palette, s=16, ax=ax, legend=False, linewidth=0)
        for r in range(0, T, 1 if T <= 10 else 10):
            sel = classes == r
            if sel.any():
                ax.annotate(
                    str(r),
                    (x[sel].mean(), y[sel].mean()),
                    fontsize=8,
                    ha="center",
                    va="center",
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.7),
                    gid=DATA_LABEL,  # at the class's mean: overlaps another only where the classes do
                )
        ax.set_title(f"T = {T}")
        ax.set_xlabel(f"cos(2πa/{T})")
        ax.set_ylabel(f"sin(2πa/{T})")
        ax.set_aspect("equal", adjustable="datalim")
    ax = fig.add_subplot(grid[1, :])
    sns.scatterplot(x=a, y=proj["linear"].to_numpy(), hue=a, palette="viridis", s=14, ax=ax, legend=False, linewidth=0)
    ax.set_xlabel("a")
    ax.set_ylabel("linear component")
    layer = int(proj["layer"].iloc[0]) if "layer" in proj else 0
    suptitle(
        fig,
        f"{model}: a projected onto the T={periods} helix subspace, {layer_name(layer)}"
        "\n(labels: mean of each class a mod T)",
    )
    return fig


def figC1_helix_magnitudes(mags: pd.DataFrame, model: str):
    """Fig. C1: norm of each Fourier column of C (the linear one is on another scale)."""
    part = mags[mags["column"] != "linear"].copy()
    part["feature"] = [c.split(" ")[0] for c in part["column"]]
    part["label"] = [c.replace(" a ", " ") for c in part["column"]]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    sns.barplot(data=part, x="label", y="norm", hue="feature", palette={"cos": "C0", "sin": "C1"}, ax=ax, dodge=False)
    ax.tick_params(axis="x", rotation=45)
    ax.set_xlabel("")
    ax.set_ylabel("‖column of C‖")
    ax.set_title(f"{model}: magnitude of the helix's Fourier features, {layer_name(int(mags['layer'].iloc[0]))}")
    return fig


def figC2_helix_cosine(cos: pd.DataFrame, model: str):
    """Fig. C2: cosine similarity between the columns of C."""
    cols = list(dict.fromkeys(cos["column_1"]))
    M = cos.pivot(index="column_1", columns="column_2", values="cosine").loc[cols, cols]
    labels = [c.replace(" a ", " ") for c in cols]
    fig, ax = plt.subplots(figsize=(6.6, 5.4))
    sns.heatmap(
        pd.DataFrame(M.to_numpy(), index=labels, columns=labels),
        ax=ax,
        cmap="RdBu_r",
        vmin=-1,
        vmax=1,
        annot=True,
        fmt=".1f",
        annot_kws={"fontsize": 6},
        cbar_kws={"label": "cosine similarity"},
    )
    ax.set_title(f"{model}: cosine similarity between columns of C")
    return fig


def figC3_continuity(cont: pd.DataFrame, model: str):
    """Fig. C3: a T=100 helix fitted without the a ending in 3; those a projected into it."""
    fig, ax = plt.subplots(figsize=(5.6, 5.0))
    train, held = cont[~cont["held_out"]], cont[cont["held_out"]]
    sc = ax.scatter(train["cos a T=100"], train["sin a T=100"], c=train["a"], cmap="viridis", s=14, label="fitted a")
    ax.scatter(held["cos a T=100"], held["sin a T=100"], color="C3", marker="*", s=80, label="held-out a (…3)")
    for a, x, y in zip(held["a"], held["cos a T=100"], held["sin a T=100"]):
        ax.annotate(str(a), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8, color="C3", gid=DATA_LABEL)
    fig.colorbar(sc, ax=ax, shrink=0.8, label="a")
    ax.set_xlabel("cos(2πa/100)")
    ax.set_ylabel("sin(2πa/100)")
    ax.set_aspect("equal", adjustable="datalim")
    shared_legend(fig, [ax], "lower", ncols=2)
    ax.set_title(f"{model}: continuity of the T=100 helix")
    return fig


def _references(ax, table: pd.DataFrame) -> None:
    """The references a run of numbers of several tokens has beside its fits: the layer patch of
    all of a's tokens and the clean LD, the clean run's own LD (what patching every clean value
    restores; a reference, not a bound: a single patch may restore more), absent from the
    paper's models' tables."""
    band(ax, table[table["method"] == "layer_span"], "layer patch, all of a's tokens", "0.45")
    band(ax, table[table["method"] == "clean"], "clean LD (clean run's own; a reference, not a bound)", "0.7")


def fig04_helix_patching(sweep: pd.DataFrame, best: pd.DataFrame, model: str):
    """Fig. 4: LD vs layer for layer patch, PCA, best helix and circle per k, polynomial; one
    legend under the panels, each panel's title naming its k's periods.  The paper draws a panel
    for each k = 1..|T|; a run that fits fewer k (a real model's config ``period_subsets: false``:
    k = |T| alone) says which it leaves out."""
    ks = sorted(int(k) for k in best["k"].unique())
    fig, axes = plt.subplots(1, len(ks), figsize=(panels_width(len(ks), 4.0, 7.0), 4.4), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, k in zip(axes, ks):
        band(ax, sweep[sweep["method"] == "layer"], "layer patch", "k")
        _references(ax, sweep)
        band(ax, sweep[(sweep["method"] == "pca") & (sweep["k"] == k)], "PCA (2k + 1 components)", "C0")
        periods = {}
        for kind in ("helix", "circle"):
            row = best[(best["method"] == kind) & (best["k"] == k)]
            if len(row):
                per = row["periods"].iloc[0]
                part = sweep[(sweep["method"] == kind) & (sweep["periods"].astype(str) == str(per))]
                band(ax, part, f"{kind} (the best periods T for k)", METHOD_STYLE[kind][1])
                periods[kind] = f"T=[{per}]"
        band(ax, sweep[(sweep["method"] == "poly") & (sweep["k"] == k)], "polynomial (degree 2k + 1)", "C1")
        same = len(periods) == 2 and len(set(periods.values())) == 1
        names = f"helix and circle {periods['helix']}" if same else ", ".join(f"{m} {t}" for m, t in periods.items())
        ld_axes(ax, with_pairs(f"k = {k}", sweep) + (f"\n{names}" if names else ""), of=sweep)
    shared_legend(fig, axes)
    n_periods = max((len(str(p).split(",")) for p in best["periods"]), default=0)
    unfitted = [k for k in range(1, n_periods + 1) if k not in ks]  # the paper: a panel for each k = 1..|T|
    missing = left_out("not fitted in this run; the paper's are", [f"k = {k}" for k in unfitted])
    title = f"{model}: patching fits of h_a (clean a+b, corrupted a'+b; mean LD, 95% CI)"
    suptitle(fig, title + (f"\n{missing}" if missing else ""), fontsize=11)
    return fig


CONTROL_TITLES = {
    "train/test split": "fit on 80% of a, patch held-out 20%",
    "shuffled a": "helix fitted to shuffled a",
    "b token": "b token: helix(b), pairs a+b' → a+b",
}


def figC5_helix_controls(controls: pd.DataFrame, model: str):
    """Fig. C5: train/test split of a, helix fitted to shuffled a, and the b token."""
    names = list(dict.fromkeys(controls["control"]))
    fig, axes = plt.subplots(1, len(names), figsize=(4.4 * len(names), 3.8), sharey=True)
    for ax, name in zip(np.atleast_1d(axes), names):
        part = controls[controls["control"] == name]
        for method in dict.fromkeys(part["method"]):
            label, color = METHOD_STYLE.get(method, (method, None))
            band(ax, part[part["method"] == method], label, color)
        ld_axes(ax, CONTROL_TITLES.get(name, name), pairs=part)
    shared_legend(fig, np.atleast_1d(axes), "right")
    suptitle(fig, f"{model}: helix controls (mean LD over pairs, 95% CI)")
    return fig


def figC6_helix_ablation(abl: pd.DataFrame, model: str):
    """Fig. C6: mean-ablating the helix subspace of h_a vs mean-ablating h_a entirely."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for method, color in (("entire h_a", "k"), ("helix subspace", "C3")):
        band(ax, abl[abl["method"] == method], f"ablate {method}", color)
    ld_axes(ax, f"{model}: ablation at the a token", pairs=abl)
    ax.set_ylabel("change of the clean answer's logit")
    legend_outside(ax)
    return fig


def figC7_other_tasks_patching(curves: pd.DataFrame, left_out_tasks: pd.DataFrame, model: str):
    """Fig. C7: full fits patched at the a token on the tasks the model has, one legend under the
    panels; a task left out of Table 1 (``left_out_tasks``: helix/other_tasks_left_out.csv, too few
    correct prompts for pairs or a fit) has no panel, and the title names it."""
    tasks = list(dict.fromkeys(curves["task"]))
    fig, axes = panel_grid(len(tasks), 3, (4.2, 3.6), least=6.5)
    for ax, task in zip(axes, tasks):
        part = curves[curves["task"] == task]
        _references(ax, part)
        for method in ("layer", "pca", "helix", "circle", "poly"):
            label, color = METHOD_STYLE[method]
            band(ax, part[part["method"] == method], label, color)
        ld_axes(ax, TASKS[task].label if task in TASKS else task, pairs=part)
    shared_legend(fig, axes)
    labels = [f"{row.label} ({row.found}/{row.minimum})" for row in left_out_tasks.itertuples()]
    missing = left_out("too few correct prompts for the pairs or the fit: found/needed", labels)
    title = f"{model}: fits of h_a patched on other tasks (mean LD, 95% CI)" + (f"\n{missing}" if missing else "")
    suptitle(fig, title)
    return fig


NESTED_TOKENS = {
    "a": "at a's last token (fits over a)",
    "last": "at the last prompt token (fits over a+b)",
    "p*": "at the first differing token p* (fits over a+b)",
}
NESTED_FITS = (("ld_digits", "digits (one-hot + classes)", "C7"), ("ld_placebo", "digits + placebo circle", "C1"))
NESTED_GAPS = (
    ("increment", "", "difference: digits + T=100 − digits", "C0"),
    ("placebo_gap", "placebo_", "difference: digits + T=100 − digits + placebo", "C2"),
)


def _as_band(table: pd.DataFrame, mean: str, low: str, high: str) -> pd.DataFrame:
    return table.assign(ld_mean=table[mean], ld_low=table[low], ld_high=table[high])


def _nested_panels(nested: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Fig. N2's columns: each token read, in :data:`NESTED_TOKENS`' order, the first differing
    token once per stratum (answer tokens, p*), with its title and rows."""
    panels = []
    for token, title in NESTED_TOKENS.items():
        part = nested[nested["token"] == token]
        if not len(part):
            continue
        if token != "p*":
            panels.append((title, part.copy()))
            continue
        for (k, j), stratum in part.groupby(["answer_tokens", "p_star"]):
            panels.append((f"{title}:\n{int(k)}-token answers, p* = {int(j)}", stratum.copy()))
    return panels


def figN2_causal_nested(nested: pd.DataFrame, model: str):
    """Fig. N2 (helixclock's, beside Fig. 4 and Table 1): the causal nested T = 100 test by layer,
    a column per token read.  Top: the mean LD of the three held-out fits patched in (the digits,
    the digits with the T = 100 circle, the digits with the placebo circle); bottom: the paired
    differences the test reads, T = 100 against each rival, with their 95% t intervals (the
    verdicts, Holm over the layers on the larger one-sided p, are the findings page's)."""
    panels = _nested_panels(nested)
    fig, axes = plt.subplots(2, len(panels), figsize=(panels_width(len(panels), 5.0, 7.0), 7.2), squeeze=False)
    for j, (title, part) in enumerate(panels):
        part.attrs["ld"] = str(part["ld"].iloc[0])  # what LD is here (the y axis names it)
        top, bottom = axes[0, j], axes[1, j]
        for col, label, color in NESTED_FITS[:1] + (("ld_t100", "digits + T=100 circle", "C3"),) + NESTED_FITS[1:]:
            band(top, _as_band(part, col, f"{col}_low", f"{col}_high"), label, color)
        ld_axes(top, with_pairs(title, part), of=part)
        for col, prefix, label, color in NESTED_GAPS:
            band(bottom, _as_band(part, col, f"{prefix}low", f"{prefix}high"), label, color)
        angles = part.iloc[0]
        placebo = f"{angles['angle_placebo_1']:.0f}°, {angles['angle_placebo_2']:.0f}°"
        digits = f"{angles['angle_digits_1']:.0f}°, {angles['angle_digits_2']:.0f}°"
        note = (
            f"placebo σ = {angles['sigma']}; principal angles of T=100's plane:\n"
            f"non-additive parts to the placebo's {placebo}; to the digits' span {digits}"
        )
        ld_axes(bottom, f"paired differences, the test's two arms\n{note}", of=part)
        bottom.title.set_fontsize(8)
        bottom.set_ylabel("LD difference")
    shared_legend(fig, axes.ravel())
    suptitle(
        fig, f"{model}: held-out fits of h patched in (mean LD, 95% CI); the causal nested T = 100 test", fontsize=11
    )
    return fig

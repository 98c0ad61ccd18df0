"""Figures of the paper, drawn from saved tables (never from the model)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .tables import accuracy_grid  # noqa: E402

plt.rcParams.update({"figure.dpi": 100, "axes.spines.top": False, "axes.spines.right": False,
                     "font.size": 10})


def accuracy_heatmap(df: pd.DataFrame, model: str):
    """figA1: correct (1) / wrong (0) over the 100 x 100 grid of a+b."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    grid = accuracy_grid(df)
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    ax.imshow(grid, origin="lower", cmap=ListedColormap(["#d62728", "#2ca02c"]), vmin=0, vmax=1,
              interpolation="nearest", aspect="equal")
    ax.set_xlabel("b")
    ax.set_ylabel("a")
    ax.set_title(f"{model}: a+b accuracy {np.nanmean(grid):.2%}")
    ax.legend(handles=[Patch(color="#2ca02c", label="correct"), Patch(color="#d62728", label="wrong")],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def layer_name(resid_layer: int) -> str:
    """resid_pre[l] in the paper's words: the output of layer l-1 (l = 0: the embedding)."""
    return "embedding (resid_pre[0])" if resid_layer == 0 else f"layer {resid_layer - 1} output (resid_pre[{resid_layer}])"


def _spectrum_axis(ax, spec: pd.DataFrame, label: str | None = None, annotate: int = 0, color=None):
    ax.plot(spec["period"], spec["magnitude"], lw=1.2, label=label, color=color)
    ax.set_xscale("log")
    ax.set_xlabel("period T (numbers)")
    ax.set_ylabel("mean |FFT| over model dims")
    if annotate:
        top = spec.nlargest(annotate, "magnitude")
        for row in top.itertuples():
            ax.annotate(f"T={row.period:.3g}", (row.period, row.magnitude), textcoords="offset points",
                        xytext=(0, 4), ha="center", fontsize=8)


def fourier_pc1(spectrum: pd.DataFrame, pc1: pd.DataFrame, model: str, n: int = 360):
    """Fig. 2: spectrum of the layer-0 output over 0..n-1 (top), PC1 of 0..99 vs a (bottom)."""
    spec = spectrum[spectrum["n_numbers"] == n]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.5, 6.4))
    _spectrum_axis(top, spec, annotate=6)
    top.set_title(f"{model}: Fourier spectrum of the {layer_name(int(spec['layer'].iloc[0]))}, a in [0, {n - 1}]")
    small = pc1[pc1["range"] == pc1["range"].iloc[0]]
    bottom.scatter(small["a"], small["pc1"], s=10, label="PC1")
    bottom.plot(small["a"], small["line"], color="C3", label=f"line fit, R² = {small['line_r2'].iloc[0]:.3f}")
    bottom.set_xlabel("a")
    bottom.set_ylabel("PC1")
    bottom.set_title(f"PC1 of a in [{small['a'].min()}, {small['a'].max()}] "
                     f"({small['explained_variance'].iloc[0]:.0%} of variance)")
    bottom.legend(frameon=False)
    fig.tight_layout()
    return fig


def fourier_360_vs_361(spectrum: pd.DataFrame, model: str, n: int = 360):
    """Fig. B1: the spectrum for n vs n+1 numbers (T = 2 is exact only for an even count)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, count, color in zip(axes, (n, n + 1), ("C0", "C1")):
        _spectrum_axis(ax, spectrum[spectrum["n_numbers"] == count], annotate=4, color=color)
        ax.set_title(f"a in [0, {count - 1}] ({count} numbers)")
    fig.suptitle(f"{model}: spectrum of the {layer_name(int(spectrum['layer'].iloc[0]))}, {n} vs {n + 1} numbers")
    fig.tight_layout()
    return fig


def distance_similarity(sim: pd.DataFrame, model: str, layer: int = 1):
    """Fig. B2: Euclidean distance and cosine similarity between all pairs a1, a2."""
    n = int(sim["a1"].max()) + 1
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, col, cmap, title in zip(axes, ("distance", "cosine"), ("viridis", "RdBu_r"),
                                    ("Euclidean distance", "cosine similarity")):
        im = ax.imshow(sim[col].to_numpy().reshape(n, n), origin="lower", cmap=cmap)
        ax.set_xlabel("a2")
        ax.set_ylabel("a1")
        ax.set_title(title)
        fig.colorbar(im, ax=ax, shrink=0.85)
    fig.suptitle(f"{model}: {layer_name(layer)} of a in [0, {n - 1}]")
    fig.tight_layout()
    return fig


def delta_n_distance_plot(dn: pd.DataFrame, model: str, layer: int = 1):
    """Fig. B3: mean distance between a and a+dn vs dn, for two ranges of a."""
    ranges = list(dict.fromkeys(dn["a_range"]))
    fig, axes = plt.subplots(1, len(ranges), figsize=(10, 3.6))
    for ax, rng in zip(np.atleast_1d(axes), ranges):
        part = dn[dn["a_range"] == rng]
        ax.plot(part["delta_n"], part["mean_distance"], marker=".", ms=3)
        ax.set_xlabel("δn")
        ax.set_ylabel("mean ‖h(a+δn) − h(a)‖")
        ax.set_title(f"a in [{rng.replace('-', ', ')}]")
    fig.suptitle(f"{model}: distance between a and a+δn, {layer_name(layer)}")
    fig.tight_layout()
    return fig


def pc1_all(pc1: pd.DataFrame, model: str, layer: int = 1):
    """Fig. B4: PC1 over every cached number (the paper sees a jump at 100)."""
    part = pc1[pc1["range"] == pc1["range"].iloc[-1]]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.scatter(part["a"], part["pc1"], s=6)
    ax.axvline(100, color="grey", ls="--", lw=0.8, label="a = 100")
    ax.set_xlabel("a")
    ax.set_ylabel("PC1")
    ax.set_title(f"{model}: PC1 of the {layer_name(layer)}, a in [0, {int(part['a'].max())}]")
    ax.legend(frameon=False)
    return fig


METHOD_STYLE = {"layer": ("layer patch", "k"), "pca": ("PCA", "C0"), "helix": ("helix", "C3"),
                "circle": ("circle", "C2"), "poly": ("polynomial", "C1"),
                "helix (shuffled a)": ("helix, shuffled a", "C4")}


def _curve(ax, part: pd.DataFrame, label: str, color, x: str = "layer"):
    part = part.sort_values(x)
    ax.plot(part[x], part["ld_mean"], marker="o", ms=3, lw=1.4, label=label, color=color)
    ax.fill_between(part[x], part["ld_low"], part["ld_high"], color=color, alpha=0.15, lw=0)


def _ld_axes(ax, title: str):
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_xlabel("layer (resid_pre)")
    ax.set_ylabel("logit difference")
    ax.set_title(title, fontsize=10)


def helix_projection(proj: pd.DataFrame, model: str, periods=(2, 5, 10, 100)):
    """Fig. 3: each a projected through C^+: sin vs cos per period, and the linear component."""
    periods = list(periods)
    fig = plt.figure(figsize=(3.0 * len(periods), 6.2))
    grid = fig.add_gridspec(2, len(periods), height_ratios=[1.2, 1])
    a = proj["a"].to_numpy()
    for i, T in enumerate(periods):
        ax = fig.add_subplot(grid[0, i])
        x, y = proj[f"cos a T={T}"].to_numpy(), proj[f"sin a T={T}"].to_numpy()
        classes = a % T
        cmap = plt.get_cmap("tab10" if T <= 10 else "viridis")
        color = cmap(classes / max(T - 1, 1)) if T > 10 else cmap(classes % 10)
        ax.scatter(x, y, c=color, s=12)
        step = 1 if T <= 10 else 10
        for r in range(0, T, step):
            sel = classes == r
            if sel.any():
                ax.annotate(str(r), (x[sel].mean(), y[sel].mean()), fontsize=8, ha="center", va="center",
                            bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.7))
        ax.set_title(f"T = {T}")
        ax.set_xlabel(f"cos(2πa/{T})")
        ax.set_ylabel(f"sin(2πa/{T})")
        ax.set_aspect("equal", adjustable="datalim")
    ax = fig.add_subplot(grid[1, :])
    ax.scatter(a, proj["linear"], s=10, c=a, cmap="viridis")
    ax.set_xlabel("a")
    ax.set_ylabel("linear component")
    layer = int(proj["layer"].iloc[0]) if "layer" in proj else 0
    fig.suptitle(f"{model}: a projected onto the T={periods} helix subspace, {layer_name(layer)}"
                 "\n(labels: mean of each class a mod T)")
    fig.tight_layout()
    return fig


def helix_magnitudes(mags: pd.DataFrame, model: str):
    """Fig. C1: norm of each Fourier column of C (the linear one is on another scale)."""
    part = mags[mags["column"] != "linear"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    colors = ["C0" if c.startswith("cos") else "C1" for c in part["column"]]
    ax.bar(range(len(part)), part["norm"], color=colors)
    ax.set_xticks(range(len(part)), [c.replace(" a ", " ") for c in part["column"]], rotation=45, ha="right")
    ax.set_ylabel("‖column of C‖")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="C0", label="cos"), Patch(color="C1", label="sin")], frameon=False)
    ax.set_title(f"{model}: magnitude of the helix's Fourier features, {layer_name(int(mags['layer'].iloc[0]))}")
    return fig


def helix_cosine(cos: pd.DataFrame, model: str):
    """Fig. C2: cosine similarity between the columns of C."""
    cols = list(dict.fromkeys(cos["column_1"]))
    M = cos.pivot(index="column_1", columns="column_2", values="cosine").loc[cols, cols].to_numpy()
    fig, ax = plt.subplots(figsize=(6.2, 5.2))
    im = ax.imshow(M, cmap="RdBu_r", vmin=-1, vmax=1)
    labels = [c.replace(" a ", " ") for c in cols]
    ax.set_xticks(range(len(cols)), labels, rotation=60, ha="right")
    ax.set_yticks(range(len(cols)), labels)
    for i in range(len(cols)):
        for j in range(len(cols)):
            ax.text(j, i, f"{M[i, j]:.1f}", ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, shrink=0.8, label="cosine similarity")
    ax.set_title(f"{model}: cosine similarity between columns of C")
    return fig


def continuity(cont: pd.DataFrame, model: str):
    """Fig. C3: a T=100 helix fitted without the a ending in 3; those a projected into it."""
    fig, ax = plt.subplots(figsize=(5.4, 5.0))
    train, held = cont[~cont["held_out"]], cont[cont["held_out"]]
    sc = ax.scatter(train["cos a T=100"], train["sin a T=100"], c=train["a"], cmap="viridis", s=14, label="fitted a")
    ax.scatter(held["cos a T=100"], held["sin a T=100"], color="C3", marker="*", s=80, label="held-out a (…3)")
    for a, x, y in zip(held["a"], held["cos a T=100"], held["sin a T=100"]):
        ax.annotate(str(a), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8, color="C3")
    fig.colorbar(sc, ax=ax, shrink=0.8, label="a")
    ax.set_xlabel("cos(2πa/100)")
    ax.set_ylabel("sin(2πa/100)")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(frameon=False, loc="lower left")
    ax.set_title(f"{model}: continuity of the T=100 helix")
    return fig


def helix_patching(sweep: pd.DataFrame, best: pd.DataFrame, model: str):
    """Fig. 4: LD vs layer for layer patch, PCA, best helix and circle per k, polynomial."""
    ks = sorted(int(k) for k in best["k"].unique())
    fig, axes = plt.subplots(1, len(ks), figsize=(4.0 * len(ks), 3.8), sharey=True)
    for ax, k in zip(np.atleast_1d(axes), ks):
        _curve(ax, sweep[sweep["method"] == "layer"], "layer patch", "k")
        _curve(ax, sweep[(sweep["method"] == "pca") & (sweep["k"] == k)], f"PCA ({2 * k + 1} comps)", "C0")
        for kind in ("helix", "circle"):
            row = best[(best["method"] == kind) & (best["k"] == k)]
            if len(row):
                per = row["periods"].iloc[0]
                part = sweep[(sweep["method"] == kind) & (sweep["periods"].astype(str) == str(per))]
                _curve(ax, part, f"{kind} T=[{per}]", METHOD_STYLE[kind][1])
        _curve(ax, sweep[(sweep["method"] == "poly") & (sweep["k"] == k)], f"poly (deg {2 * k + 1})", "C1")
        _ld_axes(ax, f"k = {k}")
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle(f"{model}: patching fits of h_a (clean a+b, corrupted a'+b; mean over pairs, 95% CI)")
    fig.tight_layout()
    return fig


def helix_controls(controls: pd.DataFrame, model: str):
    """Fig. C5: train/test split of a, helix fitted to shuffled a, and the b token."""
    names = list(dict.fromkeys(controls["control"]))
    fig, axes = plt.subplots(1, len(names), figsize=(4.4 * len(names), 3.8), sharey=True)
    titles = {"train/test split": "fit on 80% of a, patch held-out 20%",
              "shuffled a": "helix fitted to shuffled a", "b token": "b token: helix(b), pairs a+b' → a+b"}
    for ax, name in zip(np.atleast_1d(axes), names):
        part = controls[controls["control"] == name]
        for method in dict.fromkeys(part["method"]):
            label, color = METHOD_STYLE.get(method, (method, None))
            _curve(ax, part[part["method"] == method], label, color)
        _ld_axes(ax, titles.get(name, name))
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle(f"{model}: helix controls (mean LD over pairs, 95% CI)")
    fig.tight_layout()
    return fig


def helix_ablation(abl: pd.DataFrame, model: str):
    """Fig. C6: mean-ablating the helix subspace of h_a vs mean-ablating h_a entirely."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for method, color in (("entire h_a", "k"), ("helix subspace", "C3")):
        _curve(ax, abl[abl["method"] == method], f"ablate {method}", color)
    _ld_axes(ax, f"{model}: ablation at the a token")
    ax.set_ylabel("change of the clean answer's logit")
    ax.legend(frameon=False)
    return fig


def other_tasks_patching(curves: pd.DataFrame, model: str):
    """Fig. C7: full fits patched at the a token on six tasks."""
    from .tasks import TASKS

    tasks = list(dict.fromkeys(curves["task"]))
    cols = 3
    rows = int(np.ceil(len(tasks) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax, task in zip(axes.ravel(), tasks):
        part = curves[curves["task"] == task]
        for method in ("layer", "pca", "helix", "circle", "poly"):
            label, color = METHOD_STYLE[method]
            _curve(ax, part[part["method"] == method], label, color)
        _ld_axes(ax, TASKS[task].label if task in TASKS else task)
    for ax in axes.ravel()[len(tasks):]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"{model}: fits of h_a patched on other tasks (mean LD, 95% CI)")
    fig.tight_layout()
    return fig


def last_token_helix(curves: pd.DataFrame, model: str):
    """Fig. 5: last-token fits patched at every layer."""
    fig, ax = plt.subplots(figsize=(7, 4))
    colors = {"layer patch": "k", "helix(a,b,a+b)": "C3", "helix(a+b)": "C2", "helix(a,b)": "C1"}
    for fit in dict.fromkeys(curves["fit"]):
        n = curves.loc[curves["fit"] == fit, "n_params"].iloc[0]
        label = fit if fit == "layer patch" or fit.startswith("PCA") else f"{fit} ({int(n)} params)"
        _curve(ax, curves[curves["fit"] == fit], label, colors.get(fit, "C0"))
    _ld_axes(ax, f"{model}: fits of the last-token residual (clean a+b, corrupted a'+b')")
    ax.legend(frameon=False, fontsize=8)
    return fig


def layer_patching(effects: pd.DataFrame, model: str):
    """Fig. 6: TE and DE of each attention and MLP layer at the last token."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, comp in zip(axes, ("MLP", "attention")):
        part = effects[effects["component"] == comp].sort_values("layer")
        x = part["layer"].to_numpy()
        ax.bar(x - 0.2, part["te"], width=0.4, label="total effect (activation patching)", color="C0",
               yerr=[part["te"] - part["te_low"], part["te_high"] - part["te"]], capsize=2)
        ax.bar(x + 0.2, part["de"], width=0.4, label="direct effect (path patching)", color="C1",
               yerr=[part["de"] - part["de_low"], part["de_high"] - part["de"]], capsize=2)
        _ld_axes(ax, f"{comp} outputs at the last token")
        ax.set_xlabel("layer")
        ax.legend(frameon=False, fontsize=8)
    fig.suptitle(f"{model}: which layers compute a+b")
    fig.tight_layout()
    return fig


def _head_grid(df: pd.DataFrame, col: str) -> np.ndarray:
    L, H = int(df["layer"].max()) + 1, int(df["head"].max()) + 1
    grid = np.full((L, H), np.nan)
    grid[df["layer"].to_numpy(), df["head"].to_numpy()] = df[col].to_numpy()
    return grid


def head_patching(effects: pd.DataFrame, model: str):
    """Fig. D2: total (and direct) effect of every head at the last token."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, col, title in zip(axes, ("te", "de"), ("total effect", "direct effect")):
        grid = _head_grid(effects, col)
        lim = np.nanmax(np.abs(grid)) or 1.0
        im = ax.imshow(grid, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", origin="lower")
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_title(title)
        ax.set_xticks(range(grid.shape[1]))
        fig.colorbar(im, ax=ax, label="logit difference")
    fig.suptitle(f"{model}: attention heads patched at the last token")
    fig.tight_layout()
    return fig


def _fraction_curve(ax, curve: pd.DataFrame, x: str, threshold: float | None, label: str):
    ax.plot(curve[x], curve["fraction"], marker="o", ms=3)
    ax.fill_between(curve[x], curve["ld_low"] / curve["all_effect"], curve["ld_high"] / curve["all_effect"],
                    alpha=0.15, lw=0)
    if threshold is not None:
        ax.axhline(threshold, color="grey", ls="--", lw=0.8, label=f"{threshold:.0%}")
    ax.set_xlabel(label)
    ax.set_ylabel("fraction of the all-components effect")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _topk_figure(topk: pd.DataFrame, model: str, what: str, annotate: bool = False):
    thr = float(topk["threshold"].iloc[0])
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    _fraction_curve(ax, topk, "k", thr, f"k ({what} patched, by total effect)")
    k = int(topk["smallest_k"].iloc[0])
    ax.axvline(k, color="C3", ls=":", lw=1, label=f"smallest k for {thr:.0%}: {k}")
    if annotate:
        for x, y, name in zip(topk["k"], topk["fraction"], topk["added"]):
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(0, -12), fontsize=7, ha="center")
    ax.legend(frameon=False)
    ax.set_title(f"{model}: top-k {what} vs all {len(topk)} {what}")
    return fig


def head_topk(topk: pd.DataFrame, model: str):
    """Fig. D3: top-k heads by TE patched together."""
    return _topk_figure(topk, model, "heads")


def head_helix_fit(effects: pd.DataFrame, model: str):
    """Fig. D4: fraction of each head's TE kept by its helix(a,b,a+b) fit."""
    fig, ax = plt.subplots(figsize=(6, 4.4))
    frac = effects["fit_all"] / effects["te"]
    weak = effects["te"].abs() < 0.05 * effects["te"].abs().max()  # ratios of negligible effects are noise
    df = effects.assign(fraction=np.where(weak, np.nan, frac))
    grid = _head_grid(df, "fraction")
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
    fig.colorbar(im, ax=ax, label="helix(a,b,a+b) fit LD / TE")
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_xticks(range(grid.shape[1]))
    ax.set_title(f"{model}: heads modelled by helix(a,b,a+b)\n(blank: TE below 5% of the largest)")
    return fig


def mixed_heads(mixed: pd.DataFrame, model: str):
    """Fig. D5: effect of the categorised top heads vs the number of mixed heads."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    _fraction_curve(ax, mixed, "m", 0.8, "m (least confident heads allowed to be mixed)")
    ax.set_ylabel("fraction of patching the top heads' actual outputs")
    ax.legend(frameon=False)
    ax.set_title(f"{model}: a,b heads as helix(a,b), a+b heads as helix(a+b) to the logits")
    return fig


CATEGORY_COLOR = {"a,b": "C0", "a+b": "C3", "mixed": "C2"}


def head_categories(props: pd.DataFrame, model: str):
    """Fig. D6: per category, the heads' layers and where they attend from the last token."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    cats = [c for c in CATEGORY_COLOR if c in set(props["category"])]
    for i, cat in enumerate(cats):
        part = props[props["category"] == cat]
        jitter = np.linspace(-0.15, 0.15, len(part)) if len(part) > 1 else np.zeros(1)
        axes[0].scatter(np.full(len(part), i) + jitter, part["layer"], color=CATEGORY_COLOR[cat], s=30)
        axes[1].scatter(np.full(len(part), i) + jitter, part["attn_last"], color=CATEGORY_COLOR[cat], s=30)
        axes[2].scatter(part["attn_a"], part["attn_b"], color=CATEGORY_COLOR[cat], s=30, label=f"{cat} ({len(part)})")
    for ax, ylabel in zip(axes[:2], ("layer", "attention to the last token")):
        ax.set_xticks(range(len(cats)), [f"{c} heads" for c in cats])
        ax.set_ylabel(ylabel)
    axes[0].yaxis.get_major_locator().set_params(integer=True)
    axes[2].set_xlabel("attention to the a token")
    axes[2].set_ylabel("attention to the b token")
    axes[2].legend(frameon=False)
    fig.suptitle(f"{model}: properties of the top heads by category")
    fig.tight_layout()
    return fig


def head_paths(paths: pd.DataFrame, model: str):
    """Fig. D7: heads as senders (effect through each downstream component) and as
    receivers (dependence on each upstream component)."""
    groups = list(dict.fromkeys(zip(paths["analysis"], paths["role"], paths["head"])))
    if not groups:
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.text(0.5, 0.5, "no heads in the categories with paths", ha="center")
        ax.axis("off")
        return fig
    fig, axes = plt.subplots(len(groups), 1, figsize=(max(7, 0.25 * paths.groupby("head").size().max()), 2.8 * len(groups)),
                             squeeze=False)
    for ax, (analysis, role, head) in zip(axes[:, 0], groups):
        part = paths[(paths["analysis"] == analysis) & (paths["head"] == head) & (paths["role"] == role)]
        part = part.sort_values(["other_layer", "other_kind"])
        colors = ["C1" if k == "MLP" else "C0" for k in part["other_kind"]]
        ax.bar(range(len(part)), part["ld_mean"], color=colors)
        step = max(1, len(part) // 40)
        ax.set_xticks(range(0, len(part), step), part["other"].iloc[::step], rotation=90, fontsize=7)
        verb = "sends through" if analysis == "sender" else "receives from"
        ax.set_title(f"{role} {head} as {analysis}: effect of the path it {verb} each component", fontsize=9)
        ax.set_ylabel("logit difference")
        ax.axhline(0, color="grey", lw=0.6)
    from matplotlib.patches import Patch

    axes[0, 0].legend(handles=[Patch(color="C1", label="MLP"), Patch(color="C0", label="head")], frameon=False)
    fig.suptitle(f"{model}: path patching of heads")
    fig.tight_layout()
    return fig


def mlp_topk(topk: pd.DataFrame, model: str):
    """Fig. D8: top-k MLPs by TE patched together (each point names the MLP it adds)."""
    return _topk_figure(topk, model, "MLPs", annotate=True)


def mlp_stages(stages: pd.DataFrame, model: str):
    """Fig. 7: per circuit MLP, helix(a+b)/TE and DE/TE."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    x = stages["layer"].to_numpy()
    ax.plot(x, stages["helix_sum_over_te"], marker="o", color="C2", label="helix(a+b) / TE")
    ax.plot(x, stages["de_over_te"], marker="s", color="C1", label="DE / TE")
    ax.set_xticks(x, [f"MLP{l}" for l in x])
    ax.set_ylabel("fraction of total effect")
    ax.axhline(0, color="grey", lw=0.6)
    ax.legend(frameon=False)
    ax.set_title(f"{model}: circuit MLPs build (helix) or read out (DE) a+b")
    return fig

"""Fig. 2 and Figs. B1-B4: the structure of bare number tokens."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from ...plotting.figure_layout import legend_outside, shared_legend, suptitle
from ...plotting.style import PALETTE, heatmap, layer_name, sns

# The paper's periods: those its Fig. 2 is about (Sec. 4.1: high-frequency components at T = 2, 5
# and 10 in GPT-J's spectrum) and the helix's T = 100 (Sec. 4.2).  The spectrum labels each where
# it peaks, in red
PAPER_PERIODS = (2, 5, 10, 100)
# T = 2.5 = 5/2 = 10/4, a harmonic of T = 5 and 10 (a period-5 or period-10 feature that is not a
# pure sinusoid peaks there too), which the paper does not name: labelled where it peaks as well,
# in the grey of the other peaks, so a peak there is not taken for one of the paper's
HARMONICS = (2.5,)
OTHER_PEAKS = "0.4"  # their colour


def paper_peaks(spec: pd.DataFrame, periods=PAPER_PERIODS) -> pd.DataFrame:
    """For each period T of ``periods``, the bin of the spectrum (one count of numbers n) where T
    peaks: the stronger of the two Fourier frequencies nearest n / T (T's own when T divides n;
    none where the spectrum lacks both, e.g. T = 2 with the Nyquist bin dropped).  Columns
    ``paper_period`` and the spectrum's own."""
    n = int(spec["n_numbers"].iloc[0])
    rows = []
    for T in periods:
        k = n / T
        near = spec[spec["frequency"].isin({int(np.floor(k)), int(np.ceil(k))})]
        if len(near):
            rows.append(near.loc[near["magnitude"].idxmax()].to_frame().T.assign(paper_period=T))
    return pd.concat(rows, ignore_index=True) if rows else spec.iloc[:0].assign(paper_period=[])


def _peak_label(ax, period: float, magnitude: float, text: str, color) -> None:
    ax.annotate(
        text,
        (period, magnitude),
        textcoords="offset points",
        xytext=(0, 4),
        ha="center",
        va="bottom",
        rotation=90,
        fontsize=8,
        color=color,
    )


def _spectrum_axis(ax, spec: pd.DataFrame, others: int = 0, color=None):
    """The spectrum against the period (log axis), the paper's periods labelled (red, a dot on the
    peak; "T=90 ≈ 100" where the count has no bin at T), T = 2.5 (grey, a dot on the peak) and the
    ``others`` strongest peaks beside them (grey), every label upright above its peak."""
    sns.lineplot(x=spec["period"].to_numpy(), y=spec["magnitude"].to_numpy(), ax=ax, lw=1.2, color=color, errorbar=None)
    ax.set_xscale("log")
    ax.set_xlabel("period T (numbers)")
    ax.set_ylabel("mean |FFT| over model dims")
    labelled = []
    for periods, color in ((PAPER_PERIODS, PALETTE["highlight"]), (HARMONICS, OTHER_PEAKS)):
        for row in paper_peaks(spec, periods).itertuples():
            near = abs(row.period - row.paper_period) < 0.02 * row.paper_period
            text = f"T={row.paper_period:g}" if near else f"T={row.period:.3g} ≈ {row.paper_period:g}"
            ax.plot([row.period], [row.magnitude], "o", ms=3, color=color)
            _peak_label(ax, row.period, row.magnitude, text, color)
            labelled.append(float(row.period))
    extra = 0
    for row in spec.sort_values("magnitude", ascending=False).itertuples():
        if extra == others:
            break
        if all(abs(np.log(row.period / q)) > 0.2 for q in labelled):  # labels apart from each other
            _peak_label(ax, row.period, row.magnitude, f"T={row.period:.3g}", OTHER_PEAKS)
            labelled.append(row.period)
            extra += 1
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.45 * (high - low))  # room for the upright labels


def fig02_fourier_pc1(spectrum: pd.DataFrame, pc1: pd.DataFrame, model: str):
    """Fig. 2: spectrum of the layer-0 output over 0..n-1 (top), PC1 of 0..99 vs a (bottom)."""
    spec = spectrum[spectrum["main"]]
    n = int(spec["n_numbers"].iloc[0])
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.5, 6.4))
    _spectrum_axis(top, spec, others=3)
    if spec["compat"].iloc[0] == "authors":
        top.set_ylabel("mean |FFT|² over model dims (uncentred)")
    suptitle(
        fig,
        f"{model}: Fourier spectrum of a in [0, {n - 1}]\nat the {layer_name(int(spec['layer'].iloc[0]))}"
        "\n(red: the paper's periods T = 2, 5, 10, 100, where they peak;"
        " grey: T = 2.5, a harmonic of 5 and 10, and the strongest other peaks)",
        fontsize=11,
    )
    small = pc1[pc1["range"] == pc1["range"].iloc[0]]
    sns.scatterplot(x=small["a"].to_numpy(), y=small["pc1"].to_numpy(), ax=bottom, s=14, label="PC1", linewidth=0)
    bottom.plot(small["a"], small["line"], color="C3", label=f"line fit, R² = {small['line_r2'].iloc[0]:.3f}")
    bottom.set_xlabel("a")
    bottom.set_ylabel("PC1")
    bottom.set_title(
        f"PC1 of a in [{small['a'].min()}, {small['a'].max()}] ({small['explained_variance'].iloc[0]:.0%} of variance)"
    )
    legend_outside(bottom)
    return fig


def figB1_fourier_360_vs_361(spectrum: pd.DataFrame, model: str, n: int = 360):
    """Fig. B1: the spectrum for n vs n+1 numbers.  T = 2 is a frequency of the transform only
    for an even count; the authors' estimator also drops that (Nyquist) bin, so whether T = 2
    shows depends on the count's parity: a binning artefact, not a property of the model."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, count, color in zip(axes, (n, n + 1), ("C0", "C1")):
        _spectrum_axis(ax, spectrum[spectrum["n_numbers"] == count], others=2, color=color)
        ax.set_title(f"a in [0, {count - 1}] ({count} numbers)")
    authors = spectrum["compat"].iloc[0] == "authors"
    how = (
        "authors' estimator: uncentred |FFT|², Nyquist bin dropped"
        if authors
        else "centred |FFT|; T = 2 is a Fourier frequency only for an even count"
    )
    where = layer_name(int(spectrum["layer"].iloc[0]))
    suptitle(
        fig,
        f"{model}: spectrum of the {where}, {n} vs {n + 1} numbers\n({how};"
        " red: the paper's periods T = 2, 5, 10, 100; grey: T = 2.5 and other peaks)",
    )
    return fig


def figB2_distance_similarity(sim: pd.DataFrame, model: str, layer: int = 1):
    """Fig. B2: Euclidean distance and cosine similarity between all pairs a1, a2."""
    n = int(sim["a1"].max()) + 1
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.4))
    for ax, col, cmap, name in zip(
        axes, ("distance", "cosine"), ("viridis", "RdBu_r"), ("Euclidean distance", "cosine similarity")
    ):
        heatmap(
            ax,
            sim[col].to_numpy().reshape(n, n),
            cmap,
            name,
            center=0 if col == "cosine" else None,
            xlabel="a2",
            ylabel="a1",
            ticks=10,
        )
        ax.set_title(name)
    suptitle(fig, f"{model}: {layer_name(layer)} of a in [0, {n - 1}]")
    return fig


def figB3_delta_n_distance(dn: pd.DataFrame, model: str, layer: int = 1):
    """Fig. B3: mean distance between a and a+dn vs dn, for two ranges of a."""
    ranges = list(dict.fromkeys(dn["a_range"]))
    fig, axes = plt.subplots(1, len(ranges), figsize=(10, 3.6))
    for ax, rng in zip(np.atleast_1d(axes), ranges):
        part = dn[dn["a_range"] == rng]
        sns.lineplot(x=part["delta_n"].to_numpy(), y=part["mean_distance"].to_numpy(), ax=ax, marker=".", errorbar=None)
        ax.set_xlabel("δn")
        ax.set_ylabel("mean ‖h(a+δn) − h(a)‖")
        ax.set_title(f"a in [{rng.replace('-', ', ')}]")
    suptitle(fig, f"{model}: distance between a and a+δn, {layer_name(layer)}")
    return fig


def figB4_pc1_360(pc1: pd.DataFrame, model: str, layer: int = 1):
    """Fig. B4: PC1 over every cached number (the paper sees a jump at 100)."""
    part = pc1[pc1["range"] == pc1["range"].iloc[-1]]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    sns.scatterplot(x=part["a"].to_numpy(), y=part["pc1"].to_numpy(), ax=ax, s=8, linewidth=0)
    ax.axvline(100, color="grey", ls="--", lw=0.8, label="a = 100")
    ax.set_xlabel("a")
    ax.set_ylabel("PC1")
    ax.set_title(f"{model}: PC1 of the {layer_name(layer)}, a in [0, {int(part['a'].max())}]")
    legend_outside(ax)
    return fig


BASIS_COLOR = {"units digit": "0.5", "helix": "C3", "digit circles": "C0", "digit-count classes": "C2"}


def figN1_number_bases(r2: pd.DataFrame, winner: pd.DataFrame, peaks: pd.DataFrame, *rest):
    """helixclock's test of what a number's last token encodes (docs/several-tokens.md, "Numbers of several
    tokens"): the held-out R^2 of the competing bases at every layer with 95% bootstrap bands
    (left), each basis's paired difference from the helix (middle), and the strongest period of
    the spectrum with the digit-count classes' step taken out (right); the layers where one basis
    wins are named under the panels.  ``rest`` is (model,) or (nested, model): given the nested
    table (:func:`.nested.nested_tables`), the right panel is the verdict on T = 100 instead (its
    held-out increment over the digit one-hot and classes, Holm across layers)."""
    nested, model = rest if len(rest) == 2 else (None, rest[0])
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    cands = [b for b in BASIS_COLOR if b in set(r2["basis"])]
    for basis in cands:
        part = r2[r2["basis"] == basis].sort_values("layer")
        axes[0].plot(part["layer"], part["r2"], marker="o", ms=3, color=BASIS_COLOR[basis], label=basis)
        axes[0].fill_between(part["layer"], part["r2_low"], part["r2_high"], color=BASIS_COLOR[basis], alpha=0.15)
        if basis != "helix":
            axes[1].plot(part["layer"], part["diff_helix"], marker="o", ms=3, color=BASIS_COLOR[basis], label=basis)
            axes[1].fill_between(
                part["layer"], part["diff_helix_low"], part["diff_helix_high"], color=BASIS_COLOR[basis], alpha=0.15
            )
    axes[0].set_ylabel("held-out R² (numbers 0..N-1, 5 folds)")
    axes[0].set_title("which basis explains a number's last token")
    axes[1].axhline(0, color="grey", lw=0.6)
    axes[1].set_ylabel("R² minus the helix's (95% CI)")
    axes[1].set_title("each basis against the helix T = [2, 5, 10, 100]")
    if nested is None:
        top = peaks[(peaks["rank"] == 1)]
        for variant, marker in zip(dict.fromkeys(top["variant"]), ("o", "s", "^")):
            part = top[top["variant"] == variant].sort_values("layer")
            axes[2].plot(part["layer"], part["period"], marker=marker, ls="", label=variant)
        axes[2].set_yscale("log")
        axes[2].set_ylabel("strongest period T")
        axes[2].set_title("spectrum: raw, classes' step removed, 10..99 alone")
    else:
        _t100_panel(axes[2], nested)
    for ax in axes:
        ax.set_xlabel("layer l (resid_pre[l])")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    shared_legend(fig, axes, "lower")
    wins = winner[winner["winner"] != "not distinguished"]
    text = "; ".join(f"{w}: layers {', '.join(map(str, g['layer']))}" for w, g in wins.groupby("winner")) or "none"
    title = f"{model}: a T = 100 helix, digit circles or the digit count? Winner (CI of every difference > 0): {text}"
    if nested is not None:
        found = nested[nested["verdict_test"] & (nested["verdict"] == "detected")]["layer"].tolist()
        title = (
            f"{model}: best single basis (CI of every difference > 0): {text}\n"
            f"T = 100 beyond the digit one-hot and classes (held out, Holm): "
            f"{'detected at layers ' + ', '.join(map(str, found)) if found else 'not detected at any layer'}"
        )
    suptitle(fig, title, fontsize=10)
    return fig


def _t100_panel(ax, nested: pd.DataFrame):
    """The nested test's increment of T = 100 at every layer with its 95% interval, the layers
    where it is detected (Holm) marked, and the smallest planted fraction it detects."""
    for test in dict.fromkeys(nested["test"]):
        part = nested[nested["test"] == test].sort_values("layer")
        color = "C3" if part["verdict_test"].all() else "0.5"  # the verdict's test red
        ax.plot(part["layer"], part["increment"], marker="o", ms=3, color=color, label=test)
        ax.fill_between(part["layer"], part["low"], part["high"], color=color, alpha=0.15)
        hit = part[part["verdict"] == "detected"]
        ax.plot(hit["layer"], hit["increment"], ls="", marker="*", ms=9, color=color)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_ylabel("R² added by T=100 (95% CI)")
    fr = nested.loc[nested["verdict_test"], "detectable_fraction"]
    span = f"{fr.min():.3g}–{fr.max():.3g}" if fr.notna().any() else "none"
    ax.set_title(f"T = 100 beyond the digits (★ detected)\ndetectable from {span} of the helix's T=100", fontsize=9)

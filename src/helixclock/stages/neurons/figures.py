"""Figures of the neuron fits (paper Fig. 8, Fig. 10, Figs. D12, D13), drawn from saved
tables and arrays only (never from the model; no torch).

Inputs are the tables of :mod:`helixclock.stages.neurons.fit` (``neuron_table``), with the
pipeline's extra columns where a figure needs them (``te``: attribution total effect,
``de``: direct effect), and for Fig. 8 the actual and fitted grids of four neurons.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

PAPER_PERIODS = (2, 5, 10, 100)
VARIABLE_COLUMNS = {"a+b": "dominant_period_ab", "a": "dominant_period_a", "b": "dominant_period_b"}


def _need(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: table lacks columns {missing}; it has {list(df.columns)}")


def _wrap_terms(text: str, k: int = 2) -> str:
    return "\n".join(str(text).split(" + ")[:k])


def fig08_neuron_preacts(preacts: np.ndarray, fitted: np.ndarray, neurons: pd.DataFrame, model: str,
                         n_terms: int = 2):
    """Fig. 8: N(a, b) of (up to) four neurons (a on y, b on x), each beside its Eq. 5 fit on
    the same colour scale; the title names the neuron, its NRMSE and its leading terms.

    preacts, fitted: [k, n_a, n_b]; neurons: k rows with layer, neuron, nrmse, top_terms
    (same order)."""
    _need(neurons, ("layer", "neuron", "nrmse", "top_terms"), "fig08_neuron_preacts")
    preacts, fitted = np.asarray(preacts), np.asarray(fitted)
    if preacts.shape != fitted.shape or preacts.ndim != 3 or len(preacts) != len(neurons):
        raise ValueError(f"fig08: preacts {preacts.shape}, fitted {fitted.shape} and {len(neurons)} table rows "
                         "must agree as [k, n_a, n_b] and k rows")
    k = len(neurons)
    cols = 2 if k > 1 else 1
    rows = int(np.ceil(k / cols))
    fig = plt.figure(figsize=(6.2 * cols, 3.7 * rows), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(rows, cols)).ravel()
    for sub, actual, fit, row in zip(subs, preacts, fitted, neurons.itertuples()):
        axes = sub.subplots(1, 2, sharey=True)
        lo, hi = float(actual.min()), float(actual.max())
        for ax, grid, label in zip(axes, (actual, fit), ("actual N(a, b)", "fit")):
            im = ax.imshow(grid, origin="lower", cmap="RdBu_r", vmin=lo, vmax=hi, aspect="equal",
                           interpolation="nearest")
            ax.set_xlabel("b")
            ax.set_title(label, fontsize=9)
        axes[0].set_ylabel("a")
        sub.colorbar(im, ax=axes, shrink=0.8, label="preactivation")
        sub.suptitle(f"L{row.layer} N{row.neuron}, NRMSE {row.nrmse:.3f}\n{_wrap_terms(row.top_terms, n_terms)}",
                     fontsize=8.5)
    for sub in subs[k:]:
        sub.set_visible(False)
    fig.suptitle(f"{model}: preactivations of top neurons and their helix-inspired fits (Eq. 5)")
    return fig


def period_shares(periods: np.ndarray, targets: Sequence[float] = PAPER_PERIODS, tol: float = 0.05) -> dict:
    """Share of the periods within ``tol`` (relative) of each target T."""
    periods = np.asarray(periods, dtype=np.float64)
    return {T: float(np.mean(np.abs(periods - T) <= tol * T)) if len(periods) else np.nan for T in targets}


def figD12_neuron_fourier(neurons: pd.DataFrame, model: str, targets: Sequence[float] = PAPER_PERIODS,
                          tol: float = 0.05):
    """Fig. D12: histograms of the top neurons' dominant periods over a+b, a and b (log x);
    the legend gives the shares of periods within 5% of T = 2, 5, 10, 100."""
    _need(neurons, list(VARIABLE_COLUMNS.values()), "figD12_neuron_fourier")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.9), sharey=False)
    largest = max(float(neurons[c].max()) for c in VARIABLE_COLUMNS.values())
    bins = np.geomspace(1.9, max(largest, 100) * 1.1, 60)
    for ax, (var, col), color in zip(axes, VARIABLE_COLUMNS.items(), ("C3", "C0", "C1")):
        p = neurons[col].to_numpy(dtype=np.float64)
        sns.histplot(x=p, bins=bins, ax=ax, color=color, edgecolor="none", alpha=0.8)
        shares = period_shares(p, targets, tol)
        for T in targets:
            ax.axvline(T, color="grey", ls=":", lw=1, zorder=0, label=f"T = {T:g}: {shares[T]:.1%}")
        ax.set_xscale("log")
        ax.set_xticks([2, 5, 10, 20, 50, 100, 200], ["2", "5", "10", "20", "50", "100", "200"])
        ax.set_xlabel(f"dominant period of N over {var}")
        ax.set_ylabel("neurons")
        ax.set_title(f"mean of N at each {'s = a+b' if var == 'a+b' else var}", fontsize=10)
        ax.legend(frameon=False, fontsize=8, title=f"within {tol:.0%} of T", title_fontsize=8)
    fig.suptitle(f"{model}: top Fourier periods of {len(neurons)} top neurons' preactivations")
    fig.tight_layout()
    return fig


def figD13_neuron_nrmse(neurons: pd.DataFrame, model: str):
    """Fig. D13: attribution TE (log x) vs the NRMSE of the Eq. 5 fit, one point per top
    neuron coloured by layer; Spearman's rho in the title (the paper: larger TE, better fit).
    Neurons with TE <= 0 cannot sit on a log axis and are counted in the title."""
    from scipy.stats import spearmanr

    _need(neurons, ("te", "nrmse", "layer"), "figD13_neuron_nrmse")
    pos = neurons[neurons["te"] > 0]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    sns.scatterplot(data=pos, x="te", y="nrmse", hue="layer", palette="viridis", s=12, linewidth=0, ax=ax,
                    legend=False)
    sm = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(pos["layer"].min(), pos["layer"].max()))
    fig.colorbar(sm, ax=ax, label="layer")
    ax.set_xscale("log")
    ax.set_xlabel("attribution total effect (TE)")
    ax.set_ylabel("NRMSE of the fit")
    rho = spearmanr(pos["te"], pos["nrmse"]).statistic if len(pos) > 2 else np.nan
    dropped = len(neurons) - len(pos)
    ax.set_title(f"{model}: fit quality vs total effect\n{len(pos)} top neurons, Spearman ρ = {rho:.2f}"
                 + (f" ({dropped} with TE ≤ 0 not shown)" if dropped else ""), fontsize=10)
    return fig


def layer_trends(neurons: pd.DataFrame, circuit_layers: Sequence[int]) -> pd.DataFrame:
    """Per circuit-MLP layer: the number of its top neurons, the mean of their DE/TE and the
    mean of their a+b fractions (Fig. 10's points).  A ratio over TE <= 0 means nothing (and
    a TE near 0 from below flips it): those neurons are left out of the DE/TE mean and
    counted.  Columns: layer, n_neurons, de_over_te, ab_fraction, n_te_nonpositive."""
    _need(neurons, ("layer", "te", "de", "ab_fraction"), "layer_trends")
    part = neurons[neurons["layer"].isin(list(circuit_layers))]
    part = part.assign(ratio=(part["de"] / part["te"]).where(part["te"] > 0), bad=part["te"] <= 0)
    out = part.groupby("layer").agg(n_neurons=("ratio", "size"), de_over_te=("ratio", "mean"),
                                    ab_fraction=("ab_fraction", "mean"),
                                    n_te_nonpositive=("bad", "sum")).reset_index()
    return out.sort_values("layer").reset_index(drop=True)


def fig10_neuron_trends(neurons: pd.DataFrame, circuit_layers: Sequence[int], model: str):
    """Fig. 10: per circuit MLP, the mean a+b fraction of its top neurons' fits against their
    mean DE/TE (one point per layer, coloured by layer, least-squares line and R^2), and both
    against the layer (the paper: a split at layer 19, earlier layers read a, b, later ones
    read a+b and write to the logits)."""
    trends = layer_trends(neurons, circuit_layers)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    x, y = trends["ab_fraction"].to_numpy(), trends["de_over_te"].to_numpy()
    norm = plt.Normalize(trends["layer"].min(), trends["layer"].max())
    sns.scatterplot(data=trends, x="ab_fraction", y="de_over_te", hue="layer", hue_norm=norm, palette="viridis",
                    s=60, ax=left, legend=False)
    for row in trends.itertuples():
        left.annotate(f"MLP{row.layer}", (row.ab_fraction, row.de_over_te), textcoords="offset points",
                      xytext=(4, 4), fontsize=8)
    if len(trends) >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
        r2 = 1 - resid.var() / y.var() if y.var() > 0 else 1.0
        xs = np.linspace(x.min(), x.max(), 2)
        left.plot(xs, slope * xs + intercept, color="grey", lw=1.2, label=f"least squares, R² = {r2:.2f}")
        left.legend(frameon=False)
    fig.colorbar(plt.cm.ScalarMappable(cmap="viridis", norm=norm), ax=left, label="layer")
    left.set_xlabel(r"mean a+b fraction of the fit, $\sum_T A^2_{T,a+b}\ /\ \sum_{T,t} A^2_{T,t}$")
    left.set_ylabel("mean DE / TE")
    left.set_title("per circuit MLP: top neurons' means", fontsize=10)
    right.plot(trends["layer"], trends["ab_fraction"], marker="o", color="C3", label="mean a+b fraction")
    right.plot(trends["layer"], trends["de_over_te"], marker="s", color="C1", label="mean DE / TE")
    right.set_xticks(trends["layer"], [f"MLP{l}" for l in trends["layer"]], rotation=45)
    right.axhline(0, color="grey", lw=0.6)
    right.set_ylabel("mean over the layer's top neurons")
    right.legend(frameon=False)
    right.set_title("by layer (number of top neurons under each point)", fontsize=10)
    for row in trends.itertuples():
        right.annotate(str(row.n_neurons), (row.layer, row.ab_fraction), textcoords="offset points",
                       xytext=(0, -12), fontsize=7, ha="center", color="C3")
    fig.suptitle(f"{model}: top neurons of the circuit MLPs, what they read (a+b fraction of the fit) "
                 "vs write (DE / TE)")
    fig.tight_layout()
    return fig

"""Figures of the neuron fits (paper section 5.4, appendix D.2: Fig. 8, Fig. 10, Figs. D12,
D13), drawn from arrays and tables only (never from the model; no torch).

Inputs are the tables of :mod:`helixclock.stages.neurons.neuron_files` (``neuron_table``), with the
pipeline's extra columns where a figure needs them (``te``: attribution total effect,
``de``: direct effect), and for Fig. 8 the actual and fitted grids of four neurons.
:mod:`.figures` draws them (and the stage's other figures) from the stage's CSV tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
from matplotlib.ticker import LogLocator

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ...plotting.figure_layout import category_ticks, label_points, shared_legend, suptitle  # noqa: E402
from ...plotting.style import sns  # noqa: E402 (with it, the figures' shared look and constrained layout)
from ...prompts.layout import whole_numbers  # noqa: E402

PAPER_PERIODS = (2, 5, 10, 100)
VARIABLE_COLUMNS = {"a+b": "dominant_period_ab", "a": "dominant_period_a", "b": "dominant_period_b"}


def _need(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: table lacks columns {missing}; it has {list(df.columns)}")


def _wrap_terms(text: str, k: int = 2) -> str:
    return "\n".join(str(text).split(" + ")[:k])


def _quantity(df: pd.DataFrame) -> str:
    """What N(a, b) is (the tables' ``quantity`` column): "preactivation", or for a gated MLP
    "act(gate)·up" or "gate preactivation"."""
    return str(df["quantity"].iloc[0]) if "quantity" in df.columns and len(df) else "preactivation"


def _layer_colorbar(fig, ax, norm, cmap: str = "viridis", label: str = "layer"):
    """A colour bar of layers with integer ticks (at most ~8 of them)."""
    bar = fig.colorbar(plt.cm.ScalarMappable(cmap=cmap, norm=norm), ax=ax, label=label)
    bar.locator = MaxNLocator(integer=True, nbins=min(8, max(1, int(norm.vmax - norm.vmin) + 1)))
    bar.update_ticks()
    return bar


def _layer_norm(layers) -> plt.Normalize:
    lo, hi = int(np.min(layers)), int(np.max(layers))
    return plt.Normalize(lo - 0.5, hi + 0.5) if lo == hi else plt.Normalize(lo, hi)


def neuron_preacts_panel(
    preacts: np.ndarray,
    fitted: np.ndarray,
    neurons: pd.DataFrame,
    model: str,
    n_terms: int = 2,
    quantity: str | None = None,
):
    """Fig. 8: N(a, b) of (up to) four neurons (a on y, b on x), each beside its Eq. 5 fit on
    the same colour scale; the title names the neuron, its NRMSE and its leading terms; the
    colour bar names what N is (``quantity``, default the table's ``quantity`` column or
    "preactivation"; for a gated MLP "act(gate)·up" or "gate preactivation").

    preacts, fitted: [k, n_a, n_b]; neurons: k rows with place, layer, neuron, nrmse, top_terms
    (same order); rows of several places name their place and the digit basis's NRMSE."""
    _need(neurons, ("place", "layer", "neuron", "nrmse", "top_terms"), "fig08_neuron_preacts")
    preacts, fitted = np.asarray(preacts), np.asarray(fitted)
    if preacts.shape != fitted.shape or preacts.ndim != 3 or len(preacts) != len(neurons):
        raise ValueError(
            f"fig08: preacts {preacts.shape}, fitted {fitted.shape} and {len(neurons)} table rows "
            "must agree as [k, n_a, n_b] and k rows"
        )
    quantity = quantity or _quantity(neurons)
    k = len(neurons)
    cols = 2 if k > 1 else 1
    rows = int(np.ceil(k / cols))
    fig = plt.figure(figsize=(6.2 * cols, 3.7 * rows), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(rows, cols)).ravel()
    several = neurons["place"].nunique() > 1  # the place named only where there are several
    for sub, actual, fit, row in zip(subs, preacts, fitted, neurons.itertuples()):
        axes = sub.subplots(1, 2, sharey=True)
        lo, hi = float(np.nanmin(actual)), float(np.nanmax(actual))  # NaN: cells where a unit's place is not
        for ax, grid, label in zip(axes, (actual, fit), (f"actual N(a, b) = {quantity}", "fit")):
            im = ax.imshow(
                grid, origin="lower", cmap="RdBu_r", vmin=lo, vmax=hi, aspect="equal", interpolation="nearest"
            )
            ax.set_xlabel("b")
            ax.set_title(label, fontsize=9)
        axes[0].set_ylabel("a")
        sub.colorbar(im, ax=axes, shrink=0.8, label=quantity)
        place = f" ({row.place} place; digit basis NRMSE {row.nrmse_digits:.3f})" if several else ""
        sub.suptitle(
            f"L{row.layer} N{row.neuron}{place}, NRMSE {row.nrmse:.3f}\n{_wrap_terms(row.top_terms, n_terms)}",
            fontsize=8.5,
        )
    for sub in subs[k:]:
        sub.set_visible(False)
    what = "preactivations" if quantity == "preactivation" else f"N(a, b) = {quantity} (gated MLP)"
    suptitle(fig, f"{model}: {what} of top neurons and their helix-inspired fits (Eq. 5)")
    return fig


def period_shares(periods: np.ndarray, targets: Sequence[float] = PAPER_PERIODS, tol: float = 0.05) -> dict:
    """Share of the periods within ``tol`` (relative) of each target T."""
    periods = np.asarray(periods, dtype=np.float64)
    return {T: float(np.mean(np.abs(periods - T) <= tol * T)) if len(periods) else np.nan for T in targets}


def figD12_neuron_fourier(
    neurons: pd.DataFrame, model: str, targets: Sequence[float] = PAPER_PERIODS, tol: float = 0.05
):
    """Fig. D12: histograms of the top neurons' dominant periods over a+b, a and b (log x);
    the legend gives the shares of periods within 5% of T = 2, 5, 10, 100.  Over a or b (100
    values) the longest period the spectrum has is the whole range, where T = 100 and a linear
    trend land alike: that bin is labelled as the whole-range trend there."""
    _need(neurons, list(VARIABLE_COLUMNS.values()), "figD12_neuron_fourier")
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.8), sharey=False)
    largest = max(float(neurons[c].max()) for c in VARIABLE_COLUMNS.values())
    bins = np.geomspace(1.9, max(largest, 100) * 1.1, 60)
    for ax, (var, col), color in zip(axes, VARIABLE_COLUMNS.items(), ("C3", "C0", "C1")):
        p = neurons[col].to_numpy(dtype=np.float64)
        sns.histplot(x=p, bins=bins, ax=ax, color=color, edgecolor="none", alpha=0.8)
        shares = period_shares(p, targets, tol)
        span = 100 if var != "a+b" else None  # over a or b the spectrum's longest period is the range
        for T in targets:
            what = f"whole range (trend or T = {T:g})" if span is not None and np.isclose(T, span) else f"T = {T:g}"
            ax.axvline(T, color="grey", ls=":", lw=1, zorder=0, label=f"{what}: {shares[T]:.1%}")
        ax.set_xscale("log")
        ax.set_xticks([2, 5, 10, 20, 50, 100, 200], ["2", "5", "10", "20", "50", "100", "200"])
        ax.set_xlabel(f"dominant period of N over {var}")
        ax.set_ylabel("neurons")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"mean of N at each {'s = a+b' if var == 'a+b' else var}", fontsize=10)
        ax.legend(
            frameon=False,
            fontsize=8,
            title=f"within {tol:.0%} of T",
            title_fontsize=8,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.2),
            ncol=1,
        )
    suptitle(fig, f"{model}: top Fourier periods of {len(neurons)} top neurons' {_quantity(neurons)}")
    return fig


def figD13_neuron_nrmse(neurons: pd.DataFrame, model: str):
    """Fig. D13: the attribution effect (log x) vs the NRMSE of the Eq. 5 fit, one point per top
    neuron coloured by layer; Spearman's rho in the title (the paper: larger TE, better fit).
    The effect is the ranked size (``effect``: by default the mean |attribution| over pairs)
    where the table has it, else the signed TE; values <= 0 cannot sit on a log axis and are
    counted in the title.  Units at the digits' places: beside it Eq. 5's NRMSE against the digit
    basis's, by place."""
    _need(neurons, ("place", "te", "nrmse", "layer"), "figD13_neuron_nrmse")
    x = "effect" if "effect" in neurons.columns else "te"
    pos = neurons[neurons[x] > 0]
    several = not whole_numbers(neurons["place"])  # units at digits: Eq. 5 beside the digit basis
    fig, axes = plt.subplots(1, 2 if several else 1, figsize=(12.8 if several else 6.4, 4.4), squeeze=False)
    ax = axes[0, 0]
    norm = _layer_norm(neurons["layer"])
    sns.scatterplot(
        data=pos, x=x, y="nrmse", hue="layer", hue_norm=norm, palette="viridis", s=12, linewidth=0, ax=ax, legend=False
    )
    _layer_colorbar(fig, ax, norm)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=np.arange(1, 10)))
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel(
        "attribution effect (the score neurons are ranked by)" if x == "effect" else "attribution total effect (TE)"
    )
    ax.set_ylabel(f"NRMSE of the fit of the {_quantity(neurons)}")
    # deferred: scipy.stats (0.5 s) stays out of the other figure jobs that import this module
    from scipy.stats import spearmanr

    rho = spearmanr(pos[x], pos["nrmse"]).statistic if len(pos) > 2 else np.nan
    dropped = len(neurons) - len(pos)
    what = "effect" if x == "effect" else "TE"
    ax.set_title(
        f"{model}: fit quality vs {'attribution effect' if x == 'effect' else 'total effect'}\n"
        f"{len(pos)} top neurons, Spearman ρ = {rho:.2f}"
        + (f" ({dropped} with {what} ≤ 0 not shown)" if dropped else ""),
        fontsize=10,
    )
    if several:
        _bases_panel(axes[0, 1], neurons)
    return fig


def _bases_panel(ax2, neurons: pd.DataFrame) -> None:
    """Fig. D13 for units of several places: each unit's NRMSE under Eq. 5 against the digit
    basis's, by place, the diagonal drawn (below it: Eq. 5 fits better)."""
    sns.scatterplot(data=neurons, x="nrmse_digits", y="nrmse", hue="place", s=14, linewidth=0, ax=ax2)
    hi = float(np.nanmax(neurons[["nrmse", "nrmse_digits"]].to_numpy()))
    ax2.plot([0, hi], [0, hi], color="grey", lw=0.8, ls="--")
    ax2.set_xlabel("NRMSE of the digit basis (24 columns, as Eq. 5)")
    ax2.set_ylabel("NRMSE of Eq. 5 (24 independent columns)")
    shares = neurons.groupby("place", sort=False)["better"].apply(lambda b: (b == "digits").mean())
    ax2.set_title(
        "units the digit basis fits better: " + ", ".join(f"{share:.0%} ({place})" for place, share in shares.items()),
        fontsize=9,
    )


def layer_trends(neurons: pd.DataFrame, circuit_layers: Sequence[int]) -> pd.DataFrame:
    """Per circuit-MLP layer: the number of its top neurons, the mean of their DE/TE and the
    mean of their a+b fractions (Fig. 10's points).  DE/TE is the ratio of the effect sizes the
    neurons are ranked by (``de_effect`` / ``effect``) where the table has them, else of the
    signed means (``de`` / ``te``).  A ratio over TE <= 0 means nothing (and a TE near 0 from
    below flips it): those neurons are left out of the DE/TE mean and counted.  Every circuit
    layer has a row; one without top neurons has n_neurons 0 and NaN means.  Columns: layer,
    n_neurons, de_over_te, ab_fraction, n_te_nonpositive."""
    _need(neurons, ("layer", "te", "de", "ab_fraction"), "layer_trends")
    part = neurons[neurons["layer"].isin(list(circuit_layers))]
    te, de = ("effect", "de_effect") if {"effect", "de_effect"} <= set(part.columns) else ("te", "de")
    part = part.assign(ratio=(part[de] / part[te]).where(part[te] > 0), bad=part[te] <= 0)
    out = part.groupby("layer").agg(
        n_neurons=("ratio", "size"),
        de_over_te=("ratio", "mean"),
        ab_fraction=("ab_fraction", "mean"),
        n_te_nonpositive=("bad", "sum"),
    )
    layers = sorted(set(int(x) for x in circuit_layers))
    out = out.reindex(layers).rename_axis("layer").reset_index()
    out[["n_neurons", "n_te_nonpositive"]] = out[["n_neurons", "n_te_nonpositive"]].fillna(0).astype(int)
    return out


MIN_LINE_POINTS = 3  # Fig. 10 draws a least-squares line only through at least this many layers


def neuron_trends_panel(neurons: pd.DataFrame, circuit_layers: Sequence[int], model: str):
    """Fig. 10: per circuit MLP, the mean a+b fraction of its top neurons' fits against their
    mean DE/TE (one point per layer, coloured by layer; a least-squares line and R^2 through
    3 or more layers only: a line through 2 points has R^2 = 1 whatever they are), and both
    against the layer (the paper: a split at layer 19, earlier layers read a, b, later ones
    read a+b and write to the logits).  Circuit MLPs without top neurons are marked on the
    layer axis and named in the left panel."""
    trends = layer_trends(neurons, circuit_layers)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    norm = _layer_norm(trends["layer"]) if len(trends) else plt.Normalize(0, 1)
    _read_vs_write_panel(fig, left, trends, norm)
    _by_layer_panel(right, trends)
    shared_legend(fig, [left, right])  # under the panels: the colour bar stays beside its data
    suptitle(
        fig, f"{model}: top neurons of the circuit MLPs, what they read (a+b fraction of the fit) vs write (DE / TE)"
    )
    return fig


def _empty_layers(trends: pd.DataFrame) -> list[int]:
    """The circuit MLPs of :func:`layer_trends` without top neurons."""
    return trends.loc[trends["n_neurons"] == 0, "layer"].tolist()


def _read_vs_write_panel(fig, ax, trends: pd.DataFrame, norm) -> None:
    """Fig. 10, left (section 5.4): each circuit MLP's mean a+b fraction against its mean DE/TE,
    coloured by layer, with the least-squares line where it means something; the title names
    the circuit MLPs without top neurons."""
    have = trends[trends["n_neurons"] > 0]
    sns.scatterplot(
        data=have,
        x="ab_fraction",
        y="de_over_te",
        hue="layer",
        hue_norm=norm,
        palette="viridis",
        s=60,
        ax=ax,
        legend=False,
    )
    label_points(ax, have["ab_fraction"], have["de_over_te"], [f"MLP{l}" for l in have["layer"]])
    notes = _least_squares_line(ax, have["ab_fraction"].to_numpy(), have["de_over_te"].to_numpy())
    empty_layers = _empty_layers(trends)
    if empty_layers:
        notes.append("no top neurons: " + ", ".join(f"MLP{l}" for l in empty_layers))
    _layer_colorbar(fig, ax, norm)
    ax.set_xlabel(r"mean a+b fraction of the fit, $\sum_T |c_{T,a+b}|\ /\ \sum_{T,t} |c_{T,t}|$")
    ax.set_ylabel("mean DE / TE")
    ax.set_title("\n".join(["per circuit MLP: top neurons' means", *notes]), fontsize=10)
    ax.margins(0.15)


def _least_squares_line(ax, x: np.ndarray, y: np.ndarray) -> list[str]:
    """Fig. 10's least-squares line of y on x with its R^2 in the legend, drawn through
    :data:`MIN_LINE_POINTS` or more finite points that are not all at one x; else no line and
    a note for the title (returned; empty when the line is drawn)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if not (ok.sum() >= MIN_LINE_POINTS and np.ptp(x[ok]) > 0):
        return [f"{int(ok.sum())} circuit MLP(s) with top neurons: no line (fewer than {MIN_LINE_POINTS})"]
    slope, intercept = np.polyfit(x[ok], y[ok], 1)
    resid = y[ok] - (slope * x[ok] + intercept)
    r2 = 1 - resid.var() / y[ok].var() if y[ok].var() > 0 else 1.0
    xs = np.linspace(x[ok].min(), x[ok].max(), 2)
    ax.plot(xs, slope * xs + intercept, color="grey", lw=1.2, label=f"least squares, R² = {r2:.2f}")
    return []


def _by_layer_panel(ax, trends: pd.DataFrame) -> None:
    """Fig. 10, right (section 5.4): the mean a+b fraction and the mean DE/TE of each circuit
    MLP, one place for each in the order of the layers, the number of its top neurons under each
    point; circuit MLPs without top neurons marked on the axis."""
    place = pd.Series(np.arange(len(trends)), index=trends["layer"].to_numpy())
    have = trends[trends["n_neurons"] > 0]
    empty_layers = _empty_layers(trends)
    ax.plot(place[have["layer"]], have["ab_fraction"], marker="o", color="C3", label="mean a+b fraction")
    ax.plot(place[have["layer"]], have["de_over_te"], marker="s", color="C1", label="mean DE / TE")
    if empty_layers:
        ax.scatter(
            place[empty_layers],
            np.zeros(len(empty_layers)),
            marker="x",
            color="grey",
            zorder=3,
            label="circuit MLP without top neurons",
        )
    category_ticks(ax, place.to_numpy(), [f"MLP{l}" for l in trends["layer"]])
    ax.set_xlim(-0.5, len(trends) - 0.5)
    ax.set_xlabel("circuit MLP")
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_ylabel("mean over the layer's top neurons")
    ax.set_title("by layer (number of top neurons under each point)", fontsize=10)
    for row in trends.itertuples():
        ax.annotate(
            str(row.n_neurons),
            (place[row.layer], row.ab_fraction if row.n_neurons else 0.0),
            textcoords="offset points",
            xytext=(0, -12),
            fontsize=7,
            ha="center",
            color="C3" if row.n_neurons else "grey",
        )

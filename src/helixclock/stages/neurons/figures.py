"""The neuron stage's figures (paper section 5.4, appendix D.2: figs. 8, 9, 10, D9-D13), drawn
from the stage's CSV tables only (never from the model; no torch).

The builders of Fig. 8, Fig. 10 and Figs. D12, D13 are in :mod:`.panels`; the rules name
figD12_neuron_fourier and figD13_neuron_nrmse from here.
"""

from __future__ import annotations

import matplotlib
from matplotlib.patches import Patch as Swatch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ...plotting.figure_layout import category_ticks, percent_axis, shared_legend, suptitle, thin_ticks  # noqa: E402
from ...plotting.style import sns, with_pairs  # noqa: E402
from .panels import (  # noqa: E402
    _quantity,
    figD12_neuron_fourier,  # noqa: F401 (named by workflow/rules/neurons.smk)
    figD13_neuron_nrmse,  # noqa: F401 (named by workflow/rules/neurons.smk)
    neuron_preacts_panel,
    neuron_trends_panel,
)
from .tables import cumulative_de  # noqa: E402


# -- the pipeline's figures, from the neuron stage's CSV tables -------------------------------
def fig08_neuron_preacts(grids: pd.DataFrame, neurons: pd.DataFrame, model: str):
    """fig08 from tables: ``grids`` long (place, layer, neuron, a, b, actual, fitted) for the chosen
    units, ``neurons`` the per-unit table (place, nrmse, top_terms)."""
    keys = ["place", "layer", "neuron"]  # a unit
    order = list(dict.fromkeys(zip(*(grids[k] for k in keys))))
    n_a, n_b = int(grids["a"].max()) + 1, int(grids["b"].max()) + 1
    actual, fitted, rows = [], [], []
    for key in order:
        part = grids[np.logical_and.reduce([grids[k] == v for k, v in zip(keys, key)])].sort_values(["a", "b"])
        actual.append(part["actual"].to_numpy().reshape(n_a, n_b))
        fitted.append(part["fitted"].to_numpy().reshape(n_a, n_b))
        rows.append(neurons[np.logical_and.reduce([neurons[k] == v for k, v in zip(keys, key)])].iloc[0])
    return neuron_preacts_panel(np.stack(actual), np.stack(fitted), pd.DataFrame(rows).reset_index(drop=True), model)


def fig10_neuron_trends(neurons: pd.DataFrame, stages: pd.DataFrame, model: str):
    """fig10 from tables: the per-neuron table and the MLP stage's circuit MLPs (mlp_stages)."""
    return neuron_trends_panel(neurons, stages["layer"].tolist(), model)


RANKING_WORDS = {
    "mean_abs": "mean |attribution| over pairs",
    "abs_mean": "|mean attribution|",
    "signed": "signed mean attribution",
}
READING_STYLE = {
    "frozen": ("kept neurons frozen at their unablated values", "C0", "o", "-"),
    "live": ("kept neurons computed live in the ablated run", "C1", "s", "--"),
}


def figD9_neuron_ablation(ablation: pd.DataFrame, model: str):
    """figD9: accuracy and LD when only the top x% of neurons are kept and every other one is
    mean-ablated (log x), under both readings of "kept" (``reading``: frozen at their values
    from the unablated run, as Fig. 9's "actual", or live in the ablated run)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 4.8))
    for reading in ablation["reading"].unique().tolist():
        part = ablation[ablation["reading"] == reading]
        part = part.sort_values("fraction_kept")
        label, color, marker, ls = READING_STYLE.get(reading, ("kept neurons", "C0", "o", "-"))
        x = part["fraction_kept"].to_numpy() * 100
        for ax, prefix in ((left, "accuracy"), (right, "ld")):
            ax.plot(x, part[f"{prefix}_mean"].to_numpy(), marker=marker, ms=4, ls=ls, color=color, label=label)
            ax.fill_between(x, part[f"{prefix}_low"], part[f"{prefix}_high"], alpha=0.15, lw=0, color=color)
    ranking = str(ablation["ranking"].iloc[0]) if "ranking" in ablation and len(ablation) else None
    for ax, label in ((left, "accuracy on the prompts"), (right, "logit_unablated − logit_ablated (answer)")):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}%"))
        ax.set_xlabel("neurons kept (% of all last-token neurons)")
        ax.set_ylabel(label)
    left.axhline(0.8, color="grey", ls="--", lw=0.8, label="80% accuracy")
    left.axvline(1, color="C3", ls=":", lw=1, label="1% of neurons (paper: ~80% accuracy)")
    left.set_ylim(-0.02, 1.02)
    right.axhline(0, color="grey", lw=0.6)
    shared_legend(fig, [left, right], "lower", ncols=2)
    ranked = f", ranked by {RANKING_WORDS.get(ranking, ranking)}" if ranking else ""
    suptitle(
        fig,
        f"{model}: the top neurons kept{ranked},\nevery other last-token neuron mean-ablated "
        f"(n = {int(ablation['n_prompts'].iloc[0])} prompts)",
    )
    return fig


def figD10_neuron_layers(neurons: pd.DataFrame, stages: pd.DataFrame, model: str):
    """figD10: layers of the top neurons; circuit-MLP layers outlined, their share in the legend."""
    circuit = set(stages["layer"].tolist())
    counts = neurons["layer"].value_counts().sort_index()
    layers = np.arange(int(max(neurons["layer"].max(), max(circuit, default=0))) + 1)
    values = counts.reindex(layers, fill_value=0).to_numpy()
    share = float(neurons["layer"].isin(circuit).mean())
    fig, ax = plt.subplots(figsize=(7, 4.2))
    bars = ax.bar(layers, values, color="C0")
    for bar, layer in zip(bars, layers):
        if layer in circuit:
            bar.set_edgecolor("k")
            bar.set_linewidth(1.5)
    handles = [
        Swatch(facecolor="C0", label=f"top neurons (n = {len(neurons)})"),
        Swatch(
            facecolor="none",
            edgecolor="k",
            linewidth=1.5,
            label=f"circuit MLP layers (outlined): {share:.0%} of top neurons",
        ),
    ]
    category_ticks(ax, layers, layers)
    ax.set_xlabel("layer (block)")
    ax.set_ylabel("top neurons")
    shared_legend(fig, [ax], handles=handles, ncols=1)
    suptitle(fig, f"{model}: where the top neurons are (paper: ~75% in circuit MLPs)")
    return fig


def figD11_neuron_direct_effect(cumulative: pd.DataFrame, model: str):
    """figD11: the running share of the top neurons' positive DE (sorted by DE; a neuron of
    negative DE adds nothing, so the share never passes 100%: :func:`.tables.cumulative_de`) vs
    how many, with the counts reaching 70/80/90/95%; below, how the top neurons and the set
    holding 80% of the positive DE spread over the layers, each as a share of its own neurons (one
    scale for both).  The share and its counts are worked out again from the table's DE (its rows
    are the top neurons), so that a table an older run wrote (a share of the signed total, which
    passes 100% where some DE is negative) is drawn as this one would be."""
    cumulative = cumulative_de(cumulative)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6.8))
    defined = cumulative["cumulative_share"].notna().any()  # no positive DE: no running share
    running = cumulative["cumulative_share"] if defined else cumulative["de"].cumsum()  # else the running total
    sns.lineplot(x=cumulative["count"].to_numpy(), y=running.to_numpy(), ax=top, errorbar=None)
    cumulative = cumulative.assign(reaches=cumulative["reaches"].fillna(""))  # empty cells come back as NaN
    reached = cumulative[cumulative["reaches"] != ""]
    for row in reached.itertuples():
        top.axvline(row.count, color="grey", ls=":", lw=0.8)
    if len(reached):  # the counts in one box at the lower right, under the curve's plateau (lines may crowd)
        top.text(
            0.98,
            0.05,
            "\n".join(
                f"smallest number of neurons for {share}: {row.count}"
                for row in reached.itertuples()
                for share in row.reaches.split(",")
            ),
            transform=top.transAxes,
            ha="right",
            va="bottom",
            fontsize=8,
            bbox={"facecolor": "white", "edgecolor": "0.8", "boxstyle": "round,pad=0.3"},
        )
    n_negative = int((cumulative["de"] < 0).sum())
    if defined:
        percent_axis(top)
        top.set_title(
            f"{n_negative} of {len(cumulative)} with a negative DE (they add nothing to the share)", fontsize=9
        )
    else:
        top.axhline(0, color="grey", lw=0.8)
        top.set_title(
            f"no running share: no neuron has a positive DE (they sum to {cumulative['de'].sum():.2f})", fontsize=9
        )
    thin_ticks(top)
    top.set_xlabel("top neurons, sorted by direct effect")
    top.set_ylabel("running share of their positive DE" if defined else "running total of their DE")
    suptitle(fig, with_pairs(f"{model}: direct effects of the top neurons", cumulative) + " (paper: ~700 for 80%)")
    sets = [cumulative.assign(set=f"all {len(cumulative)} top neurons")]
    if defined:
        n80 = cumulative.loc[cumulative["cumulative_share"] >= 0.8 - 1e-12, "count"]
        n80 = int(n80.min()) if len(n80) else len(cumulative)
        sets.append(cumulative.iloc[:n80].assign(set=f"the {n80} holding 80% of the positive DE"))
    both = pd.concat(sets)
    sns.histplot(
        data=both,
        x="layer",
        hue="set",
        discrete=True,
        multiple="dodge",
        shrink=0.8,
        stat="proportion",
        common_norm=False,
        ax=bottom,
    )
    layers = np.arange(int(both["layer"].min()), int(both["layer"].max()) + 1)
    category_ticks(bottom, layers, layers)
    bottom.set_xlabel("layer")
    bottom.set_ylabel("share of the set's neurons")
    percent_axis(bottom)
    handles = bottom.get_legend().legend_handles
    labels = [t.get_text() for t in bottom.get_legend().get_texts()]
    for handle, label in zip(handles, labels):
        handle.set_label(label)
    shared_legend(fig, [bottom], handles=handles)
    return fig


def fig09_neuron_fit_eval(evaluation: pd.DataFrame, model: str):
    """fig09: accuracy vs k with the top k neurons' actual values vs their fitted N(a, b) (the
    preactivation; for a gated MLP the table's ``quantity``)."""
    quantity = _quantity(evaluation)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for col, label, color in (
        ("actual_accuracy", "actual values", "k"),
        ("fitted_accuracy", f"fitted N̂(a, b) ({quantity})", "C3"),
    ):
        sns.lineplot(
            x=evaluation["k"].to_numpy(),
            y=evaluation[col].to_numpy(),
            marker="o",
            ax=ax,
            label=label,
            color=color,
            errorbar=None,
        )
    ax.set_xscale("log")
    ax.set_xlabel("k (top neurons kept, the rest mean-ablated)")
    ax.set_ylabel("accuracy")
    mean_ratio = float(np.nanmean(evaluation["fitted_over_actual"]))
    prompts = f", n = {int(evaluation['n_prompts'].min())} prompts" if "n_prompts" in evaluation else ""
    suptitle(
        fig,
        f"{model}: fits recover {mean_ratio:.0%} of the actual accuracy on average{prompts}\n"
        "(mean over k of fitted / actual; paper: roughly 75%)",
        fontsize=10,
    )
    shared_legend(fig, [ax])
    return fig

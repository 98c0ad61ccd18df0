"""Figures E1 and F1-F6, drawn from the tables of :mod:`.linear_addition`, :mod:`.wrong_answers` and
:mod:`.logit_lens` (never from a model; no torch).  Each function takes tables and the
model's name and returns a matplotlib Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from ...fitting.fourier import dominant_periods
from ...plotting.figure_layout import empty, panel_grid, percent_axis, shared_legend, suptitle
from ...plotting.style import PALETTE, layer_name, paper_note, sns
from ...prompts.layout import whole_numbers
from ...stats.statistics import ABS_DE_SET, DE_SET
from .lens_null import poisson_binomial_sf
from .linear_addition import READING_NAMES, READINGS
from .logit_lens import HARMONICS, harmonic_order, match_shares
from .wrong_answers import (
    N_ANSWERS,
    PERIODS,
    near,
    period_counts,
    too_few_errors,
)


def _period_label(p: float) -> str:
    return f"{p:.3g}"


READING_COLORS = {"points": PALETTE["linear addition"], "regression": "#ff7f0e", "regression_heldout": "#9467bd"}


def figE1_linear_addition(
    accuracy: pd.DataFrame, line: pd.DataFrame, model: str, alpha_mark: int = 100, layer: int = 1
):
    """Fig. E1: accuracy of addition along a line fitted to the numbers vs the model's, over
    the problems with a1 + a2 < alpha, for each reading of "the line" (``reading``: the line
    through the points; a regressed on the PCA dims, in-sample and held out), each with its
    R^2 in the legend; beside it, where each number's representation sits on each line."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 5.2), gridspec_kw={"width_ratios": [1.5, 1]})
    readings = [r for r in READINGS if r in set(accuracy["reading"])]
    model_rows = accuracy[accuracy["reading"] == readings[0]]

    def at_mark(part: pd.DataFrame, col: str) -> str:
        v = part.loc[part["alpha"] == alpha_mark, col]
        return f", {float(v.iloc[0]):.1%} at α = {alpha_mark}" if len(v) and np.isfinite(v.iloc[0]) else ""

    if model_rows["model_accuracy"].notna().any():
        ax.plot(
            model_rows["alpha"],
            model_rows["model_accuracy"],
            color=PALETTE["model"],
            lw=2,
            label=f"{model} ({at_mark(model_rows, 'model_accuracy')[2:]})",
        )
    for reading in readings:
        part = accuracy[accuracy["reading"] == reading]
        r = part.iloc[0]
        r2 = f"R² = {r['line_r2']:.3f}" + (f", held out {r['line_r2_heldout']:.3f}" if reading == "points" else "")
        ax.plot(
            part["alpha"],
            part["linear_accuracy"],
            color=READING_COLORS[reading],
            lw=1.4,
            ls="--" if reading == "regression_heldout" else "-",
            label=f"{READING_NAMES[reading]} ({r2}{at_mark(part, 'linear_accuracy')})",
        )
    if (accuracy["alpha"] == alpha_mark).any():
        ax.axvline(alpha_mark, color="grey", ls=":", lw=0.8)
    ax.set_xlabel("α (problems a₁ + a₂ < α)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.02, 1.05)
    percent_axis(ax)
    ax.set_title(
        "addition along a line fitted to the numbers\npaper (GPT-J): R² = 0.997; at α = 100 linear < 20%, GPT-J > 80%",
        fontsize=10,
    )
    ax.legend(title=None, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, fontsize=8)
    for reading in readings:
        part = line[line["reading"] == reading]
        ax2.scatter(
            part["a"],
            part["offset"],
            s=10,
            color=READING_COLORS[reading],
            edgecolor="none",
            label=READING_NAMES[reading],
        )
    ax2.axhspan(-0.25, 0.25, color="grey", alpha=0.15, lw=0, label="|t(a) − a| < 0.25")
    ax2.axhline(0, color="k", lw=0.6)
    ax2.set_xlabel("a")
    ax2.set_ylabel("t(a) − a (position on the line − a)")
    ax2.set_title("each number's position on the line", fontsize=10)
    ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)
    suptitle(fig, f"{model}: why not linear addition? (numbers 0-99, {layer_name(layer)}, first 50 PCA dims)")
    return fig


def figF1_error_distribution(errors: pd.DataFrame, summary: pd.DataFrame, model: str, xlim: int = 60):
    """Fig. F1: the wrong numeric answers by error = prediction - answer, the two most common
    errors marked with their shares."""
    s = summary.iloc[0]
    fig, ax = plt.subplots(figsize=(8, 4.0))
    num = errors[errors["numeric"]]
    few = too_few_errors(len(num)).replace("for the test", "for an error distribution")
    if len(num):
        err = num["error"].clip(-xlim, xlim)
        sns.histplot(x=err, discrete=True, ax=ax, color=PALETTE["other"], edgecolor="none")
        near = pd.notna(s["top1_error"]) and pd.notna(s["top2_error"]) and abs(s["top1_error"] - s["top2_error"]) < 6
        for rank, col in ((1, "top1"), (2, "top2")):
            e = s[f"{col}_error"]
            if pd.notna(e):
                count = int((num["error"] == e).sum())
                ax.bar([e], [count], width=1.0, color=PALETTE["highlight"] if rank == 1 else PALETTE["model"])
                other = s["top2_error" if rank == 1 else "top1_error"]
                side = "center" if not near else ("right" if e < other else "left")  # close bars: apart
                ax.annotate(
                    f"{int(e):+d}: {s[f'{col}_share']:.1%}",
                    (e, count),
                    xytext=({"center": 0, "right": -2, "left": 2}[side], 3),
                    textcoords="offset points",
                    ha=side,
                    fontsize=9,
                )
        reach = min(xlim, int(np.abs(err).max()) + 2)
        ax.set_xlim(-reach - 0.5, reach + 0.5)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.3)  # headroom for the labels and the paper's values
    else:
        ax.text(0.5, 0.5, "no wrong answer is a number", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(f"error = prediction − answer (clipped to ±{xlim})")
    ax.set_ylabel("wrong numeric answers")
    ax.set_title(
        f"{model}: {int(s['n_wrong'])} wrong answers ({s['wrong_share']:.1%} of {int(s['n_prompts'])}); "
        f"{s['numeric_share_of_wrong']:.1%} of them are numbers" + (f"\n{few}" if few else "")
    )
    paper_note(ax, "paper (GPT-J): 19.5% wrong, over half numbers;\n−10: 45.7%, +10: 27.9%", "upper left")
    return fig


def figF2_carry_test(errors: pd.DataFrame, carry: pd.DataFrame, model: str, error_value: int = -10):
    """Fig. F2: the units-digit sum of a and b when the error is -10 vs any other numeric
    error (densities), with the chi-squared p-values of both carry splits."""
    num = errors[errors["numeric"]].copy()
    num["group"] = np.where(num["error"] == error_value, f"error = {error_value}", "other errors")
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    if len(num):
        sns.histplot(
            num,
            x="units_sum",
            hue="group",
            stat="density",
            common_norm=False,
            discrete=True,
            multiple="dodge",
            shrink=0.85,
            ax=ax,
            hue_order=[f"error = {error_value}", "other errors"],
            palette=[PALETTE["highlight"], PALETTE["other"]],
        )
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, title=None, fontsize=8)
    ax.axvline(9.5, color="k", ls="--", lw=0.8)
    ax.text(9.6, 0.98, "carry (≥ 10) →", transform=ax.get_xaxis_transform(), va="top", fontsize=8)
    few = too_few_errors(len(num))
    ax.set_xticks(range(0, 19))
    ax.set_xlabel("units digit of a + units digit of b")
    ax.set_ylabel("density")
    ps = "; ".join(
        f"{r.split}: χ² = {r.chi2:.2f}, p = {r.p:.3g}" if np.isfinite(r.p) else f"{r.split}: no test"
        for r in carry.itertuples()
    )
    ax.set_title(
        f"{model}: is a carry more likely when the error is {error_value}?\n" + (few if few else f"{ps} (Yates)"),
        fontsize=10,
    )
    paper_note(ax, "paper (GPT-J): not significant at 0.05", "upper left")
    return fig


def _lens_panels(lens_table: pd.DataFrame, max_cols: int, size: tuple[float, float], **kw):
    """Fig. F3's grid: a panel per neuron (``label``), at most ``max_cols`` a row, no empty cell
    (:func:`helixclock.plotting.figure_layout.panel_grid`), panels of ``size`` inches; (figure, [(axes, (label,
    its rows))])."""
    labels = list(dict.fromkeys(lens_table["label"]))
    fig, axes = panel_grid(len(labels), max_cols, size, **kw)
    return fig, list(zip(axes, [(label, lens_table[lens_table["label"] == label]) for label in labels]))


def figF3_neuron_logit_lens(lens_table: pd.DataFrame, model: str):
    """Fig. F3: each neuron's logit lens over the answer tokens 0..198 at its most-activating
    prompt, the answer of that prompt marked (units at the digits' places:
    :func:`_digit_lens_figure`; :func:`helixclock.prompts.layout.whole_numbers`)."""
    if not whole_numbers(lens_table["place"]):
        return _digit_lens_figure(lens_table, model)
    fig, panels = _lens_panels(lens_table, 2, (6.0, 3.0))
    for ax, (label, part) in panels:
        sns.lineplot(part, x="token", y="logit", ax=ax, lw=1.0, color=PALETTE["model"])
        ans = int(part["answer"].iloc[0])
        ax.axvline(ans, color=PALETTE["highlight"], ls="--", lw=0.8)
        ax.axhline(0, color="grey", lw=0.5)
        top = dominant_periods(part["logit"].to_numpy()[None])
        ax.set_title(
            f"{label} at {int(part['max_a'].iloc[0])}+{int(part['max_b'].iloc[0])} = {ans}: "
            f"top period {_period_label(top['period'][0])}"
        )
        ax.set_xlabel("answer token (0..198)")
        ax.set_ylabel("logit lens (post × W_U W_out)")
    suptitle(
        fig, f"{model}: what top neurons write to the answer logits (logit lens, no final norm; red dashed: the answer)"
    )
    return fig


def _digit_lens_figure(lens_table: pd.DataFrame, model: str):
    """Fig. F3 for answers of several tokens: each unit's write over the digit tokens 0..9 and the
    answer's end, through the final norm and unembedding, at its most-activating prompt; the
    digit its place takes in that prompt's answer marked."""
    fig, panels = _lens_panels(lens_table, 4, (3.6, 2.8))
    places = {"units": 0, "tens": 1, "hundreds": 2}
    for ax, (label, part) in panels:
        answer = int(part["max_a"].iloc[0]) + int(part["max_b"].iloc[0])
        digit = str(answer // 10 ** places[str(part["place"].iloc[0])] % 10)
        colors = [PALETTE["highlight"] if t == digit else PALETTE["model"] for t in part["token"]]
        ax.bar(part["token"], part["logit"], color=colors)
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_title(
            f"{label}\nat {int(part['max_a'].iloc[0])}+{int(part['max_b'].iloc[0])} (digit {digit} red)", fontsize=9
        )
        ax.set_xlabel("token")
        ax.set_ylabel("logit lens (post × final norm, W_U)", fontsize=8)
    suptitle(fig, f"{model}: what top units write to the digit tokens (logit lens through the final norm)")
    return fig


def _unit_set(periods_table: pd.DataFrame) -> str:
    """The name of the set of units Fig. F4 reads, as its table says (column unit_set: the 80% DE
    set, or the 80% |DE| set where the top units' DEs sum to 0 or less)."""
    names = periods_table["unit_set"].unique() if "unit_set" in periods_table else [DE_SET]
    return f"80% {names[0]}" if len(names) == 1 else f"80% {DE_SET} or {ABS_DE_SET}"


def _digit_periods_figure(periods_table: pd.DataFrame, model: str):
    """Fig. F4 for answers of several tokens: per place and fitted a+b period T of the units of
    the 80% DE set, how often their lens's period over the digits is what T predicts there (units
    place: T for T = 2, 5, 10; tens place: 10 for T = 100; grey where T predicts nothing)."""
    table = periods_table.assign(
        outcome=np.where(
            periods_table["predicted_period"].isna(),
            "nothing predicted",
            np.where(periods_table["matches"], "as predicted", "other period"),
        ),
        group=[f"{p}, T = {int(t)}" for p, t in zip(periods_table["place"], periods_table["fitted_period"])],
    )
    fig, ax = plt.subplots(figsize=(max(7.5, 1.1 * table["group"].nunique() + 2), 4.6))
    if table.empty:
        ax.text(
            0.5,
            0.5,
            f"no units of the {_unit_set(table)} with an a+b term largest",
            ha="center",
            transform=ax.transAxes,
        )
    else:
        counts = table.groupby(["group", "outcome"]).size().rename("units").reset_index()
        palette = {
            "as predicted": PALETTE["highlight"],
            "other period": PALETTE["other"],
            "nothing predicted": "#cccccc",
        }
        sns.barplot(counts, x="group", y="units", hue="outcome", palette=palette, ax=ax)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(axis="x", labelsize=8, rotation=30)
        shared_legend(fig, [ax])
    ax.set_xlabel("place of the unit, period of its largest a+b fit term")
    shares = table.loc[table["predicted_period"].notna(), "matches"]
    base = ""
    if "q" in table and table["q"].notna().any():  # the base rate (lens_null): other units of the layer
        counted = table[table["q"].notna()]
        m = int(counted["matches"].sum())
        base = (
            f"; by chance {counted['q'].sum():.1f} of {len(counted)} expected, "
            f"P(≥ {m}) = {poisson_binomial_sf(m, counted['q'].to_numpy()):.2g} "
            "(lens: norms applied to the column alone)"
        )
    suptitle(
        fig,
        f"{model}: digit-lens periods of the units of the {_unit_set(table)}\n"
        f"{shares.mean():.0%} of {len(shares)} with a prediction show it{base}"
        if len(shares)
        else f"{model}: no prediction",
        fontsize=10,
    )
    return fig


def figF4_logit_lens_periods(periods_table: pd.DataFrame, model: str, fitted_periods=PERIODS, top: int = 8):
    """Fig. F4: for the neurons of the 80% DE set whose fit's largest term is an a+b term of
    period T, the top Fourier period of their logit lens, one panel per T; bars at T (a strict
    match) red, at a harmonic T/k orange; each panel gives both match shares (units at the
    digits' places: :func:`_digit_periods_figure`)."""
    if not whole_numbers(periods_table["place"]):
        return _digit_periods_figure(periods_table, model)
    present = [T for T in fitted_periods if (periods_table["fitted_period"] == T).any()]
    if not present:
        return empty(
            f"{model}: no neuron of the {_unit_set(periods_table)} has an (a+b) term "
            f"of T in {list(fitted_periods)} largest"
        )
    fig, axes = panel_grid(len(present), 2, (5.5, 3.3))
    harmonic_color = "#ff7f0e"
    for ax, T in zip(axes, present):
        part = periods_table[periods_table["fitted_period"] == T]
        counts = period_counts(part["lens_period"]).head(top).sort_values("period")
        labels = [_period_label(p) for p in counts["period"]]
        orders = harmonic_order(counts["period"].to_numpy(), float(T))
        colors = [PALETTE["highlight"] if k == 1 else harmonic_color if k > 1 else PALETTE["other"] for k in orders]
        sns.barplot(
            x=labels, y=counts["count"].to_numpy(), hue=labels, palette=dict(zip(labels, colors)), ax=ax, legend=False
        )
        shares = match_shares(part)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        ax.set_title(
            f"largest fitted term c(T = {T}, a+b) (n = {shares['n']}):\n{shares['strict']:.0%} at T, "
            f"{shares['harmonic']:.0%} at T/k (k ≤ {HARMONICS})",
            fontsize=10,
        )
        ax.set_xlabel("top Fourier period of the logit lens (199/k tokens)")
        ax.set_ylabel("neurons")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    total = match_shares(periods_table)
    missing = [T for T in fitted_periods if T not in present]
    none = f"; no neuron's largest term at T = {', '.join(f'{T:g}' for T in missing)}" if missing else ""
    suptitle(
        fig,
        f"{model}: logit-lens periods of the neurons of the {_unit_set(periods_table)} by the period of their "
        f"largest (a+b) fit term\nall {total['n']}: {total['strict']:.0%} at the fitted period (red), "
        f"{total['harmonic']:.0%} at it or a harmonic T/k (orange); paper: often the same, 200 common{none}",
        fontsize=11,
    )
    return fig


def figF5_logit_examples(examples: pd.DataFrame, model: str):
    """Fig. F5: final logits over the answer tokens 0..198 for a few prompts, their line fit
    and answer; numbers of several tokens: the answers' log-likelihoods L(n), beside their
    independent-digits control."""
    several = "control" in examples
    score = "log-likelihood L(n)" if several else "logits"
    ids = list(dict.fromkeys(examples["example"]))
    fig, axes = plt.subplots(1, len(ids), figsize=(5.0 * len(ids), 3.6), squeeze=False, sharey=False)
    for ax, i in zip(axes[0], ids):
        part = examples[examples["example"] == i]
        sns.lineplot(part, x="token", y="logit", ax=ax, lw=1.0, color=PALETTE["model"], label=score)
        if several:
            sns.lineplot(
                part, x="token", y="control", ax=ax, lw=0.8, color=PALETTE["other"], label="independent digits"
            )
        sns.lineplot(part, x="token", y="line", ax=ax, lw=1.0, ls="--", color="k", label="line fit")
        r = part.iloc[0]
        ax.axvline(r["answer"], color=PALETTE["highlight"], ls=":", lw=1.0, label="the answer")
        verdict = "correct" if r["correct"] else f"wrong: {r['pred']}"
        ax.set_title(
            f"{int(r['a'])}+{int(r['b'])} = {int(r['answer'])} ({verdict})\nslope {r['slope']:.3f}, "
            f"top period of detrended {_period_label(r['top_period'])}",
            fontsize=10,
        )
        ax.set_xlabel("answer n (0..198)" if several else "answer token (0..198)")
        ax.set_ylabel(score if several else "final logit")
    shared_legend(fig, axes[0], "lower")
    what = (
        "the answers' log-likelihoods (their digit tokens and the end)"
        if several
        else "final logits over the answer tokens"
    )
    suptitle(fig, f"{model}: {what} for randomly drawn prompts")
    return fig


def figF6_logit_slope_fourier(per_prompt: pd.DataFrame, model: str, top: int = 10):
    """Fig. F6: top, the slope of each prompt's line through its logits over 0..198 against
    a+b; bottom, the most common top periods of the detrended logits (DC dropped).  Numbers of
    several tokens: of the answers' log-likelihoods L(n), the bars beside those of the
    independent-digits control, the title with the shares at T = 10 over 10..99 alone."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 7.0))
    sns.scatterplot(
        per_prompt,
        x="answer",
        y="slope",
        ax=ax,
        s=5,
        alpha=0.25,
        color=PALETTE["other"],
        edgecolor="none",
        label="prompts",
    )
    sns.lineplot(
        per_prompt, x="answer", y="slope", ax=ax, color=PALETTE["model"], errorbar=None, label="mean over prompts"
    )
    ax.axhline(0, color="k", lw=0.6)
    neg = float((per_prompt["slope"] < 0).mean())
    ax.set_xlabel("a + b")
    ax.set_ylabel("slope of the line through the logits")
    ax.set_title(f"slope < 0 for {neg:.1%} of prompts (paper, GPT-J: almost always negative)", fontsize=10)
    leg = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for handle in leg.legend_handles:
        handle.set_alpha(1)
    counts = period_counts(per_prompt["top_period"], N_ANSWERS).head(top).sort_values("period")
    best = counts.sort_values("count").iloc[-1]
    title = f"most common top period {_period_label(best['period'])} ({best['share']:.1%} of prompts; paper, GPT-J: 10)"
    several = "control_top_period" in per_prompt
    if several:  # numbers of several tokens: beside the independent-digits control
        control = period_counts(per_prompt["control_top_period"], N_ANSWERS)
        shown = pd.concat([counts, control.head(top)])["period"].drop_duplicates().sort_values()
        long = pd.concat(
            [
                part[part["period"].isin(shown)][["period", "count"]].assign(scores=name)
                for part, name in ((counts, "L(n)"), (control, "independent digits"))
            ]
        )
        long["label"] = [_period_label(p) for p in long["period"]]
        order = [_period_label(p) for p in shown]
        palette = [PALETTE["model"], PALETTE["other"]]
        sns.barplot(long, x="label", y="count", hue="scores", order=order, palette=palette, ax=ax2)
        at10 = control.loc[near(control["period"], 10), "share"].sum()
        two = [float(near(per_prompt[c], 10).mean()) for c in ("two_digit_top_period", "control_two_digit_top_period")]
        title += f"; the control: {at10:.1%} at 10\n"
        title += f"over the answers 10..99 alone: {two[0]:.1%} at 10, the control {two[1]:.1%}"
    else:
        labels = [_period_label(p) for p in counts["period"]]
        colors = [PALETTE["highlight"] if near(p, 10) else PALETTE["other"] for p in counts["period"]]
        sns.barplot(
            x=labels, y=counts["count"].to_numpy(), hue=labels, palette=dict(zip(labels, colors)), ax=ax2, legend=False
        )
    scores = "L(n)" if several else "logits"
    ax.set_ylabel("slope of the line through " + ("L(n)" if several else "the logits"))
    ax2.set_ylim(0, ax2.get_ylim()[1] * 1.15)
    ax2.set_xlabel(f"top Fourier period of the detrended {scores} (199/k{'' if several else ' tokens'})")
    ax2.set_ylabel("prompts")
    ax2.set_title(title, fontsize=10)
    what = (
        "the answers' log-likelihoods L(n) over 0..198" if several else "the final logits over the answer tokens 0..198"
    )
    suptitle(fig, f"{model}: {what}")
    return fig

"""Figures E1 and F1-F6, drawn from the tables of :mod:`.linear_addition` and :mod:`.errors`
(never from a model; no torch).  Each function takes tables and the model's name and
returns a matplotlib Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from ..report.look import PALETTE, figure, paper_note, percent_axis
from .errors import N_ANSWERS, PERIODS, dominant_periods, near, period_counts


def _period_label(p: float) -> str:
    return f"{p:.3g}"


def linear_addition(accuracy: pd.DataFrame, line: pd.DataFrame, model: str, alpha_mark: int = 100):
    """Fig. E1: accuracy of addition along the fitted line vs the model's, over the problems
    with a1 + a2 < alpha; beside it, where each number's representation sits on the line."""
    fig, (ax, ax2) = figure(1, 2, figsize=(11, 4.0), gridspec_kw={"width_ratios": [1.6, 1]})
    long = accuracy.melt(id_vars="alpha", value_vars=["linear_accuracy", "model_accuracy"],
                         var_name="method", value_name="accuracy").dropna()
    names = {"linear_accuracy": "linear addition on the fitted line", "model_accuracy": model}
    long["method"] = long["method"].map(names)
    sns.lineplot(long, x="alpha", y="accuracy", hue="method", ax=ax,
                 palette={names["linear_accuracy"]: PALETTE["linear addition"], model: PALETTE["model"]})
    row = accuracy[accuracy["alpha"] == alpha_mark]
    if len(row):
        ax.axvline(alpha_mark, color="grey", ls=":", lw=0.8)
        for col, color in (("linear_accuracy", PALETTE["linear addition"]), ("model_accuracy", PALETTE["model"])):
            v = float(row[col].iloc[0])
            if np.isfinite(v):
                ax.annotate(f"{v:.1%}", (alpha_mark, v), xytext=(5, 4), textcoords="offset points", color=color,
                            fontsize=9)
    ax.set_xlabel("α (problems a₁ + a₂ < α)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.02, 1.05)
    percent_axis(ax)
    r2 = float(accuracy["line_r2"].iloc[0])
    ax.set_title(f"addition along a line with R² = {r2:.3f}")
    ax.legend(title=None, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    paper_note(ax, "paper (GPT-J): R² = 0.997; at α = 100 linear < 20%, GPT-J > 80%", "lower left")
    sns.scatterplot(line, x="a", y="offset", ax=ax2, s=14, color=PALETTE["linear addition"], edgecolor="none")
    ax2.axhspan(-0.25, 0.25, color="grey", alpha=0.15, lw=0, label="|t(a) − a| < 0.25")
    ax2.axhline(0, color="k", lw=0.6)
    ax2.set_xlabel("a")
    ax2.set_ylabel("t(a) − a (position on the line − a)")
    ax2.set_title("each number's position on the line")
    ax2.legend(loc="upper right")
    fig.suptitle(f"{model}: why not linear addition? (numbers 0-99, layer-0 output, first 50 PCA dims)")
    fig.tight_layout()
    return fig


def error_distribution(errors: pd.DataFrame, summary: pd.DataFrame, model: str, xlim: int = 60):
    """Fig. F1: the wrong numeric answers by error = prediction - answer, the two most common
    errors marked with their shares."""
    s = summary.iloc[0]
    fig, ax = figure(figsize=(8, 4.0))
    num = errors[errors["numeric"]]
    if len(num):
        err = num["error"].clip(-xlim, xlim)
        sns.histplot(x=err, discrete=True, ax=ax, color=PALETTE["other"], edgecolor="none")
        for rank, col in ((1, "top1"), (2, "top2")):
            e = s[f"{col}_error"]
            if pd.notna(e):
                count = int((num["error"] == e).sum())
                ax.bar([e], [count], width=1.0, color=PALETTE["highlight"] if rank == 1 else PALETTE["model"])
                ax.annotate(f"{int(e):+d}: {s[f'{col}_share']:.1%}", (e, count), xytext=(0, 3),
                            textcoords="offset points", ha="center", fontsize=9)
        reach = min(xlim, int(np.abs(err).max()) + 2)
        ax.set_xlim(-reach - 0.5, reach + 0.5)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.3)  # headroom for the labels and the paper's values
    else:
        ax.text(0.5, 0.5, "no numeric wrong answers", ha="center", transform=ax.transAxes)
    ax.set_xlabel(f"error = prediction − answer (clipped to ±{xlim})")
    ax.set_ylabel("wrong numeric answers")
    ax.set_title(f"{model}: {int(s['n_wrong'])} wrong answers ({s['wrong_share']:.1%} of {int(s['n_prompts'])}); "
                 f"{s['numeric_share_of_wrong']:.1%} of them are numbers")
    paper_note(ax, "paper (GPT-J): 19.5% wrong, over half numbers;\n−10: 45.7%, +10: 27.9%", "upper left")
    return fig


def carry_test(errors: pd.DataFrame, carry: pd.DataFrame, model: str, error_value: int = -10):
    """Fig. F2: the units-digit sum of a and b when the error is -10 vs any other numeric
    error (densities), with the chi-squared p-values of both carry splits."""
    num = errors[errors["numeric"]].copy()
    num["group"] = np.where(num["error"] == error_value, f"error = {error_value}", "other errors")
    fig, ax = figure(figsize=(7.5, 4.0))
    if len(num):
        sns.histplot(num, x="units_sum", hue="group", stat="density", common_norm=False, discrete=True,
                     multiple="dodge", shrink=0.85, ax=ax, hue_order=[f"error = {error_value}", "other errors"],
                     palette=[PALETTE["highlight"], PALETTE["other"]])
        ax.get_legend().set_title(None)
    ax.axvline(9.5, color="k", ls="--", lw=0.8)
    ax.text(9.6, 0.98, "carry (≥ 10) →", transform=ax.get_xaxis_transform(), va="top", fontsize=8)
    ax.set_xticks(range(0, 19))
    ax.set_xlabel("units digit of a + units digit of b")
    ax.set_ylabel("density")
    ps = "; ".join(f"{r.split}: χ² = {r.chi2:.2f}, p = {r.p:.3g}" if np.isfinite(r.p) else f"{r.split}: no test"
                   for r in carry.itertuples())
    ax.set_title(f"{model}: is a carry more likely when the error is {error_value}?\n{ps} (Yates)", fontsize=10)
    paper_note(ax, "paper (GPT-J): not significant at 0.05", "upper left")
    return fig


def neuron_logit_lens(lens_table: pd.DataFrame, model: str):
    """Fig. F3: each neuron's logit lens over the answer tokens 0..198 at its most-activating
    prompt, the answer of that prompt marked."""
    labels = list(dict.fromkeys(lens_table["label"]))
    cols = 2 if len(labels) > 1 else 1
    rows = int(np.ceil(len(labels) / cols))
    fig, axes = figure(rows, cols, figsize=(6.0 * cols, 3.0 * rows), squeeze=False, sharex=True)
    for ax, label in zip(axes.ravel(), labels):
        part = lens_table[lens_table["label"] == label]
        sns.lineplot(part, x="token", y="logit", ax=ax, lw=1.0, color=PALETTE["model"])
        ans = int(part["answer"].iloc[0])
        ax.axvline(ans, color=PALETTE["highlight"], ls="--", lw=0.8, label=f"answer {ans}")
        ax.axhline(0, color="grey", lw=0.5)
        top = dominant_periods(part["logit"].to_numpy()[None])
        ax.set_title(f"{label} at {int(part['max_a'].iloc[0])}+{int(part['max_b'].iloc[0])}: "
                     f"top period {_period_label(top['period'][0])}")
        ax.set_xlabel("answer token (0..198)")
        ax.set_ylabel("logit lens (post × W_U W_out)")
        ax.legend(loc="lower left", fontsize=8)
    for ax in axes.ravel()[len(labels):]:
        ax.axis("off")
    fig.suptitle(f"{model}: what top neurons write to the answer logits (logit lens, no final norm)")
    fig.tight_layout()
    return fig


def logit_lens_periods(periods_table: pd.DataFrame, model: str, fitted_periods=PERIODS, top: int = 8):
    """Fig. F4: for neurons of the 80% DE set, grouped by the period of their largest fitted
    a+b term, the top Fourier period of their logit lens (bars near the fitted period red)."""
    fig, axes = figure(2, 2, figsize=(11, 6.4), squeeze=False)
    for ax, T in zip(axes.ravel(), fitted_periods):
        part = periods_table[periods_table["top_sum_period"] == T]
        if part.empty:
            ax.text(0.5, 0.5, "no neurons", ha="center", transform=ax.transAxes)
            ax.set_title(f"largest fitted a+b period T = {T} (n = 0)")
            continue
        counts = period_counts(part["lens_period"]).head(top).sort_values("period")
        labels = [_period_label(p) for p in counts["period"]]
        colors = [PALETTE["highlight"] if near(p, T) else PALETTE["other"] for p in counts["period"]]
        sns.barplot(x=labels, y=counts["count"].to_numpy(), hue=labels, palette=dict(zip(labels, colors)),
                    ax=ax, legend=False)
        share = float(part["matches"].mean())
        ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        ax.set_title(f"largest fitted a+b period T = {T} (n = {len(part)}): {share:.0%} within 5% of {T}")
        ax.set_xlabel("top Fourier period of the logit lens (199/k tokens)")
        ax.set_ylabel("neurons")
    fig.suptitle(f"{model}: logit-lens periods of the 80% DE neurons by their fitted a+b period "
                 f"(paper: often the same; 200 common)")
    fig.tight_layout()
    return fig


def logit_examples(examples: pd.DataFrame, model: str):
    """Fig. F5: final logits over the answer tokens 0..198 for a few prompts, their line fit
    and answer."""
    ids = list(dict.fromkeys(examples["example"]))
    fig, axes = figure(1, len(ids), figsize=(5.0 * len(ids), 3.6), squeeze=False, sharey=False)
    for ax, i in zip(axes[0], ids):
        part = examples[examples["example"] == i]
        sns.lineplot(part, x="token", y="logit", ax=ax, lw=1.0, color=PALETTE["model"], label="logits")
        sns.lineplot(part, x="token", y="line", ax=ax, lw=1.0, ls="--", color="k", label="line fit")
        r = part.iloc[0]
        ax.axvline(r["answer"], color=PALETTE["highlight"], ls=":", lw=1.0, label=f"answer {int(r['answer'])}")
        verdict = "correct" if r["correct"] else f"wrong: {r['pred']}"
        ax.set_title(f"{int(r['a'])}+{int(r['b'])} ({verdict})\nslope {r['slope']:.3f}, "
                     f"top period of detrended {_period_label(r['top_period'])}", fontsize=10)
        ax.set_xlabel("answer token (0..198)")
        ax.set_ylabel("final logit")
        ax.legend(fontsize=8, loc="lower left")
    fig.suptitle(f"{model}: final logits over the answer tokens for randomly drawn prompts")
    fig.tight_layout()
    return fig


def logit_slope_fourier(per_prompt: pd.DataFrame, model: str, top: int = 10):
    """Fig. F6: top, the slope of each prompt's line through its logits over 0..198 against
    a+b; bottom, the most common top periods of the detrended logits (DC dropped)."""
    fig, (ax, ax2) = figure(2, 1, figsize=(8, 7.0))
    sns.scatterplot(per_prompt, x="answer", y="slope", ax=ax, s=5, alpha=0.25, color=PALETTE["other"],
                    edgecolor="none", label="prompts")
    sns.lineplot(per_prompt, x="answer", y="slope", ax=ax, color=PALETTE["model"], errorbar=None,
                 label="mean over prompts")
    ax.axhline(0, color="k", lw=0.6)
    neg = float((per_prompt["slope"] < 0).mean())
    ax.set_xlabel("a + b")
    ax.set_ylabel("slope of the line through the logits")
    ax.set_title(f"slope < 0 for {neg:.1%} of prompts")
    leg = ax.legend(loc="lower left")
    for handle in leg.legend_handles:
        handle.set_alpha(1)
    paper_note(ax, "paper (GPT-J): almost always negative", "upper right")
    counts = period_counts(per_prompt["top_period"], N_ANSWERS).head(top).sort_values("period")
    labels = [_period_label(p) for p in counts["period"]]
    colors = [PALETTE["highlight"] if near(p, 10) else PALETTE["other"] for p in counts["period"]]
    sns.barplot(x=labels, y=counts["count"].to_numpy(), hue=labels, palette=dict(zip(labels, colors)), ax=ax2,
                legend=False)
    best = counts.sort_values("count").iloc[-1]
    ax2.set_ylim(0, ax2.get_ylim()[1] * 1.15)
    ax2.set_xlabel("top Fourier period of the detrended logits (199/k tokens)")
    ax2.set_ylabel("prompts")
    ax2.set_title(f"most common top period {_period_label(best['period'])} ({best['share']:.1%} of prompts)")
    paper_note(ax2, "paper (GPT-J): 10 most common", "upper right")
    fig.suptitle(f"{model}: the final logits over the answer tokens 0..198")
    fig.tight_layout()
    return fig


FIGURES = {"figE1_linear_addition": linear_addition, "figF1_error_distribution": error_distribution,
           "figF2_carry_test": carry_test, "figF3_neuron_logit_lens": neuron_logit_lens,
           "figF4_logit_lens_periods": logit_lens_periods, "figF5_logit_examples": logit_examples,
           "figF6_logit_slope_fourier": logit_slope_fourier}

"""Whether a run's number agrees with the paper's (paper_comparison's status; docs/running.md, "The
report").

A number is compared with the paper's only where both are on one scale whatever the model:
*scale-free* quantities (shares and fractions, ratios, a ratio to Full of Table 1, periods).
There the run **agrees** when the paper's value lies inside the run's interval widened by a
declared tolerance (config key ``report.tolerance``: absolute for shares and ratios, relative for
periods; the tables hold no interval for most of these numbers, so the interval is the run's
value itself, widened), or, for a bound the paper states ("less than 20%"), when the run's value
satisfies it; else it **differs**.  Every other number is **not comparable**, with the reason:
a logit difference is in the model's own logits (different metric), a count of heads, MLPs or
neurons or a layer scales with the model (different model), a p-value with the number of answers
tested (not defined as a property of the model), and the heads' top-k numbers over a screened
subset are not the paper's over all heads (screened subset).

Imports no torch.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

AGREE, DIFFER, NOT_COMPARABLE = "agree", "differ", "not comparable"
TOLERANCE = 0.1  # config key report.tolerance's default

RATIO_TO_FULL = "ratio to Full"
# the scale-free quantities, by kind (the others are not comparable: REASONS below)
KINDS: dict[str, str] = {
    **{q: "share" for q in ("add_accuracy", "heads_fraction_k20", "mixed_fraction_m4", "mixed_fraction_m0")},
    **{q: "share" for q in ("neuron_accuracy_at_1pct", "neuron_accuracy_at_1pct_live", "model_accuracy_alpha100")},
    **{q: "share" for q in ("top_neurons_in_circuit_share", "de80_late_share", "logit_slope_negative_share")},
    **{q: "share" for q in ("wrong_share", "numeric_share_of_wrong", "minus10_share", "plus10_share")},
    "top2_cumulative_share": "share",
    "neuron_fit_recovery": "ratio",
    "logit_top_period": "period",
}
DIFFERENT_MODEL = "different model: a {what} scales with the model's size; the paper's is GPT-J's (or its own model's)"
P_VALUE = "not defined: a p-value measures the evidence of the answers tested, not a property to compare"
REASONS: dict[str, str] = {  # why a quantity is not comparable
    "n_heads_total": DIFFERENT_MODEL.format(what="count of heads"),
    "heads_k_for_80pct": DIFFERENT_MODEL.format(what="count of heads"),
    "mlp_k_for_95pct": DIFFERENT_MODEL.format(what="count of MLPs"),
    "mlp_circuit_first_layer": DIFFERENT_MODEL.format(what="layer"),
    "mlp_circuit_last_layer": DIFFERENT_MODEL.format(what="layer"),
    "mlp_stage_boundary": DIFFERENT_MODEL.format(what="layer"),
    "n_top_neurons": DIFFERENT_MODEL.format(what="count of neurons"),
    "n_neurons_de80": DIFFERENT_MODEL.format(what="count of neurons"),
    "carry_test_p": P_VALUE,
    "carry_test_p_authors": P_VALUE,
}
LD_IN_LOGITS = (
    "different metric: an LD in the model's own logits (or log-likelihoods) is not comparable across models; "
    "compared through its ratio to Full"
)


def kind(qid: str) -> str | None:
    """The scale-free kind of quantity ``qid`` ("share", "ratio", "period", :data:`RATIO_TO_FULL`
    for a fit of Table 1 other than Full), or None where it is not comparable."""
    if qid in KINDS or re.fullmatch(r"(sub23|div5|mul1p5|mod2|solve_x)_accuracy", qid):
        return KINDS.get(qid, "share")
    if re.fullmatch(r"line_r2(_\w+)?|linear_accuracy_alpha100(_\w+)?", qid):
        return "share"
    if qid.startswith("tab01_") and not qid.endswith("_full"):
        return RATIO_TO_FULL
    return None


def not_comparable_reason(qid: str) -> str:
    """Why quantity ``qid`` is not compared with the paper's."""
    if qid in REASONS:
        return REASONS[qid]
    if qid.startswith("tab01_"):
        return "different metric: Full is the reference of Table 1's ratios (1 by definition); its LD is in logits"
    if re.fullmatch(r"n_\w+_heads|\w+_heads_layer_(min|max)", qid):
        return DIFFERENT_MODEL.format(what="count or layer of heads")
    return "not defined: helixclock compares only scale-free quantities (shares, ratios, periods) across models"


def judge(
    qid: str, run: float, paper: float, relation: str, run_to_full: float, paper_to_full: float, tolerance: float
) -> tuple[str, str]:
    """(status, reason) of a quantity the run has a value of: agree or differ for a scale-free
    quantity (:func:`kind`), else not comparable (:func:`not_comparable_reason`)."""
    k = kind(qid)
    if k is None:
        return NOT_COMPARABLE, not_comparable_reason(qid)
    if k == RATIO_TO_FULL:
        run, paper, what = run_to_full, paper_to_full, "ratio to Full"
        if not (np.isfinite(run) and np.isfinite(paper)):
            return NOT_COMPARABLE, "not defined: no ratio to Full (its task's Full is missing or 0)"
    else:
        what = k
    if relation != "=":
        holds = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal}[relation](run, paper)
        words = "satisfies" if holds else "fails"
        return (AGREE if holds else DIFFER), f"the run's {_g(run)} {words} the paper's bound {relation} {_g(paper)}"
    low, high = widened(run, run, tolerance, k)
    inside = bool(low <= paper <= high)
    words = "inside" if inside else "outside"
    widened_run = f"the run's {_g(run)} widened by the tolerance [{_g(low)}, {_g(high)}]"
    reason = f"the paper's {what} {_g(paper)} is {words} {widened_run}"
    return (AGREE if inside else DIFFER), reason


def widened(low: float, high: float, tolerance: float, k: str) -> tuple[float, float]:
    """The run's interval [low, high] widened by ``tolerance``: absolute for shares and ratios,
    relative for periods."""
    if k == "period":
        return low * (1 - tolerance), high * (1 + tolerance)
    return low - tolerance, high + tolerance


def _g(v: float) -> str:
    return f"{v:.4g}" if np.isfinite(v) else "–"


def screened_subset(topk: pd.DataFrame | None, card: dict | None) -> str | None:
    """The reason the heads' top-k numbers are not the paper's, where the run activation-patched
    only a screened subset of the heads (config key clock.head_screen): the paper's are over all
    heads; None where every head was patched (or the tables are missing)."""
    if topk is None or not isinstance(card, dict) or "n_heads" not in card or not len(topk):
        return None
    part = topk[topk["reading"] == "last token"] if "reading" in topk else topk
    patched, total = int(part["k"].max()), int(card["n_layers"] * card["n_heads"])
    if patched >= total:
        return None
    return (
        f"screened subset: over the {patched} of {total} heads the run activation-patched, the paper's over all heads"
    )

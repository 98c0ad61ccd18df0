"""Whether a run's number agrees with the paper's (paper_comparison's status, of
:data:`.status.MEANINGS`; docs/running.md, "The report").

A number is judged against the paper's only where both are on one scale whatever the model:
*scale-free* quantities (shares and fractions, ratios, a ratio to Full of Table 1, periods).
There the run **agrees** when the paper's value lies inside the run's interval widened by a
declared tolerance (config key ``report.tolerance``: absolute for shares and ratios, relative for
periods; the tables hold no interval for most of these numbers, so the interval is the run's
value itself, widened), or, for a bound the paper states ("less than 20%"), when the run's value
satisfies it; else it **differs** (status ``differ``).  Every other number is **not comparable**, with a reason that
says why in words (:func:`not_comparable_reason`): Table 1's Full is an LD in the model's own
logits and the reference of the other fits' ratios to Full; a count of heads, MLPs or neurons
depends on the model's size and a layer on its depth; a p-value measures the evidence of the
answers tested; the heads' top-k numbers over a screened subset are not the paper's over all
heads.

Imports no torch.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .status import AGREE, DIFFER, NOT_COMPARABLE

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
NOT_JUDGED = "so it is shown beside the paper's (column ratio) but not judged: only shares, ratios and periods are"
P_VALUE = (
    "a p-value measures how strong the evidence of the answers tested is (it falls as more answers are tested), "
    "not a property of the model to set beside the paper's"
)


def _count(what: str) -> str:
    return f"a count of {what} depends on the model's size (how many layers, heads and neurons it has), {NOT_JUDGED}"


LAYER = f"a layer's index depends on how many layers the model has, {NOT_JUDGED}"
FULL = (
    "Full's LD is a difference of this model's own logits (for numbers of several tokens, of its answer tokens' "
    "log-likelihoods), whose scale varies from model to model, so it is not judged; it is the denominator of "
    "the ratio to Full (run_to_full beside paper_to_full) by which this task's Helix, PCA, Circle and Poly rows "
    "are judged (Full / Full is 1 for every model)"
)
NO_RATIO = "no ratio to Full to judge: this task's Full, the run's or the paper's, is absent or 0"
REASONS: dict[str, str] = {  # why a quantity is not comparable
    "n_heads_total": _count("heads"),
    "heads_k_for_80pct": _count("heads"),
    "mlp_k_for_95pct": _count("MLPs"),
    "mlp_circuit_first_layer": LAYER,
    "mlp_circuit_last_layer": LAYER,
    "mlp_stage_boundary": LAYER,
    "n_top_neurons": _count("neurons"),
    "n_neurons_de80": _count("neurons"),
    "carry_test_p": P_VALUE,
    "carry_test_p_authors": P_VALUE,
}


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
        return FULL
    if re.fullmatch(r"n_\w+_heads", qid):
        return _count("heads")
    if re.fullmatch(r"\w+_heads_layer_(min|max)", qid):
        return LAYER
    return f"not a scale-free quantity, {NOT_JUDGED}"


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
            return NOT_COMPARABLE, NO_RATIO
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
    part = topk[topk["reading"] == "last token"]
    patched, total = int(part["k"].max()), int(card["n_layers"] * card["n_heads"])
    if patched >= total:
        return None
    return (
        f"screened subset: over the {patched} of {total} heads the run activation-patched, the paper's over all heads"
    )

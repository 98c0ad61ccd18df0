"""paper_comparison's agree / differ / not comparable (helixclock.stages.report.agreement;
docs/running.md, "The report"): only scale-free quantities are judged, the paper's value against the run's widened
by the declared tolerance; every other number says why it is not comparable."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from helixclock.stages.report.agreement import AGREE, DIFFER, NOT_COMPARABLE, judge, kind, screened_subset


def test_a_share_agrees_within_the_tolerance_and_differs_outside():
    assert judge("add_accuracy", 0.75, 0.805, "=", np.nan, np.nan, 0.1)[0] == AGREE
    status, reason = judge("add_accuracy", 0.60, 0.805, "=", np.nan, np.nan, 0.1)
    assert (
        status == DIFFER
        and reason == "the paper's share 0.805 is outside the run's 0.6 widened by the tolerance [0.5, 0.7]"
    )
    assert judge("add_accuracy", 0.60, 0.805, "=", np.nan, np.nan, 0.25)[0] == AGREE  # a wider declared tolerance
    assert judge("linear_accuracy_alpha100_regression", 0.1, 0.2, "<", np.nan, np.nan, 0.1)[0] == AGREE  # a bound
    assert judge("linear_accuracy_alpha100_regression", 0.25, 0.2, "<", np.nan, np.nan, 0.1)[0] == DIFFER


def test_a_period_is_judged_relatively_and_table_1_by_its_ratio_to_full():
    assert judge("logit_top_period", 10.5, 10.0, "=", np.nan, np.nan, 0.1)[0] == AGREE
    assert judge("logit_top_period", 5.0, 10.0, "=", np.nan, np.nan, 0.1)[0] == DIFFER
    # toy-gptj's Full 13.16 against the paper's 8.34 (ratio 1.58): an LD in logits is not comparable, and the
    # reason says why Full is not judged while Helix / Full is
    status, reason = judge("tab01_add_full", 13.16, 8.34, "=", 1.0, 1.0, 0.1)
    assert status == NOT_COMPARABLE and reason.startswith("Full's LD is a difference of this model's own logits")
    assert "it is the denominator of the ratio to Full (run_to_full beside paper_to_full)" in reason
    # its Helix is judged by Helix / Full against the paper's: 12.0 / 13.16 = 0.912 against 7.21 / 8.34 = 0.865
    status, reason = judge("tab01_add_helix", 12.0, 7.21, "=", 12.0 / 13.16, 7.21 / 8.34, 0.1)
    assert status == AGREE and "ratio to Full 0.8645 is inside" in reason
    assert judge("tab01_add_poly", 2.0, 6.91, "=", 2.0 / 13.16, 6.91 / 8.34, 0.1)[0] == DIFFER
    assert judge("tab01_add_poly", 2.0, 6.91, "=", np.nan, 0.8, 0.1)[0] == NOT_COMPARABLE  # no Full of the run


@pytest.mark.parametrize(
    ("qid", "words"),
    [
        ("n_heads_total", "a count of heads depends on the model's size"),
        ("mlp_k_for_95pct", "a count of MLPs depends on the model's size"),
        ("mlp_stage_boundary", "a layer's index depends on how many layers the model has"),
        ("n_neurons_de80", "a count of neurons depends on the model's size"),
        ("n_ab_heads", "a count of heads depends on the model's size"),
        ("sum_heads_layer_min", "a layer's index depends on how many layers the model has"),
        ("carry_test_p", "a p-value measures how strong the evidence of the answers tested is"),
    ],
)
def test_counts_layers_and_p_values_are_not_comparable_with_the_reason(qid, words):
    assert kind(qid) is None
    status, reason = judge(qid, 12.0, 12.0, "=", np.nan, np.nan, 0.1)  # even an equal value
    assert status == NOT_COMPARABLE and reason.startswith(words)
    # no status word of another status in the reason, and no words a reader cannot parse
    assert not re.search(r"\b(not defined|different metric|different model)\b|its own model's", reason)


def test_the_heads_top_k_over_a_screened_subset_is_not_the_papers():
    """SmolLM2 patches 20 of its 270 heads: its "k for 80%" and "fraction at k = 20" are over those
    20, the paper's over all heads; a toy that patches every head is compared."""
    card = {"n_layers": 30, "n_heads": 9}
    topk = pd.DataFrame({"reading": ["last token"] * 21 + ["answer positions"] * 21, "k": list(range(21)) * 2})
    assert screened_subset(topk, card) == (
        "screened subset: over the 20 of 270 heads the run activation-patched, the paper's over all heads"
    )
    assert (
        screened_subset(pd.DataFrame({"k": range(17), "reading": "last token"}), {"n_layers": 4, "n_heads": 4}) is None
    )
    assert screened_subset(None, card) is None

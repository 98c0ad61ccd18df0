"""Summaries by answer length (helixclock.stats.lengths, docs/findings.md "Findings"): strata by answer token
count recovered from planted per-pair tables, the mix stated, and length-standardised means that
compare two models whose pairs mix answer lengths differently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helixclock.patching.metrics import PLACES
from helixclock.stages.helix.tables import STANDARDISED, tab_other_tasks
from helixclock.stages.report.figures import ld_ratios_long
from helixclock.stats.lengths import STANDARD, answer_lengths, by_length, mix, pair_lengths, standardised
from helixclock.stats.statistics import Resampling, pair_columns, summarise

RESAMPLING = Resampling(bootstrap=200, seed=0)
# planted mean LD by answer length, per Table 1 column (method)
EFFECT = {"Full": {1: 1.0, 2: 2.0, 3: 4.0}, "PCA": {1: 0.4, 2: 0.8, 3: 2.6}, "Helix": {1: 0.5, 2: 1.0, 3: 3.0}}
EFFECT |= {"Circle": {1: 0.3, 2: 0.7, 3: 2.0}, "Poly": {1: 0.1, 2: 0.2, 3: 0.9}}
METHODS = {"layer": "Full", "pca": "PCA", "helix": "Helix", "circle": "Circle", "poly": "Poly"}


def planted(lengths: np.ndarray, seed: int = 0, task: str = "add") -> pd.DataFrame:
    """A raw LD table of answers of several tokens (rows by term): per method and layer the
    ``ld`` row (the planted effect of the pair's answer length plus noise of mean exactly 0 per
    length) and a term per place, NaN past the answer's tokens."""
    rng = np.random.default_rng(seed)
    n = len(lengths)
    rows = []
    for layer in (0, 1):
        for method, label in METHODS.items():
            noise = rng.normal(0, 0.3, n)
            for k in np.unique(lengths):
                noise[lengths == k] -= noise[lengths == k].mean()
            ld = np.array([EFFECT[label][k] for k in lengths]) * (layer + 1) / 2 + noise
            base = {"task": task, "layer": layer, "method": method}
            rows.append({**base, "term": "ld", **{f"pair_{i}": v for i, v in enumerate(ld)}})
            for p, place in enumerate(PLACES):
                values = np.where(lengths > p, ld / lengths, np.nan)
                rows.append({**base, "term": place, **{f"pair_{i}": v for i, v in enumerate(values)}})
    return pd.DataFrame(rows)


def test_lengths_are_read_from_the_terms_and_the_pairs_table():
    lengths = np.array([2, 3, 3, 2, 3, 1])
    raw = planted(lengths)
    assert answer_lengths(raw).tolist() == lengths.tolist()
    pairs = pd.DataFrame({"pair": pair_columns(raw)[::-1], "answer_tokens": lengths[::-1], "draw": "measure"})
    assert pair_lengths(raw, pairs).tolist() == lengths.tolist()
    one = raw[raw["term"] == "ld"].drop(columns="term")
    assert answer_lengths(one) is None and pair_lengths(one, None).tolist() == [1] * 6  # one-token answers
    assert mix(lengths) == "1 token: 1 pair, 2 tokens: 2 pairs, 3 tokens: 3 pairs"


def test_strata_recover_the_planted_means_and_the_mix_gives_the_overall_mean():
    lengths = np.array([2] * 22 + [3] * 28)
    raw = planted(lengths)
    ld = raw[raw["term"] == "ld"].drop(columns="term").reset_index(drop=True)
    strata = by_length(ld, lengths, lambda t: summarise(t, RESAMPLING))
    assert strata.groupby("answer_tokens")["share_of_pairs"].first().to_dict() == {2: 0.44, 3: 0.56}
    got = strata[(strata["layer"] == 1) & (strata["method"] == "layer")].set_index("answer_tokens")["ld_mean"]
    assert got.to_dict() == pytest.approx({2: EFFECT["Full"][2], 3: EFFECT["Full"][3]}, abs=1e-5)
    assert (strata["n_pairs"] == np.where(strata["answer_tokens"] == 2, 22, 28)).all()
    overall = summarise(ld, RESAMPLING)["ld_mean"].to_numpy()
    mixed = sum(share * part["ld_mean"].to_numpy() for share, part in [(0.44, strata[strata["answer_tokens"] == 2]),
                                                                         (0.56, strata[strata["answer_tokens"] == 3])])  # fmt: skip
    assert np.allclose(overall, mixed, atol=1e-5)
    with pytest.raises(ValueError, match="answer lengths"):
        by_length(ld, lengths[:-1], lambda t: t)


def test_length_standardised_means_compare_two_mixes_of_the_same_effects():
    """Two models with the same effect at each answer length, drawn with different mixes: their
    means over all pairs differ, their length-standardised means (and Table 1's columns of them,
    and the cross-model figure's ratios) agree; one-token tables keep their columns."""
    few = np.array([2] * 40 + [3] * 10)
    many = np.array([2] * 10 + [3] * 40)
    tables = {}
    for name, lengths in (("few", few), ("many", many)):
        tables[name] = tab_other_tasks(planted(lengths, seed=len(name)), RESAMPLING)["table"]
    assert abs(tables["few"]["Full"].iloc[0] - tables["many"]["Full"].iloc[0]) > 0.5
    std = f"Full{STANDARDISED}"
    want = standardised({2: np.array([EFFECT["Full"][2]]), 3: np.array([EFFECT["Full"][3]])})[0]
    assert tables["few"][std].iloc[0] == pytest.approx(want, abs=1e-5) == tables["many"][std].iloc[0]
    assert want == pytest.approx((STANDARD[2] * 2.0 + STANDARD[3] * 4.0) / (STANDARD[2] + STANDARD[3]))
    assert tables["few"]["answer lengths"].iloc[0] == "2 tokens: 40 pairs, 3 tokens: 10 pairs"
    ratios = ld_ratios_long(tables).pivot_table(index="ratio", columns="model", values="value")
    assert ratios.loc["Helix / Full", "few"] == pytest.approx(ratios.loc["Helix / Full", "many"], abs=1e-5)
    one = planted(few)
    one = one[one["term"] == "ld"].drop(columns="term")
    assert list(tab_other_tasks(one, RESAMPLING)["table"].columns) == ["task", *METHODS.values()]
    with pytest.raises(ValueError, match="no standard weight"):
        standardised({4: np.zeros(1)})

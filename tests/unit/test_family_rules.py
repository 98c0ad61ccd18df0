"""The family rules of the findings job (docs/findings.md, "Findings";
helixclock.stages.findings.verdicts.judge): the simultaneous (Bonferroni) intervals beside Holm's
verdicts and the declared minimum of pairs a row needs to count in its family.  Planted rows with
known numbers, and the multiplicity functions on planted normal estimates (fixed seeds)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.findings import contrast_row as row
from helpers.findings import planted_contrasts as planted
from scipy import stats

from helixclock.lm.config import ConfigError
from helixclock.stages.findings import registry as reg
from helixclock.stages.findings.verdicts import COLUMNS, SIMULTANEOUS_NOTE, judge, outside_note
from helixclock.stats.inference import t_interval
from helixclock.stats.multiplicity import ALPHA, bonferroni, holm

R = 4000  # replicates of the familywise rates below


def mc_se(rate: float) -> float:
    return float(np.sqrt(rate * (1 - rate) / R))


# -- simultaneous intervals -----------------------------------------------------------------------
def test_bonferroni_columns_are_the_t_interval_at_alpha_over_m_and_say_where_holm_rejects_inside_them():
    """A confirmatory family of m = 4 (t = 10, 4, 2.8, 2.3 on 40 df): Holm rejects all four at its
    steps (p 0.008 <= 0.025 for t = 2.8, 0.027 <= 0.05 for t = 2.3), while the Bonferroni interval
    at 0.05 / 4 (|t| above 2.63) includes 0 for the last: that row alone gets the note.  A
    screening family gets the columns at its own m, and no note (BH's interval is another's);
    a stage's own test (quantity tested) none."""
    rows = [row(f"c{i}", "conf", "confirmatory", t, 1.0, 40, 41) for i, t in enumerate((10, 4, 2.8, 2.3))]
    rows += [row(f"s{i}", "screen", "screening", t, 1.0, 40, 41) for i, t in enumerate((10, 2.3))]
    rows += [row("own", "conf2", "confirmatory", 3.0, 1.0, np.nan, 200, quantity="tested", p=0.001)]
    t = judge(planted(rows), ALPHA, 0.8).set_index("id")
    assert (t.loc[["c0", "c1", "c2", "c3"], "verdict"] == "holds").all()
    for fid, m in (("c0", 4), ("c3", 4), ("s1", 2)):
        half = stats.t.ppf(1 - ALPHA / m / 2, 40)
        est = t.loc[fid, "estimate"]
        assert t.loc[fid, ["bonf_low", "bonf_high"]].tolist() == pytest.approx([est - half, est + half]), fid
    assert t.loc["c3", "adj_low"] > 0 >= t.loc["c3", "bonf_low"]  # Holm's step excludes 0, Bonferroni does not
    assert t.loc["c3", "note"] == SIMULTANEOUS_NOTE
    assert t["note"].eq(SIMULTANEOUS_NOTE).sum() == 1
    assert t.loc["s1", "bonf_low"] < 0 and pd.isna(t.loc["s1", "note"])
    assert np.isnan(t.loc["own", ["bonf_low", "bonf_high", "adj_low"]].astype(float)).all()
    assert COLUMNS.index("bonf_low") == COLUMNS.index("adj_high") + 1 == COLUMNS.index("bonf_high") - 1


@pytest.mark.parametrize("m, holm_miss", [(4, 1 - 0.9875 * (1 - 0.05 / 3) * 0.975 * 0.95), (2, 1 - 0.975 * 0.95)])
def test_the_per_row_holm_intervals_are_not_simultaneous_and_the_bonferroni_ones_are(m, holm_miss):
    """m independent estimates (t on 49 df) of effects large enough that Holm rejects every row:
    the chance that some row's interval at its Holm step misses its true value is
    1 - prod_k (1 - alpha / k) (0.101 for m = 4, 0.074 for m = 2), above alpha by more than 2 MC
    SE: not simultaneous; the Bonferroni intervals (alpha / m each) miss together at most alpha
    + 2 MC SE."""
    rng = np.random.default_rng(40 + m)
    df, truth = 49, np.full(m, 8.0)
    se = np.sqrt(rng.chisquare(df, (R, m)) / df)  # the estimated SE of a unit-SE estimate
    estimate = truth + rng.normal(0, 1.0, (R, m))
    p = 2 * stats.t.sf(np.abs(estimate / se), df)
    levels = np.array([holm(row)[1] for row in p])
    assert np.array([holm(row)[0] for row in p]).all()
    missed = {}
    for name, level in (("holm", levels), ("bonferroni", np.full((R, m), bonferroni(m)))):
        low, high = t_interval(estimate, se, df, level)
        missed[name] = ((low > truth) | (high < truth)).any(1).mean()
    assert abs(missed["holm"] - holm_miss) <= 2 * mc_se(holm_miss), missed
    assert missed["holm"] > ALPHA + 2 * mc_se(ALPHA), missed
    assert missed["bonferroni"] <= ALPHA + 2 * mc_se(ALPHA), missed


# -- the declared minimum of pairs ----------------------------------------------------------------
def test_a_row_below_the_declared_minimum_is_an_estimate_outside_its_family():
    """Fig. 6 by stratum (planted): strata of 2 and 3 pairs beside two of 18 and 22.  With the
    declared minimum 10 the small strata leave the family (m = 2, Holm's steps 0.025 and 0.05),
    keep their 95% interval, and say so; without it (the old rule) they count in m = 4 and the
    other rows' first step is 0.0125.  A stage's own test on 2 units is not held to it."""
    rows = [
        row("s18", "fd", "confirmatory", 6.0, 1.3, 17, 18),
        row("s22", "fd", "confirmatory", 4.2, 1.2, 19, 22),
        row("s2", "fd", "confirmatory", 5.0, 3.2, 1, 2),
        row("s3", "fd", "confirmatory", 5.9, 3.2, 2, 3),
        row("own", "fd2", "confirmatory", 3.0, np.nan, np.nan, 2, quantity="tested", p=0.001),
    ]
    t = judge(planted(rows), ALPHA, 0.8, lambda family: 10).set_index("id")
    for fid, n in (("s2", 2), ("s3", 3)):
        assert t.loc[fid, "verdict"] == "estimate" and t.loc[fid, "note"] == outside_note(n, 10)
        assert t.loc[fid, "note"] == f"outside the family: {n} pairs, below its declared minimum of 10"
        assert t.loc[fid, ["m", "adj_low", "bonf_low", "mde"]].isna().all()
        assert t.loc[fid, "low"] == rows[[r["id"] for r in rows].index(fid)]["low"]
    assert (t.loc[["s18", "s22"], "m"] == 2).all()
    assert sorted(t.loc[["s18", "s22"], "alpha_step"]) == pytest.approx([ALPHA / 2, ALPHA])
    assert t.loc["own", "verdict"] == "holds"
    old = judge(planted(rows), ALPHA, 0.8).set_index("id")
    assert (old.loc[["s18", "s22", "s2", "s3"], "m"] == 4).all() and old.loc["s2", "verdict"] == "not distinguished"
    assert old.loc[["s18", "s22"], "alpha_step"].min() == pytest.approx(ALPHA / 4)


REGISTRY = """
min_pairs: 10
families:
  fd: {kind: confirmatory, title: "planted", min_pairs: 20}
  other: {kind: confirmatory, title: "planted"}
findings:
  - {id: f, section: "5.1", family: fd, models: both, claim: "planted", quantity: difference, expect: positive,
     table: helix_sweep, x: {method: helix}, y: {method: layer}}
  - {id: g, section: "5.1", family: other, models: both, claim: "planted", quantity: difference, expect: positive,
     table: helix_sweep, x: {method: helix}, y: {method: pca}}
"""


def load(tmp_path, text: str) -> reg.Registry:
    path = tmp_path / "findings.yaml"
    path.write_text(text)
    return reg.load(path)


def test_the_minimum_is_declared_in_the_registry_and_a_bad_one_is_refused(tmp_path):
    """The committed registry declares it (10); a family may declare its own; it travels in the
    findings job's params (a changed minimum reruns the job); a missing or impossible one is
    refused naming the key, the value and what is allowed."""
    assert reg.load().min_pairs == 10
    registry = load(tmp_path, REGISTRY)
    assert registry.minimum("fd") == 20 and registry.minimum("other") == 10
    assert reg.params(registry, False)["min_pairs"] == 10
    assert reg.Registry(**reg.params(registry, False)).minimum("fd") == 20
    data = yaml.safe_load(REGISTRY)
    for value, message in ((1, "key 'min_pairs': value 1 violates minimum 2"), (2.5, "should be of type integer")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            load(tmp_path, yaml.safe_dump({**data, "min_pairs": value}))
    with pytest.raises(ConfigError, match=re.escape("key 'families.fd.min_pairs': value 0 violates minimum 2")):
        load(tmp_path, REGISTRY.replace("min_pairs: 20", "min_pairs: 0"))
    with pytest.raises(ConfigError, match=re.escape("missing required key(s) min_pairs")):
        load(tmp_path, REGISTRY.replace("min_pairs: 10\n", ""))

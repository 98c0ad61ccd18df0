"""Known answers for the judged columns of the contrasts table (findings/verdicts.py's ``judge``,
``detection``; docs/findings.md, "Findings"; issue 53, items 5 and 6): each row's p from its t,
its family's m and Holm or BH step, the interval at that step and the simultaneous (Bonferroni)
one, the minimal detectable effect at alpha / m on the row's df, the verdict and its note, each
checked against the formula computed here.  Written so that `make mutation` (docs/benchmarks.md,
"Mutation testing") has a test that fails on each wrong variant of these columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.findings import contrast_row as row
from helpers.findings import planted_contrasts as planted
from scipy import stats

from helixclock.stages.findings.verdicts import SIMULTANEOUS_NOTE, _label, detection, judge, outside_note
from helixclock.stats.multiplicity import mde

ALPHA, POWER = 0.05, 0.8


def p_of(t: float, df: float) -> float:
    return float(2 * stats.t.sf(abs(t), df))


def half(level: float, se: float, df: float) -> float:
    return float(stats.t.ppf(1 - level / 2, df) * se)


def test_a_confirmatory_familys_columns_are_holms_at_each_rows_step():
    """Family conf (m = 3, 20 df): t = 6 (p 7e-6, step 0.05/3), t = -4 (p 7e-4, step 0.025, the
    wrong sign: reversed), t = 0.5 (p 0.62 fails at 0.05).  Every number from its formula."""
    rows = [
        row("a", "conf", "confirmatory", 6.0, 1.0, 20, 21),
        row("b", "conf", "confirmatory", -8.0, 2.0, 20, 21),
        row("c", "conf", "confirmatory", 0.25, 0.5, 20, 21, note="kept"),
    ]
    t = judge(planted(rows), ALPHA, POWER).set_index("id")
    steps = {"a": ALPHA / 3, "b": ALPHA / 2, "c": ALPHA}
    for fid, est, se in (("a", 6.0, 1.0), ("b", -8.0, 2.0), ("c", 0.25, 0.5)):
        r = t.loc[fid]
        assert r["p"] == pytest.approx(p_of(est / se, 20), rel=1e-12)
        assert r["m"] == 3
        assert r["alpha_step"] == pytest.approx(steps[fid], rel=1e-12)
        assert r["adj_level"] == pytest.approx(100 * (1 - steps[fid]), rel=1e-12)
        h = half(steps[fid], se, 20)
        assert [r["adj_low"], r["adj_high"]] == pytest.approx([est - h, est + h], rel=1e-12)
        hb = half(ALPHA / 3, se, 20)
        assert [r["bonf_low"], r["bonf_high"]] == pytest.approx([est - hb, est + hb], rel=1e-12)
        assert r["mde"] == pytest.approx(float(mde(se, 1, ALPHA / 3, POWER, df=20)), rel=1e-12)
        assert r["low"] == est - 2 * se  # the row's own 95% interval is kept
    assert t["verdict"].tolist() == ["holds", "reversed", "not distinguished"]
    assert t.loc["c", "note"] == "kept" and t[["note"]].loc[["a", "b"]].isna().all().all()


def test_a_screening_familys_columns_are_benjamini_hochbergs_and_carry_no_bonferroni_note():
    """Family screen (m = 3, 30 df): t = 5, 2.5, 0.2: p 2e-5, 0.018, 0.84; BH passes the first
    two (0.018 <= 2 (0.05) / 3): level 2 alpha / 3 for all three."""
    rows = [row(f"s{i}", "screen", "screening", t, 1.0, 30, 31) for i, t in enumerate((5.0, 2.5, 0.2))]
    t = judge(planted(rows), ALPHA, POWER).set_index("id")
    assert t["verdict"].tolist() == ["holds", "holds", "not distinguished"]
    assert np.allclose(t["alpha_step"].astype(float), 2 * ALPHA / 3, rtol=1e-12)
    assert np.allclose(t["m"].astype(float), 3)
    hb = half(ALPHA / 3, 1.0, 30)
    assert t.loc["s1", "bonf_low"] == pytest.approx(2.5 - hb, rel=1e-12) and t.loc["s1", "bonf_low"] < 0
    assert t["note"].isna().all()  # BH's interval is not Holm's: no simultaneous note


def test_the_simultaneous_note_is_appended_to_a_rows_note():
    """m = 2 (40 df): t = 10 and t = 2.1 (p 0.042 <= 0.05, Holm's second step) while Bonferroni at
    0.025 needs |t| above 2.33: the second row's interval at alpha / m includes 0, and its note
    (already saying something) gets the simultaneous note after a semicolon."""
    rows = [
        row("x", "conf", "confirmatory", 10.0, 1.0, 40, 41),
        row("y", "conf", "confirmatory", 2.1, 1.0, 40, 41, note="first"),
    ]
    t = judge(planted(rows), ALPHA, POWER).set_index("id")
    assert t["verdict"].tolist() == ["holds", "holds"]
    assert t.loc["y", "note"] == f"first; {SIMULTANEOUS_NOTE}"
    assert pd.isna(t.loc["x", "note"])
    # a Bonferroni interval whose lower bound is exactly 0 counts as including 0
    est = half(ALPHA / 2, 1.0, 40)
    rows = [row("x", "conf", "confirmatory", 10.0, 1.0, 40, 41), row("z", "conf", "confirmatory", est, 1.0, 40, 41)]
    t = judge(planted(rows), ALPHA, POWER).set_index("id")
    assert t.loc["z", "verdict"] == "holds" and t.loc["z", "note"] == SIMULTANEOUS_NOTE


def test_estimates_undefined_and_uncomputed_rows():
    rows = [
        row("e", "est", "estimate", 1.5, 0.5, 10, 11),
        row("e_nan", "est", "estimate", np.nan, np.nan, np.nan, 0),
        row("u", "conf", "confirmatory", 3.0, 1.0, 10, 11, defined=False),
        row("u_note", "conf", "confirmatory", 3.0, 1.0, 10, 11, defined=False, note="said"),
        row("n", "conf2", "confirmatory", np.nan, np.nan, np.nan, 0),
    ]
    t = judge(planted(rows), ALPHA, POWER).set_index("id")
    assert t.loc["e", "verdict"] == "estimate" and np.isnan(t.loc["e", "p"]) and np.isnan(t.loc["e", "m"])
    assert t.loc["e_nan", "verdict"] == "not computed"
    assert t.loc["u", "verdict"] == "not defined"
    assert t.loc["u", "note"] == "not defined: the denominator's interval includes 0"
    assert t.loc["u_note", "note"] == "said"
    assert t.loc["n", "verdict"] == "not computed" and np.isnan(t.loc["n", "m"])


def test_a_stages_own_test_keeps_its_p_and_interval_and_is_judged_by_detection():
    """A stage's own test (quantity tested) in a family of m = 3 with a computed row: its p is
    kept (not recomputed from its estimate), it counts in m, it gets no adjusted or Bonferroni
    interval and no MDE, and its verdict is :func:`detection`'s."""
    rows = [
        row("own", "conf", "confirmatory", 3.0, np.nan, np.nan, 5, quantity="tested", p=0.001, low=0.5, high=5.0),
        row("own_low", "conf", "confirmatory", 3.0, np.nan, np.nan, 5, quantity="tested", p=0.002, low=-0.1, high=5.0),
        row("c", "conf", "confirmatory", 6.0, 1.0, 20, 21),
    ]
    t = judge(planted(rows), ALPHA, POWER, lambda family: 10).set_index("id")
    assert t.loc["own", "p"] == 0.001 and t.loc["own_low", "p"] == 0.002
    assert (t["m"] == 3).all()
    # ranks: c (p 7e-6) at alpha / 3, own (0.001) at alpha / 2, own_low (0.002) at alpha
    assert t.loc[["c", "own", "own_low"], "alpha_step"].tolist() == pytest.approx([ALPHA / 3, ALPHA / 2, ALPHA])
    assert t.loc[["own", "own_low"], ["adj_low", "adj_level", "bonf_low", "mde"]].isna().all().all()
    assert t.loc["own", "verdict"] == "holds"
    assert t.loc["own_low", "verdict"] == "not detected"  # its interval reaches below 0
    assert t.loc["c", "mde"] == pytest.approx(float(mde(1.0, 1, ALPHA / 3, POWER, df=20)), rel=1e-12)
    hb = half(ALPHA / 3, 1.0, 20)
    assert t.loc["c", "bonf_low"] == pytest.approx(6.0 - hb, rel=1e-12)


def test_detection_rule():
    assert detection(1.0, True, "positive", 0.2, 2.0) == "holds"
    assert detection(1.0, True, "positive", 0.0, 2.0) == "not detected"  # the bound must lie above 0
    assert detection(1.0, True, "positive", np.nan, np.nan) == "holds"  # no interval: the test decides
    assert detection(1.0, False, "positive", 0.2, 2.0) == "not detected"
    assert detection(-1.0, True, "positive", np.nan, np.nan) == "not detected"  # no opposite to show
    assert detection(0.0, True, "positive", np.nan, np.nan) == "not detected"
    assert detection(-1.0, True, "negative", -2.0, -0.2) == "holds"
    assert detection(-1.0, True, "negative", -2.0, 0.0) == "not detected"
    assert detection(1.0, True, "negative", np.nan, np.nan) == "not detected"


def test_the_minimum_counts_pairs_and_a_row_at_it_stays_in():
    """A row with exactly the minimum's pairs stays in the family; one below leaves it, and its
    note names its pairs and the minimum, after any note it had."""
    rows = [
        row("at", "fd", "confirmatory", 6.0, 1.0, 9, 10),
        row("below", "fd", "confirmatory", 6.0, 1.0, 8, 9, note="was"),
        row("other", "gd", "confirmatory", 6.0, 1.0, 8, 9),
    ]
    t = judge(planted(rows), ALPHA, POWER, {"fd": 10, "gd": 9}.get).set_index("id")
    assert t.loc["at", "m"] == 1 and t.loc["at", "verdict"] == "holds"
    assert t.loc["below", "verdict"] == "estimate" and np.isnan(t.loc["below", "m"])
    assert t.loc["below", "note"] == "was; " + outside_note(9, 10)
    assert outside_note(9, 10) == "outside the family: 9 pairs, below its declared minimum of 10"
    assert t.loc["other", "m"] == 1 and t.loc["other", "verdict"] == "holds"


# -- the rows of contrasts_table, before judgement ---------------------------------------------------
REGISTRY = """
min_pairs: 10
families:
  t1: {kind: confirmatory, title: "Table 1 (planted)"}
  few: {kind: confirmatory, title: "Too few (planted)", min_pairs: 100}
  ratios: {kind: estimate, title: "Ratios (planted)"}
findings:
  - {id: fixed, section: "4.3", family: t1, models: both, claim: "the helix above the layer at layer 1",
     quantity: difference, expect: positive, table: helix_sweep, x: {label: Helix, method: helix, layer: 1},
     y: {method: layer, layer: 1}}
  - {id: missing, section: "4.4", family: t1, models: both, claim: "a method the table lacks", quantity: difference,
     expect: positive, table: helix_sweep, x: {label: Helix, method: helix}, y: {label: Lost, method: lost},
     select: {over: layer, by: x, rule: max, what: "the helix's best layer"}}
  - {id: small, section: "4.3", family: few, models: both, claim: "held to 100 pairs", quantity: difference,
     expect: positive, table: helix_sweep, x: {label: Helix, method: helix, layer: 0}, y: {label: Full, method: layer, layer: 0}}
  - {id: ratio, section: "4.3", family: ratios, models: both, claim: "Helix / Full at layer 1", quantity: ratio,
     table: helix_sweep, x: {label: Helix, method: helix, layer: 1}, y: {label: Full, method: layer, layer: 1}}
"""


def sweep(n: int = 40, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for layer in (0, 1):
        full = 5.0 + rng.normal(0, 1.0, n)
        for method, values in (("layer", full), ("helix", full + 1.0 + rng.normal(0, 0.5, n))):
            labels.append({"layer": layer, "method": method, "periods": "", "k": np.nan})
            rows.append(values)
    values = pd.DataFrame(np.array(rows), columns=[f"pair_{i}" for i in range(n)])
    return pd.concat([pd.DataFrame(labels), values], axis=1)


def test_contrasts_table_rows_carry_the_registrys_words_and_levels(tmp_path, caplog):
    from helixclock.stages.findings import registry as reg
    from helixclock.stages.findings.contrasts import Tables
    from helixclock.stages.findings.verdicts import contrasts_table
    from helixclock.stats.statistics import Resampling

    path = tmp_path / "findings.yaml"
    path.write_text(REGISTRY)
    registry = reg.load(path)
    tables = Tables({"helix_sweep": sweep()}, {})
    with caplog.at_level("WARNING", logger="helixclock"):
        t = contrasts_table(registry, False, tables, Resampling(bootstrap=200, seed=1)).set_index("id")
    fixed = t.loc["fixed"]
    assert fixed["family_title"] == "Table 1 (planted)" and fixed["section"] == "4.3"
    assert fixed["x"] == "Helix" and fixed["y"] == "method layer, layer 1"  # no label: its keys
    assert fixed["table"] == "helix_sweep" and fixed["expect"] == "positive" and fixed["selection"] == ""
    assert fixed["alpha"] == registry.alpha == 0.05
    assert fixed["level"] == pytest.approx(100 * (1 - registry.alpha)) and fixed["power"] == registry.power
    assert fixed["verdict"] == "holds" and fixed["m"] == 1  # the missing row is not tested
    # a finding whose table lacks its rows: said in its row and in the log, its selection names the choice
    missing = t.loc["missing"]
    assert missing["verdict"] == "not computed" and missing["note"].startswith("not computed: ")
    assert missing["selection"] == "the helix's best layer: "
    assert [r.getMessage() for r in caplog.records] == [f"finding missing {missing['note']}"]
    # the registry's minimum is applied: 40 pairs below the family's 100
    assert t.loc["small", "verdict"] == "estimate" and t.loc["small", "note"] == outside_note(40, 100)
    # a finding without an expected sign
    assert t.loc["ratio", "expect"] == "" and t.loc["ratio", "verdict"] == "estimate"


def test_a_sides_label():
    """The registry's label with the expansion's $names filled in; without a label, its keys and
    values but the table and the combination rule; no side, no label."""
    assert _label(None, {"layer": 3}) == ""
    assert _label({"label": "Helix at $layer ($k)", "method": "helix"}, {"layer": 3, "k": 9}) == "Helix at 3 (9)"
    spec = {"method": "helix", "table": "helix_sweep", "layer": 2, "combine": "mean"}
    assert _label(spec, {}) == "method helix, layer 2"
    assert _label({"method": "helix", "layer": "$layer"}, {"layer": 5}) == "method helix, layer 5"


def test_the_familys_alpha_and_power_are_the_ones_given():
    """At alpha 0.1 and power 0.9 (not the defaults): Holm's steps 0.05 and 0.1, Bonferroni at
    0.05, the MDE at alpha' 0.05 and power 0.9."""
    rows = [row("a", "conf", "confirmatory", 6.0, 1.0, 20, 21), row("b", "conf", "confirmatory", 1.9, 1.0, 20, 21)]
    t = judge(planted(rows), 0.1, 0.9).set_index("id")
    assert t["alpha_step"].tolist() == pytest.approx([0.05, 0.1])
    assert t["verdict"].tolist() == ["holds", "holds"]  # p(1.9 on 20 df) = 0.072 <= 0.1
    assert t.loc["b", "bonf_low"] == pytest.approx(1.9 - half(0.05, 1.0, 20), rel=1e-12)
    assert t.loc["b", "note"] == SIMULTANEOUS_NOTE
    assert t.loc["a", "mde"] == pytest.approx(float(mde(1.0, 1, 0.05, 0.9, df=20)), rel=1e-12)


def test_a_bonferroni_upper_bound_at_exactly_0_includes_0_and_a_negative_own_test_reads_its_upper_bound():
    h = half(ALPHA / 3, 1.0, 40)
    rows = [
        row("x", "conf", "confirmatory", 10.0, 1.0, 40, 41),
        row("neg", "conf", "confirmatory", -h, 1.0, 40, 41, expect="negative"),
        row(
            "own",
            "conf",
            "confirmatory",
            -3.0,
            np.nan,
            np.nan,
            5,
            quantity="tested",
            p=0.001,
            expect="negative",
            low=-5.0,
            high=-0.5,
        ),  # fmt: skip
    ]
    t = judge(planted(rows), ALPHA, POWER).set_index("id")
    assert t.loc["neg", "bonf_high"] == 0.0 and t.loc["neg", "verdict"] == "holds"
    assert t.loc["neg", "note"] == SIMULTANEOUS_NOTE
    assert t.loc["own", "verdict"] == "holds"

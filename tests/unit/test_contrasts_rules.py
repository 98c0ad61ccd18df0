"""Known answers for the findings' contrasts (stages/findings/contrasts.py; docs/findings.md,
"Findings"; issue 53, item 7): the rows a finding reads (label match with "4.0" == 4, the reading
and term cut, ``$column`` filled, ``each`` lists with ``where``/``exclude``/``by``), the per-pair
values (one row, or ``combine: sum``), the choice of a ``select`` object (on the job's selection
draw and measured on all pairs; cross-fitted where no draw; on all pairs under ``compat:
authors``), the mean, the ratio of means and the head category test of section 5.2 (the sign of
g = DE helix(a+b) - (TE - DE) helix(a,b)), every output column against the numbers computed here
on tiny planted tables.  Written so that `make mutation` (docs/benchmarks.md, "Mutation testing")
has a test that fails on each wrong variant of these rules."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from helixclock.stages.findings import contrasts as c
from helixclock.stages.findings.contrasts import (
    CATEGORY_SPLIT,
    CROSS_FITTED,
    Tables,
    Values,
    category_of,
    category_test,
    choose_values,
    compute,
    each_split,
    expand,
    filters,
    match,
    mean_of,
    pair_values,
    prepared,
    ratio_of,
    selection_draw,
    side,
    unit_values,
)
from helixclock.stats.crossfit import cross_fit, fold_bound, folds
from helixclock.stats.inference import (
    per_pair_sd,
    ratio_of_means,
    resample,
    singletons,
    standard_error,
    t_interval,
)
from helixclock.stats.statistics import Resampling

R = Resampling(bootstrap=200, seed=3)
COLS = [f"pair_{i}" for i in range(8)]


def test_labels_match_as_numbers_where_both_read_as_numbers_else_as_text():
    assert c._same("4.0", 4) and c._same(4, "4") and c._same(np.float32(2.0), "2")
    assert not c._same("4.5", 4) and not c._same("helix", "layer") and c._same("helix", "helix")
    assert c._same(None, "None") and not c._same(None, "x")  # float(None): TypeError, read as text
    frame = pd.DataFrame(
        {"layer": [4.0, 5.0, 4.0], "method": ["helix", "helix", "layer"], "pair_0": [1.0, 2.0, 3.0], "pair_1": 0.0}
    )
    assert match(frame, {"layer": "4", "method": "helix"}, "w").index.tolist() == [0]
    assert match(frame, {"layer": 4}, "w").index.tolist() == [0, 2]
    assert match(frame, {}, "w").index.tolist() == [0, 1, 2]
    assert match(frame, {"method": "4"}, "w").empty
    assert match(frame.iloc[:0], {"layer": 4}, "w").empty  # no rows: an empty boolean mask
    with pytest.raises(KeyError) as err:
        match(frame, {"layer": 4, "head": 0}, "f: x")
    assert err.value.args[0] == "f: x: no column 'head'; the table has layer, method"


def test_a_table_is_cut_to_the_findings_reading_and_term():
    frame = pd.DataFrame(
        {
            "reading": ["last token", "last token", "answer", "last token"],
            "term": ["total", "end", "total", "total"],
            "layer": [0, 0, 0, 1],
            "pair_0": [1.0, 2.0, 3.0, 4.0],
        }
    )
    out = prepared(frame, {"reading": "last token", "term": "total"})
    assert list(out.columns) == ["layer", "pair_0"] and out.index.tolist() == [0, 1]
    assert out["layer"].tolist() == [0, 1] and out["pair_0"].tolist() == [1.0, 4.0]
    no_term = prepared(frame.drop(columns="term"), {"reading": "answer", "term": "total"})
    assert list(no_term.columns) == ["layer", "pair_0"] and no_term["pair_0"].tolist() == [3.0]
    no_reading = prepared(frame.drop(columns="reading"), {"reading": "x", "term": "end"})
    assert list(no_reading.columns) == ["layer", "pair_0"] and no_reading["pair_0"].tolist() == [2.0]
    # term matched without a reading column: the ordinary cut (no rows of term "matched")
    assert prepared(frame.drop(columns="reading"), {"reading": "x", "term": "matched"}).empty
    plain = frame.drop(columns=["reading", "term"]).iloc[[3, 1]]
    assert prepared(plain, {"reading": "x", "term": "matched"}).index.tolist() == [0, 1]


def test_term_matched_cuts_a_raw_table_by_stratum():
    """Term ``matched`` on a raw table with reading and term: the reading's matched terms by
    stratum (strata from the first differing token's rows), numbered afresh."""
    nan = np.nan
    te = {"ld": [10.0, 6.0, 3.0], "ld_raw": [0.0] * 3, "units": [1.0, 2.0, 2.5], "tens": [2.0, 3.5, nan]}
    te |= {"hundreds": [6.0, nan, nan], "end": [1.0, 0.5, 0.5]}
    cols = ["pair_0", "pair_1", "pair_2"]
    rows = [
        {"reading": "last token", "layer": 0, "effect": "te", "term": t, **dict(zip(cols, v))} for t, v in te.items()
    ]
    rows.append(
        {"reading": "last token", "layer": 0, "effect": "de", "term": "ld", **dict(zip(cols, [0.5, 0.25, 0.125]))}
    )
    for e in ("te", "de"):
        first = {"reading": "first differing token", "layer": 0, "effect": e, "term": "ld", "p_star": 0}
        rows.append({**first, "answer_tokens": 3, **dict(zip(cols, [1.0, nan, nan]))})
        rows.append({**first, "answer_tokens": 2, **dict(zip(cols, [nan, 1.0, 2.0]))})
    out = prepared(pd.DataFrame(rows), {"reading": "last token", "term": "matched"})
    assert list(out.columns) == ["layer", "effect", "answer_tokens", "p_star", *cols]
    assert out.index.tolist() == [0, 1, 2, 3] and out["answer_tokens"].tolist() == [2, 2, 3, 3]
    got = out[cols].to_numpy()
    assert np.array_equal(got, [[nan, 3.5, 2.5], [nan, 0.25, 0.125], [6.0, nan, nan], [0.5, nan, nan]], equal_nan=True)


def test_filters_skip_reserved_keys_and_fill_dollar_columns():
    spec = {"label": "L", "table": "t", "combine": "sum", "column": "c", "layer": "$layer", "method": "helix", "k": 3}
    assert filters(spec, {"layer": 7}) == {"layer": 7, "method": "helix", "k": 3}
    assert filters({"x": "a$b"}, {}) == {"x": "a$b"}


def test_each_names_fill_the_claim_from_a_column_without_entering_the_id():
    """`each.names` (Fig. F4's lens findings: the set of units, "DE set" or "|DE| set"): a column of
    one value per listed row fills the claim and the row's fill, never the id; a table without
    the column is refused naming it and the rerun; a name taking two values for one row is refused."""
    f = {
        "id": "lens",
        "claim": "the $unit_set's units (place: $place) show it",
        "reading": "last token",
        "term": None,
        "each": {"table": "t", "columns": ["place"], "names": ["unit_set"]},
    }
    t = pd.DataFrame({"place": ["units", "tens", "all"], "unit_set": "|DE| set", "n_units": [3, 2, 5]})
    rows = expand(f, {"t": t})
    assert [r["id"] for r in rows] == ["lens[place=units]", "lens[place=tens]", "lens[place=all]"]
    assert [r["claim"] for r in rows] == [
        f"the |DE| set's units (place: {p}) show it" for p in ("units", "tens", "all")
    ]
    assert rows[0]["fill"] == {"place": "units", "unit_set": "|DE| set"}
    # the same finding without names: the id and the claim as before, $unit_set left as written
    plain = expand({**f, "each": {"table": "t", "columns": ["place"]}}, {"t": t})
    assert [r["id"] for r in plain] == [r["id"] for r in rows] and plain[0]["claim"].startswith("the $unit_set's")
    with pytest.raises(
        ValueError, match=r"^lens: table t has no column unit_set; rerun the job that writes it \(snakemake"
    ):
        expand(f, {"t": t.drop(columns="unit_set")})
    with pytest.raises(ValueError, match=r"^lens: table t has no column place, unit_set; "):
        expand(f, {"t": t.drop(columns=["place", "unit_set"])})
    twice = t.assign(place=["units", "units", "all"], unit_set=["DE set", "|DE| set", "DE set"])
    with pytest.raises(
        ValueError, match=r"^lens: each.names \['unit_set'\] take several values for one row of \['place'\]$"
    ):
        expand(f, {"t": twice})


def test_each_expands_a_finding_per_listed_row_with_where_exclude_and_by():
    f = {"id": "f", "claim": "c", "reading": "last token", "term": "total", "table": "own"}
    assert expand(f, {}) == [{**f, "fill": {}}]
    cats = pd.DataFrame(
        {
            "reading": ["answer", "answer", "answer", "answer", "last token"],
            "layer": [1.0, 2.0, 3.0, 1.0, 9.0],
            "head": [0.0, 1.5, 2.0, 0.0, 9.0],
            "category": ["a+b", "a+b", "a+b", "a+b", "a+b"],
            "pair_0": 0.0,
        }
    )
    each = {"table": "cats", "reading": "answer", "columns": ["layer", "head"], "where": {"category": "a+b"}}
    each["exclude"] = {"layer": ["3"]}
    g = {**f, "claim": "head L$layer H$head", "each": each}
    out = expand(g, {"cats": cats})
    assert [o["id"] for o in out] == ["f[layer=1,head=0]", "f[layer=2,head=1.5]"]
    assert [o["claim"] for o in out] == ["head L1 H0", "head L2 H1.5"]
    assert out[0]["fill"] == {"layer": 1, "head": 0} and isinstance(out[0]["fill"]["layer"], int)
    assert out[0]["reading"] == "last token" and out[0]["each"] is each
    # the list's reading defaults to the finding's
    assert [
        o["id"] for o in expand({**g, "each": {**each, "reading": "last token", "exclude": {}}}, {"cats": cats})
    ] == ["f[layer=9,head=9]"]
    with pytest.raises(KeyError, match="f: each: no column 'kind'"):
        expand({**g, "each": {**each, "where": {"kind": 1}}}, {"cats": cats})
    # by: each row once per value of the finding's own table's columns (sorted, NaN dropped)
    own = pd.DataFrame(
        {"answer_tokens": [2.0, 1.0, np.nan, 2.0, 1.0], "reading": "last token", "term": "total", "pair_0": 0.0}
    )
    by = expand({**g, "each": {**each, "by": ["answer_tokens"]}}, {"cats": cats, "own": own})
    assert [o["id"] for o in by] == [
        "f[layer=1,head=0,answer_tokens=1]",
        "f[layer=1,head=0,answer_tokens=2]",
        "f[layer=2,head=1.5,answer_tokens=1]",
        "f[layer=2,head=1.5,answer_tokens=2]",
    ]


def test_the_tables_clusters_are_pairs_checked_against_the_measuring_draw():
    table = pd.DataFrame({"layer": [0], "pair_0": [1.0], "pair_1": [2.0]})
    prompts = pd.DataFrame({"pair": ["pair_0", "pair_1", "pair_2"], "draw": ["measure", "measure", "select"]})
    t = Tables({"t": table}, {"t": prompts})
    assert t.pair_columns("t") == ["pair_0", "pair_1"]
    cl, unit = t.clusters("t")
    assert cl.tolist() == [0, 1] and unit == "pairs"
    wide = pd.DataFrame({f"pair_{i}": [0.0] for i in range(6)})
    with pytest.raises(ValueError) as err:
        Tables({"t": wide}, {"t": prompts}).clusters("t")
    assert str(err.value) == "table t: pair column(s) pair_2, pair_3, pair_4 not in its prompts table"
    # without a draw column every listed pair is a measuring pair
    assert Tables({"t": table}, {"t": prompts.drop(columns="draw")}).clusters("t")[0].tolist() == [0, 1]
    assert Tables({"t": wide}, {}).clusters("t")[0].tolist() == list(range(6))
    assert t.recorded_split("t") is None and Tables({}, {}).recorded_split("t") is None
    split = pd.DataFrame({"split": ["separate draw", "same pairs"]})
    assert Tables({}, {"t": split}).recorded_split("t") == "separate draw"
    assert Tables({}, {"t": split.iloc[:0]}).recorded_split("t") is None


def test_pair_values_are_one_row_or_the_sum_of_the_rows():
    rows = pd.DataFrame({"k": [1, 2], "pair_0": [1.0, 2.0], "pair_1": [np.nan, 5.0], "pair_2": [3.0, 4.0]})
    rows = rows.astype({c: np.float32 for c in ("pair_0", "pair_1", "pair_2")})  # as the raw tables save them
    total = pair_values(rows, {"combine": "sum"}, "w")
    assert total.dtype == np.float64 and np.isnan(total[1]) and total[[0, 2]].tolist() == [3.0, 7.0]
    one = pair_values(rows.iloc[[1]], {}, "w")
    assert one.dtype == np.float64 and one.tolist() == [2.0, 5.0, 4.0]
    with pytest.raises(ValueError) as err:
        pair_values(rows, {}, "w")
    assert str(err.value) == "w: 2 rows match where one should (say which, or combine: sum)"
    with pytest.raises(ValueError) as err:
        pair_values(rows.iloc[:0], {"combine": "sum"}, "w")
    assert str(err.value) == "w: no rows to sum"
    with pytest.raises(ValueError, match="^w: 0 rows match"):
        pair_values(rows.iloc[:0], {}, "w")


def test_a_side_reads_its_own_table_or_the_findings():
    a = pd.DataFrame({"m": ["p", "q"], "pair_0": [1.0, 2.0]})
    b = pd.DataFrame({"m": ["p", "q"], "v": np.array([3.0, 4.1], np.float32)})
    t = Tables({"a": a, "b": b}, {})
    f = {"id": "f", "table": "a", "reading": "r", "term": "t", "fill": {"k": "q"}, "x": {"m": "$k"}}
    f["y"] = {"table": "b", "m": "p", "column": "v"}
    rows, name = side(t, f, "x")
    assert name == "a" and rows["pair_0"].tolist() == [2.0] and rows.index.tolist() == [1]
    rows, name = side(t, f, "y")
    assert name == "b" and rows["v"].tolist() == [3.0]
    u = unit_values(t, f, "y")
    assert u.dtype == np.float64 and u.tolist() == [3.0]
    with pytest.raises(KeyError, match="f: x: no column"):
        side(t, {**f, "x": {"z": 1}}, "x")


def test_mean_of_gives_every_column_of_the_mean():
    v = np.array([1.0, 2.0, 3.0, np.nan, 6.0])
    out = mean_of(Values(v, singletons(5), "pairs"), R)
    r = resample(v[None], singletons(5), R.bootstrap, R.seed)
    se = float(standard_error(r.boot, 4)[0])
    low, high = t_interval(3.0, se, 3)
    assert set(out) == {"estimate", "se", "df", "low", "high", "n_pairs", "n_clusters", "clusters", "sd_diff"}
    assert out["estimate"] == 3.0 and out["n_pairs"] == 4 and out["n_clusters"] == 4 and out["df"] == 3
    assert out["se"] == pytest.approx(se, rel=1e-12) and 0.5 < se < 2.5
    assert out["low"] == pytest.approx(float(low), rel=1e-12) and out["high"] == pytest.approx(float(high), rel=1e-12)
    assert out["clusters"] == "pairs" and out["sd_diff"] == pytest.approx(np.std([1, 2, 3, 6], ddof=1))
    assert all(isinstance(out[k], float) for k in ("estimate", "se", "low", "high"))
    # two clusters: df 1; one cluster: df still 1 (its SE NaN)
    assert mean_of(Values(np.array([1.0, 3.0]), singletons(2), "u"), R)["df"] == 1
    one = mean_of(Values(np.array([1.0, np.nan]), singletons(2), "u"), R)
    assert one["df"] == 1 and one["n_clusters"] == 1 and np.isnan(one["se"]) and one["estimate"] == 1.0
    # the seed is the resampling's
    other = mean_of(Values(v, singletons(5), "pairs"), Resampling(bootstrap=200, seed=4))
    assert other["se"] != out["se"]


def test_ratio_of_is_the_ratio_of_means_over_the_pairs_both_have():
    num = np.array([2.0, 4.0, 6.0, np.nan, 5.0, 3.5])
    den = np.array([1.0, 2.0, 3.0, 4.0, np.nan, 2.0])
    out = ratio_of(num, den, singletons(6), "pairs", R)
    x = np.stack([[2.0, 4.0, 6.0, np.nan, np.nan, 3.5], [1.0, 2.0, 3.0, np.nan, np.nan, 2.0]])
    r = resample(x, singletons(6), R.bootstrap, R.seed)
    ratio = ratio_of_means(r)
    se = standard_error(r.boot, 4)
    den_low, den_high = t_interval(2.0, se[1], 3)
    assert set(out) == {
        "estimate",
        "low",
        "high",
        "defined",
        "n_pairs",
        "n_clusters",
        "clusters",
        "den_estimate",
        "den_low",
        "den_high",
    }
    assert out["estimate"] == pytest.approx(15.5 / 8) and out["den_estimate"] == pytest.approx(2.0)
    assert out["low"] == pytest.approx(float(ratio.low)) and out["high"] == pytest.approx(float(ratio.high))
    assert out["defined"] is True and out["n_pairs"] == 4 and out["n_clusters"] == 4 and out["clusters"] == "pairs"
    assert out["den_low"] == pytest.approx(float(den_low)) and out["den_high"] == pytest.approx(float(den_high))
    assert out["den_low"] < 2.0 < out["den_high"] and out["low"] < out["estimate"] < out["high"]
    flat = ratio_of(num, np.array([1.0, -1.0, 0.5, 0.0, 1.0, -0.6]), singletons(6), "u", R)
    assert flat["defined"] is False and flat["den_low"] < 0 < flat["den_high"]


def g_of(te, de, s, ab):
    return de.mean() * s.mean() - (te.mean() - de.mean()) * ab.mean()


def planted_head(te, de, all_fit, s, ab):
    cols = [f"pair_{i}" for i in range(len(te))]
    effects = pd.DataFrame(
        [
            {"layer": 0, "head": 0, "effect": e, **dict(zip(cols, v))}
            for e, v in (("te", te), ("de", de), ("te", te + 9))
        ]
    )
    effects.loc[2, "head"] = 1  # another head's rows
    fits = pd.DataFrame(
        [
            {"layer": 0, "head": 0, "fit": f, **dict(zip(cols, v))}
            for f, v in (("helix(a,b,a+b)", all_fit), ("helix(a+b)", s), ("helix(a,b)", ab))
        ]
    )
    return Tables({"head_effects": effects, "head_fits": fits}, {})


def test_the_category_test_is_g_of_the_four_means_signed_by_its_category():
    rng = np.random.default_rng(1)
    te = 1.0 + rng.normal(0, 0.2, 8)
    de = 0.3 * te + rng.normal(0, 0.05, 8)
    s, ab = 0.2 * te + rng.normal(0, 0.05, 8), 0.9 * te + rng.normal(0, 0.05, 8)
    s[7] = np.nan  # pair 7 out of all four means
    out = category_test(te, de, s, ab, singletons(8), R)
    k = slice(0, 7)
    g = g_of(te[k], de[k], s[k], ab[k])
    assert g < 0 and out["sign"] == -1 and out["estimate"] == pytest.approx(-g, rel=1e-12)
    x = np.stack([te, de, s, ab])
    x[:, 7] = np.nan
    r = resample(x, singletons(8), R.bootstrap, R.seed)
    boot_g = r.boot[:, 1] * r.boot[:, 2] - (r.boot[:, 0] - r.boot[:, 1]) * r.boot[:, 3]
    se = float(np.std(boot_g, ddof=1) * np.sqrt(7 / 6))
    low, high = t_interval(-g, se, 6)
    assert out["se"] == pytest.approx(se, rel=1e-9) and out["df"] == 6
    assert out["low"] == pytest.approx(float(low), rel=1e-9) and out["high"] == pytest.approx(float(high), rel=1e-9)
    assert out["n_pairs"] == 7 and out["n_clusters"] == 7 and out["sd_diff"] == pytest.approx(se * np.sqrt(7))
    assert set(out) == {"sign", "estimate", "se", "df", "low", "high", "n_pairs", "n_clusters", "sd_diff"}
    # the other way round: helix(a+b) keeps it, g > 0
    up = category_test(te, de, ab, s, singletons(8), R)
    assert up["sign"] == 1 and up["estimate"] == pytest.approx(g_of(te[k], de[k], ab[k], s[k]), rel=1e-12)
    assert up["estimate"] > 0
    # ints are read as floats
    ints = category_test([2, 4], [1, 1], [1, 3], [0, 1], singletons(2), R)
    assert ints["estimate"] == pytest.approx(1.0 * 2.0 - 2.0 * 0.5) and ints["sign"] == 1 and ints["df"] == 1


def test_a_heads_category_row_has_every_column():
    rng = np.random.default_rng(2)
    te = 1.0 + rng.normal(0, 0.2, 8)
    de = 0.8 * te + rng.normal(0, 0.05, 8)
    s, ab = 0.9 * te + rng.normal(0, 0.05, 8), 0.2 * te + rng.normal(0, 0.05, 8)
    t = planted_head(te, de, te, s, ab)
    f = {"id": "cat", "x": {"layer": 0, "head": "$head"}, "fill": {"head": 0}, "reading": "r", "term": "t"}
    out = category_of(t, f, "corrected", R)
    te_mean = mean_of(Values(te, singletons(8), "pairs"), R)
    test = category_test(te, de, s, ab, singletons(8), R)
    assert test.pop("sign") == 1
    want = {
        "den_estimate": te_mean["estimate"],
        "den_low": te_mean["low"],
        "den_high": te_mean["high"],
        **test,
        "clusters": "pairs",
        "defined": True,
        "selection": "a+b",
        "split": CATEGORY_SPLIT,
    }
    assert out == want and out["estimate"] == pytest.approx(g_of(te, de, s, ab))
    assert CATEGORY_SPLIT == "same pairs (two-sided test of the rule's sign)"
    authors = category_of(t, f, "authors", R)
    assert authors["selection"] == "a+b (compat: authors, the same rule)"
    down = category_of(planted_head(te, 0.1 * te, te, 0.2 * te, 0.9 * te), f, "corrected", R)
    assert down["selection"] == "a,b" and down["estimate"] > 0
    # TE not above 0: no category; then helix(a,b,a+b) not above 0
    flat = te - 1.0
    no_te = category_of(planted_head(flat, de, te, s, ab), f, "corrected", R)
    m = mean_of(Values(flat, singletons(8), "pairs"), R)
    note = f"no category tested: the head's TE is not shown above 0 (95% interval [{m['low']:.3g}, {m['high']:.3g}])"
    assert no_te == {
        "den_estimate": m["estimate"],
        "den_low": m["low"],
        "den_high": m["high"],
        "n_pairs": 8,
        "n_clusters": 8,
        "clusters": "pairs",
        "defined": False,
        "note": note,
        "split": CATEGORY_SPLIT,
    }
    no_fit = category_of(planted_head(te, de, flat, s, ab), f, "corrected", R)
    assert no_fit["defined"] is False and no_fit["den_estimate"] == te_mean["estimate"]
    assert no_fit["note"].startswith(
        "no category tested: the head's helix(a,b,a+b) is not shown above 0 (95% interval ["
    )
    assert no_fit["note"] == (
        "no category tested: the head's helix(a,b,a+b) is not shown above 0 "
        f"(95% interval [{m['low']:.3g}, {m['high']:.3g}])"
    )


def sweep(base: dict[int, float], noise: float, n: int, seed: int, lifts=None) -> pd.DataFrame:
    """Rows (method helix, layer) and (method layer, layer) over ``n`` pairs: helix - layer at
    layer l has mean ``base[l]``."""
    rng = np.random.default_rng(seed)
    rows = []
    for layer, gap in base.items():
        ref = rng.normal(0, 1, n)
        rows.append({"method": "layer", "layer": float(layer), **dict(zip(COLS[:n], ref))})
        rows.append(
            {"method": "helix", "layer": float(layer), **dict(zip(COLS[:n], ref + gap + rng.normal(0, noise, n)))}
        )
        rows.append(
            {"method": "crit", "layer": float(layer), **dict(zip(COLS[:n], (lifts or {}).get(layer, 0.0) + ref))}
        )
    return pd.DataFrame(rows)


BEST = {
    "id": "best",
    "table": "helix_sweep",
    "reading": "r",
    "term": "t",
    "fill": {},
    "quantity": "difference",
    "x": {"method": "helix"},
    "y": {"method": "layer"},
    "select": {"over": "layer", "by": "x", "rule": "max"},
}


def test_a_select_object_is_chosen_on_the_selection_draw_and_measured_on_all_pairs():
    measure = sweep({1: 0.5, 2: 1.0, 3: 3.0}, 0.3, 8, 0)  # the measuring pairs favour layer 3
    draw = sweep({1: 5.0, 2: 1.0, 3: 0.0}, 0.3, 6, 1, lifts={2: 50.0})  # the draw: helix 1, its crit rows 2
    t = Tables({"helix_sweep": measure, "helix_sweep_selection": draw}, {})
    assert selection_draw(t, BEST).equals(draw)
    out = choose_values(t, BEST, "corrected", R)
    at = measure[measure["layer"] == 1].set_index("method")[COLS]
    d = (at.loc["helix"] - at.loc["layer"]).to_numpy()
    want = mean_of(Values(d, singletons(8), "pairs"), R)
    assert out == {**want, "selection": "layer 1, on the job's selection draw of 6 pairs", "split": "separate draw"}
    # by y: the draw's layer rows' best (means of ref: seeded, computed here)
    ys = [draw[(draw["method"] == "layer") & (draw["layer"] == v)][COLS[:6]].to_numpy().mean() for v in (1, 2, 3)]
    ky = int(np.argmax(ys)) + 1
    by_y = choose_values(t, {**BEST, "select": {**BEST["select"], "by": "y", "rule": "max"}}, "corrected", R)
    assert by_y["selection"] == f"layer {ky}, on the job's selection draw of 6 pairs"
    # by a mapping: the draw's rows it names (crit, layer 2 lifted)
    spec = {"table": "helix_sweep", "method": "crit"}
    by_map = choose_values(t, {**BEST, "select": {**BEST["select"], "by": spec}}, "corrected", R)
    assert by_map["selection"] == "layer 2, on the job's selection draw of 6 pairs"
    at2 = measure[measure["layer"] == 2].set_index("method")[COLS]
    assert by_map["estimate"] == pytest.approx((at2.loc["helix"] - at2.loc["layer"]).mean(), rel=1e-12)
    minimum = choose_values(t, {**BEST, "select": {**BEST["select"], "rule": "min"}}, "corrected", R)
    assert minimum["selection"] == "layer 3, on the job's selection draw of 6 pairs"
    # no y: the mean of x at the draw's choice
    alone = {k: v for k, v in BEST.items() if k != "y"}
    helix1 = measure[(measure["method"] == "helix") & (measure["layer"] == 1)][COLS].to_numpy()[0]
    assert choose_values(t, alone, "corrected", R)["estimate"] == pytest.approx(helix1.mean(), rel=1e-12)


def by_layer(measure, method: str) -> np.ndarray:
    """[layer 1..3, pair]: a sweep's values of ``method`` at each layer."""
    return np.stack(
        [measure[(measure["method"] == method) & (measure["layer"] == v)][COLS].to_numpy()[0] for v in (1, 2, 3)]
    )


def test_without_a_draw_the_choice_is_cross_fitted_and_under_authors_on_all_pairs():
    measure = sweep({1: 0.5, 2: 1.0, 3: 3.0}, 0.3, 8, 0, lifts={2: 40.0})
    for frames in (
        {"helix_sweep": measure},
        {"helix_sweep": measure, "helix_sweep_selection": measure.iloc[:0]},
        {"helix_sweep": measure, "helix_sweep_selection": measure[["method", "layer"]]},
    ):
        assert selection_draw(Tables(frames, {}), BEST) is None
    t = Tables({"helix_sweep": measure}, {})
    X, Y, C = (by_layer(measure, method) for method in ("helix", "layer", "crit"))
    cl = singletons(8)
    for by, crit, rule in (("x", X, "max"), ("y", Y, "max"), ({"method": "crit"}, C, "max"), ("x", X, "min")):
        f = {**BEST, "select": {**BEST["select"], "by": by, "rule": rule}}
        fold = folds(cl, R.seed)
        chosen = cross_fit(X - Y, crit, fold, rule)
        bound = fold_bound(chosen.values, fold, cl, R.bootstrap, R.seed)
        low, high = t_interval(bound.estimate, bound.se, bound.df)
        got = choose_values(t, f, "corrected", R)
        assert got == {
            "estimate": float(bound.estimate),
            "se": float(bound.se),
            "df": bound.df,
            "low": float(low),
            "high": float(high),
            "n_pairs": int(bound.n_pairs),
            "n_clusters": bound.n_clusters,
            "clusters": "pairs",
            "sd_diff": per_pair_sd(chosen.values, cl),
            "selection": f"layer {chosen.choice[0] + 1} (fold 1) | layer {chosen.choice[1] + 1} (fold 2)",
            "split": CROSS_FITTED,
        }
        assert got["se"] > 0 and got["n_pairs"] == 8
        on_all = cross_fit(X - Y, crit, None, rule)
        authors = choose_values(t, f, "authors", R)
        assert authors == {
            **mean_of(Values(on_all.values, cl, "pairs"), R),
            "selection": f"layer {on_all.choice[0] + 1}, on all pairs",
            "split": "same pairs (compat: authors)",
        }
    assert CROSS_FITTED == "cross-fitted (conservative bound)"
    # the mapping's own table: its crit rows (layer 2 lifted) choose layer 2 under authors
    other = measure.assign(method=measure["method"].replace({"crit": "other"}))
    t2 = Tables({"helix_sweep": measure, "other_t": other}, {})
    f = {**BEST, "select": {**BEST["select"], "by": {"table": "other_t", "method": "other"}}}
    assert choose_values(t2, f, "authors", R)["selection"] == "layer 2, on all pairs"
    # under authors a recorded draw is not read
    drawn = Tables({"helix_sweep": measure, "helix_sweep_selection": sweep({1: 0.0, 2: 9.0, 3: 0.0}, 0.1, 6, 2)}, {})
    assert choose_values(drawn, BEST, "authors", R)["selection"] == "layer 3, on all pairs"
    with pytest.raises(ValueError, match="^best: no layer that both sides have$"):
        choose_values(t, {**BEST, "y": {"method": "none"}}, "corrected", R)
    # a fractional candidate is printed as it is, the others as integers, sorted as numbers
    frac = measure.assign(layer=measure["layer"].replace({3.0: 10.5, 2.0: 2.5}))
    out = choose_values(Tables({"helix_sweep": frac}, {}), BEST, "authors", R)
    assert out["selection"] == "layer 10.5, on all pairs"


def test_the_run_of_each_list_says_how_its_objects_were_chosen():
    t = Tables({}, {"cats": pd.DataFrame({"split": ["separate draw"]})})
    assert each_split(t, {}) == "fixed" and each_split(t, {"each": {"table": "cats"}}) == "fixed"
    assert (
        each_split(t, {"each": {"table": "cats", "chosen_by": "x"}}) == "the run's choice, on a separate draw of pairs"
    )
    none = Tables({}, {})
    assert each_split(none, {"each": {"table": "cats", "chosen_by": "x"}}) == "the run's choice, on the same pairs"
    assert each_split(none, {"each": {"table": "cats", "chosen_by": "x", "split": "fixed by the paper"}}) == (
        "fixed by the paper"
    )


def test_compute_routes_each_quantity_to_its_numbers():
    rng = np.random.default_rng(6)
    a, b = rng.normal(1.0, 1.0, 8), rng.normal(0.0, 1.0, 8)
    effects = pd.DataFrame(
        [
            {"layer": 0, "component": "x", "effect": e, **dict(zip(COLS, v))}
            for e, v in (("a", a), ("b", b), ("c", b + 3))
        ]
    )
    t = Tables({"layer_effects": effects}, {})
    f = {"id": "f", "table": "layer_effects", "reading": "r", "term": "t", "fill": {}, "x": {"effect": "a"}}
    diff = compute({**f, "quantity": "difference", "y": {"effect": "b"}}, t, "corrected", R)
    assert diff == {**mean_of(Values(a - b, singletons(8), "pairs"), R), "split": "fixed"}
    mean = compute({**f, "quantity": "mean"}, t, "corrected", R)
    assert mean == {**mean_of(Values(a, singletons(8), "pairs"), R), "split": "fixed"}
    summed = compute({**f, "quantity": "mean", "x": {"effect": "$e", "combine": "sum"}, "fill": {"e": "b"}}, t, "c", R)
    assert summed["estimate"] == pytest.approx(b.mean())
    ratio = compute({**f, "quantity": "ratio", "y": {"effect": "c"}}, t, "corrected", R)
    assert ratio == {**ratio_of(a, b + 3, singletons(8), "pairs", R), "split": "fixed"} and ratio["defined"]
    share = compute({**f, "quantity": "share_below", "y": {"effect": "b"}}, t, "corrected", R)
    raw = mean_of(Values((a < b).astype(float), singletons(8), "pairs"), R)
    assert share["estimate"] == pytest.approx(np.mean(a < b)) and share["split"] == "fixed"
    assert share["low"] == max(raw["low"], 0.0) and share["high"] == min(raw["high"], 1.0)
    # a share near 0 has its low end cut to 0, one near 1 its high end to 1
    lo = compute({**f, "quantity": "share_below", "x": {"effect": "b"}, "y": {"effect": "b"}}, t, "corrected", R)
    assert lo["estimate"] == 0.0 and lo["low"] == 0.0 and lo["high"] == 0.0
    ones = effects.assign(**{col: [0.0, 1.0, 1.0] for col in COLS})
    ones.loc[0, "pair_0"] = 2.0  # one pair of eight not below
    hi = compute({**f, "quantity": "share_below", "y": {"effect": "b"}}, Tables({"layer_effects": ones}, {}), "c", R)
    hi_raw = mean_of(Values(np.r_[0.0, np.ones(7)], singletons(8), "pairs"), R)
    assert hi["estimate"] == 7 / 8 and hi_raw["high"] > 1.0 and hi["high"] == 1.0 and hi["low"] == hi_raw["low"]
    nan_b = effects.copy()
    nan_b.loc[1, "pair_3"] = np.nan
    part = compute({**f, "quantity": "share_below", "y": {"effect": "b"}}, Tables({"layer_effects": nan_b}, {}), "c", R)
    assert part["n_pairs"] == 7 and part["estimate"] == pytest.approx(np.mean(np.delete(a < b, 3)))
    # units: each row a unit
    units = pd.DataFrame({"place": [1, 1, 1, 2], "u": [1.0, 2.0, 4.0, 9.0], "v": [0.5, 0.5, 1.0, 0.0]})
    tu = Tables({"neuron_fits": units}, {})
    g = {"id": "n", "table": "neuron_fits", "reading": "r", "term": "t", "fill": {}, "quantity": "difference"}
    g |= {"x": {"column": "u", "place": 1}, "y": {"column": "v", "place": 1}}
    assert compute(g, tu, "corrected", R) == {
        **mean_of(Values(np.array([0.5, 1.5, 3.0]), singletons(3), "units"), R),
        "split": "fixed",
    }
    only_x = {k: v for k, v in g.items() if k != "y"} | {"quantity": "mean"}
    assert compute(only_x, tu, "corrected", R)["estimate"] == pytest.approx(7 / 3)
    # tested: the stage's row as it is, with the list's split
    tested = pd.DataFrame({"layer": [0, 1], "inc": [0.2, 0.3], "p": [0.01, 0.5], "lo": [0.1, 0.0], "hi": [0.3, 0.6]})
    tt = Tables({"number_bases_nested": tested}, {})
    h = {"id": "t", "table": "number_bases_nested", "reading": "r", "term": "t", "fill": {}, "quantity": "tested"}
    h |= {"x": {"column": "inc", "layer": 1}, "test": {"p": "p", "sided": "greater", "low": "lo", "high": "hi"}}
    h["test"] |= {"n": "layer", "unit": "numbers"}
    out = compute(h, tt, "corrected", R)
    assert out["estimate"] == 0.3 and out["p"] == 0.5 and out["low"] == 0.0 and out["split"] == "fixed"
    # category and select route to their own functions
    te = 1.0 + rng.normal(0, 0.2, 8)
    heads = planted_head(te, 0.8 * te, te, 0.9 * te, 0.2 * te)
    cat = {"id": "cat", "x": {"layer": 0, "head": 0}, "fill": {}, "reading": "r", "term": "t", "quantity": "category"}
    assert compute(cat, heads, "corrected", R) == category_of(heads, cat, "corrected", R)
    measure = sweep({1: 0.5, 2: 1.0, 3: 3.0}, 0.3, 8, 0)
    sel = Tables({"helix_sweep": measure}, {})
    assert compute(BEST, sel, "authors", R) == choose_values(sel, BEST, "authors", R)


class Prompts(Tables):
    """Tables whose pairs come in clusters of two (pairs 2i and 2i + 1, unit "prompts"): every
    number must be resampled by the table's clusters, whatever they are."""

    def clusters(self, name):
        return np.arange(len(self.pair_columns(name))) // 2, "prompts"


GROUPED = np.arange(8) // 2


def test_means_ratios_and_the_category_test_resample_the_clusters_they_are_given():
    v = np.array([1.0, 2.0, 3.0, 4.0, 9.0, np.nan])
    cl = np.array([0, 0, 1, 1, 2, 2])
    out = mean_of(Values(v, cl, "prompts"), R)
    r = resample(v[None], cl, R.bootstrap, R.seed)
    se = float(standard_error(r.boot, 3)[0])
    assert out["n_clusters"] == 3 and out["df"] == 2 and out["n_pairs"] == 5 and out["estimate"] == pytest.approx(3.8)
    assert out["se"] == pytest.approx(se, rel=1e-12) and out["clusters"] == "prompts"
    assert out["sd_diff"] == pytest.approx(per_pair_sd(v, cl)) and out["sd_diff"] != pytest.approx(per_pair_sd(v))
    assert out["high"] == pytest.approx(float(t_interval(3.8, se, 2)[1]), rel=1e-12)
    ratio = ratio_of(v + 1, np.r_[v[:5], 1.0] + 2, cl, "prompts", R)
    x = np.stack([v + 1, v + 2])
    rr = resample(x, cl, R.bootstrap, R.seed)
    assert ratio["n_clusters"] == 3 and ratio["defined"] == bool(ratio_of_means(rr).defined)
    assert ratio["den_high"] == pytest.approx(float(t_interval(5.8, standard_error(rr.boot, 3)[1], 2)[1]), rel=1e-12)
    # two pairs: the denominator's interval on 1 df
    two = ratio_of(np.array([2.0, 4.0]), np.array([1.0, 3.0]), singletons(2), "pairs", R)
    r2 = resample(np.array([[2.0, 4.0], [1.0, 3.0]]), singletons(2), R.bootstrap, R.seed)
    low2, high2 = t_interval(2.0, standard_error(r2.boot, 2)[1], 1)
    assert two["den_low"] == pytest.approx(float(low2), rel=1e-12) and two["den_high"] == pytest.approx(float(high2))
    rng = np.random.default_rng(8)
    te = 1 + rng.normal(0, 0.2, 8)
    de, s, ab = 0.5 * te, 0.9 * te + rng.normal(0, 0.1, 8), 0.2 * te + rng.normal(0, 0.1, 8)
    got = category_test(te, de, s, ab, GROUPED, R)
    rg = resample(np.stack([te, de, s, ab]), GROUPED, R.bootstrap, R.seed)
    bg = rg.boot[:, 1] * rg.boot[:, 2] - (rg.boot[:, 0] - rg.boot[:, 1]) * rg.boot[:, 3]
    assert got["n_clusters"] == 4 and got["df"] == 3
    assert got["se"] == pytest.approx(float(np.std(bg, ddof=1) * np.sqrt(4 / 3)), rel=1e-9)
    # g exactly 0: not above 0, so the category a,b (sign -1)
    zero = category_test([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], [1.0, 2.0, 0.0], [1.0, 1.0, 1.0], singletons(3), R)
    assert zero["sign"] == -1 and zero["estimate"] == 0.0


def test_the_findings_numbers_use_the_tables_clusters():
    rng = np.random.default_rng(6)
    a, b = rng.normal(1.0, 1.0, 8), rng.normal(0.0, 1.0, 8)
    effects = pd.DataFrame([{"layer": 0, "effect": e, **dict(zip(COLS, v))} for e, v in (("a", a), ("b", b + 3))])
    t = Prompts({"layer_effects": effects}, {})
    f = {"id": "f", "table": "layer_effects", "reading": "r", "term": "t", "fill": {}, "x": {"effect": "a"}}
    diff = compute({**f, "quantity": "difference", "y": {"effect": "b"}}, t, "corrected", R)
    assert diff == {**mean_of(Values(a - (b + 3), GROUPED, "prompts"), R), "split": "fixed"}
    assert diff["n_clusters"] == 4 and diff["se"] != mean_of(Values(a - (b + 3), singletons(8), "p"), R)["se"]
    ratio = compute({**f, "quantity": "ratio", "y": {"effect": "b"}}, t, "corrected", R)
    assert ratio == {**ratio_of(a, b + 3, GROUPED, "prompts", R), "split": "fixed"} and ratio["n_clusters"] == 4
    # the head category: TE, helix(a,b,a+b) and the test by the table's clusters
    te = 1.0 + rng.normal(0, 0.2, 8)
    de, s, ab = 0.8 * te, 0.9 * te + rng.normal(0, 0.1, 8), 0.2 * te + rng.normal(0, 0.1, 8)
    plain = planted_head(te, de, te, s, ab)
    heads = Prompts(plain.frames, {})
    cat = {"id": "cat", "x": {"layer": 0, "head": 0}, "fill": {}, "reading": "r", "term": "t", "quantity": "category"}
    out = compute(cat, heads, "corrected", R)
    test = category_test(te, de, s, ab, GROUPED, R)
    te_mean = mean_of(Values(te, GROUPED, "prompts"), R)
    assert out["se"] == test["se"] and out["n_clusters"] == 4 and out["clusters"] == "prompts"
    assert out["den_low"] == te_mean["low"] and out["den_high"] == te_mean["high"]
    assert compute(cat, heads, "authors", R)["selection"] == "a+b (compat: authors, the same rule)"
    flat = te - 1.0 + rng.normal(0, 0.01, 8)
    no_fit = category_of(Prompts(planted_head(te, de, flat, s, ab).frames, {}), cat, "corrected", R)
    m = mean_of(Values(flat, GROUPED, "prompts"), R)
    assert no_fit["note"].endswith(f"(95% interval [{m['low']:.3g}, {m['high']:.3g}])")
    assert no_fit["clusters"] == "prompts" and no_fit["n_clusters"] == 4
    m1 = mean_of(Values(flat, singletons(8), "pairs"), R)
    assert f"{m['low']:.3g}" != f"{m1['low']:.3g}"
    # TE exactly 0 on every pair: its interval [0, 0] is not above 0
    zero = category_of(planted_head(0 * te, de, te, s, ab), cat, "corrected", R)
    assert zero["defined"] is False and zero["note"].endswith("TE is not shown above 0 (95% interval [0, 0])")
    # the select choice: measured by the table's clusters, on the draw, cross-fitted and under authors
    measure = sweep({1: 0.5, 2: 1.0, 3: 3.0}, 0.3, 8, 0, lifts={2: 40.0})
    draw = sweep({1: 5.0, 2: 1.0, 3: 0.0}, 0.3, 6, 1)
    X, Y, C = (by_layer(measure, method) for method in ("helix", "layer", "crit"))
    on_draw = choose_values(Prompts({"helix_sweep": measure, "helix_sweep_selection": draw}, {}), BEST, "c", R)
    assert on_draw["se"] == mean_of(Values(X[0] - Y[0], GROUPED, "prompts"), R)["se"] and on_draw["n_clusters"] == 4
    tp = Prompts({"helix_sweep": measure}, {})
    f = {**BEST, "select": {**BEST["select"], "by": {"method": "crit"}}}
    authors = choose_values(tp, f, "authors", R)
    assert authors == {
        **mean_of(Values(X[1] - Y[1], GROUPED, "prompts"), R),
        "selection": "layer 2, on all pairs",
        "split": "same pairs (compat: authors)",
    }
    fold = folds(GROUPED, R.seed)
    chosen = cross_fit(X - Y, C, fold, "max")
    crossed = choose_values(tp, f, "corrected", R)
    assert crossed["sd_diff"] == per_pair_sd(chosen.values, GROUPED) != per_pair_sd(chosen.values)
    bound = fold_bound(chosen.values, fold, GROUPED, R.bootstrap, R.seed)
    assert crossed["se"] == float(bound.se) and crossed["n_clusters"] == 4 and crossed["clusters"] == "prompts"


def test_a_bad_row_is_an_error_that_says_where():
    measure = sweep({1: 0.5, 2: 1.0, 3: 3.0}, 0.3, 8, 0)
    draw = sweep({1: 5.0, 2: 1.0, 3: 0.0}, 0.3, 6, 1)
    twice = pd.concat([measure, measure[measure["layer"] == 1.0]], ignore_index=True)

    def err(exc, tables, finding, compat="corrected"):
        with pytest.raises(exc) as caught:
            choose_values(tables, finding, compat, R)
        return caught.value.args[0]

    one_row = "2 rows match where one should (say which, or combine: sum)"
    assert err(ValueError, Tables({"helix_sweep": twice}, {}), BEST) == f"best: x at layer 1.0: {one_row}"
    only_y = twice[~((twice["method"] == "helix") & (twice.index >= len(measure)))]
    assert err(ValueError, Tables({"helix_sweep": only_y}, {}), BEST) == f"best: y at layer 1.0: {one_row}"
    dup = pd.concat([draw, draw[draw["layer"] == 1.0]], ignore_index=True)
    with_dup = Tables({"helix_sweep": measure, "helix_sweep_selection": dup}, {})
    assert err(ValueError, with_dup, BEST) == f"best: selection draw at layer 1.0: {one_row}"
    no_method = Tables({"helix_sweep": measure, "helix_sweep_selection": draw.drop(columns="method")}, {})
    assert err(KeyError, no_method, BEST).startswith("best: selection draw: no column 'method'; the table has layer")
    no_layer = Tables({"helix_sweep": measure, "helix_sweep_selection": draw.drop(columns="layer")}, {})
    assert err(KeyError, no_layer, BEST) == "best: no column 'layer'; the table has method"
    t = Tables({"helix_sweep": measure}, {})
    by = {**BEST, "select": {**BEST["select"], "by": {"zz": 1}}}
    assert err(KeyError, t, by, "authors") == "by: no column 'zz'; the table has method, layer"
    by_dup = {**BEST, "select": {**BEST["select"], "by": {"layer": "$l"}}, "fill": {"l": 2}}
    # the by rows at layer 2: three methods of layer 2 matched, then each candidate layer of them
    msg = err(ValueError, t, by_dup, "authors")
    assert msg == "best: by at layer 1.0: 0 rows match where one should (say which, or combine: sum)"
    # $ filled from the finding's fill on the draw and in a by mapping
    filled = {**BEST, "x": {"method": "$m"}, "fill": {"m": "helix"}}
    drawn = Tables({"helix_sweep": measure, "helix_sweep_selection": draw}, {})
    assert choose_values(drawn, filled, "corrected", R) == choose_values(drawn, BEST, "corrected", R)
    lifted = sweep({1: 0.5, 2: 1.0, 3: 3.0}, 0.3, 8, 0, lifts={2: 40.0})
    by_fill = {**BEST, "select": {**BEST["select"], "by": {"method": "$c"}}, "fill": {"c": "crit"}}
    assert choose_values(Tables({"helix_sweep": lifted}, {}), by_fill, "authors", R)["selection"] == (
        "layer 2, on all pairs"
    )
    # candidates are sorted as numbers: on a tie the first, "9", is chosen, not "10"
    labels = pd.DataFrame(
        [
            {"method": m, "layer": layer, **dict(zip(COLS, np.full(8, 1.0)))}
            for m in ("helix", "layer")
            for layer in ("10", "9")
        ]
    )
    tie = choose_values(Tables({"helix_sweep": labels}, {}), BEST, "authors", R)
    assert tie["selection"] == "layer 9, on all pairs"
    # compute's own rows and the head category's
    effects = pd.DataFrame([{"effect": e, **dict(zip(COLS, np.ones(8)))} for e in ("a", "a", "b", "b", "c")])
    f = {"id": "f", "table": "layer_effects", "reading": "r", "term": "t", "fill": {}, "quantity": "difference"}
    with pytest.raises(ValueError, match=rf"^f: x: {re.escape(one_row)}$"):
        compute({**f, "x": {"effect": "a"}, "y": {"effect": "c"}}, Tables({"layer_effects": effects}, {}), "c", R)
    with pytest.raises(ValueError, match=rf"^f: y: {re.escape(one_row)}$"):
        compute({**f, "x": {"effect": "c"}, "y": {"effect": "b"}}, Tables({"layer_effects": effects}, {}), "c", R)
    te = np.linspace(0.5, 1.5, 8)
    heads = planted_head(te, 0.5 * te, te, te, te)
    cat = {"id": "cat", "x": {"layer": 0, "head": 0}, "fill": {}, "reading": "r", "term": "t", "quantity": "category"}
    with pytest.raises(KeyError) as caught:
        category_of(heads, {**cat, "x": {"layer": 0, "component": "head"}}, "c", R)
    assert caught.value.args[0] == "cat: no column 'component'; the table has layer, head, effect"
    fx = heads.frames["head_effects"].assign(component="head")
    with pytest.raises(KeyError) as caught:
        category_of(
            Tables({**heads.frames, "head_effects": fx}, {}), {**cat, "x": {"layer": 0, "component": "head"}}, "c", R
        )
    assert caught.value.args[0] == "cat: no column 'component'; the table has layer, head, fit"
    with pytest.raises(KeyError) as caught:
        category_of(Tables({**heads.frames, "head_effects": fx.drop(columns="effect")}, {}), cat, "c", R)
    assert caught.value.args[0] == "cat: no column 'effect'; the table has layer, head, component"
    fx2 = pd.concat([heads.frames["head_effects"], heads.frames["head_effects"].iloc[[0]]], ignore_index=True)
    with pytest.raises(ValueError) as caught:
        category_of(Tables({**heads.frames, "head_effects": fx2}, {}), cat, "c", R)
    assert caught.value.args[0] == f"cat: te: {one_row}"


def test_a_stages_test_takes_its_lists_recorded_split():
    tested = pd.DataFrame({"layer": [1], "inc": [0.3], "p": [0.5], "lo": [0.0], "hi": [0.6]})
    t = Tables({"number_bases_nested": tested}, {"lst": pd.DataFrame({"split": ["separate draw"]})})
    h = {"id": "t", "table": "number_bases_nested", "reading": "r", "term": "t", "fill": {}, "quantity": "tested"}
    h |= {"x": {"column": "inc", "layer": 1}, "test": {"p": "p", "sided": "greater", "low": "lo", "high": "hi"}}
    h["test"] |= {"n": "layer", "unit": "numbers"}
    h["each"] = {"table": "lst", "chosen_by": "a stage"}
    assert compute(h, t, "corrected", R)["split"] == "the run's choice, on a separate draw of pairs"

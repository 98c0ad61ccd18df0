"""Known-answer tests of App. E (linear addition) and App. F (the model's errors)."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pandas as pd
import pytest
from helpers.figures import save

from helixclock.stages.mistakes import figures as F
from helixclock.stages.mistakes.linear_addition import (
    accuracy_below,
    fit_number_line,
    leverages,
    linear_addition,
    linear_sums,
    regress_numbers,
)
from helixclock.stages.mistakes.logit_lens import (
    harmonic_order,
    logit_lens_periods,
    logit_lens_table,
    match_shares,
    neuron_lens_tables,
)
from helixclock.stages.mistakes.wrong_answers import (
    carry_test,
    dominant_periods,
    error_distribution,
    error_summary,
    error_table,
    line_fits,
    logit_examples,
    logit_line_fourier,
    period_counts,
    read_answer_logits,
    wrong_answer_tables,
    wrong_answers,
)
from helixclock.stages.report.quantities import REGISTRY
from helixclock.stats.statistics import ABS_DE_SET, DE_SET, MIN_ERRORS, share_set, unit_set

GRID = [(a, b) for a in range(100) for b in range(100)]


def add_table(correct, pred=None) -> pd.DataFrame:
    """A synthetic add.csv over the 10,000 a+b prompts (a-major)."""
    a, b = np.array(GRID).T
    answer = a + b
    correct = np.asarray(correct, bool)
    pred = np.where(correct, answer.astype(str), "") if pred is None else pred
    return pd.DataFrame(
        {
            "task": "add",
            "a": a,
            "b": b,
            "answer": answer,
            "answer_token": answer,
            "pred_token": 0,
            "pred": pred,
            "correct": correct,
            "answer_logit": 0.0,
            "rank": 0,
        }
    )


# ---------------------------------------------------------------- App. E


def test_linear_addition_on_an_exact_line_is_always_right():
    rng = np.random.default_rng(0)
    v = rng.normal(size=64)
    X = 3.0 + np.outer(np.arange(100), v)  # every number exactly on a line
    a, b = np.array(GRID).T
    model = add_table(a + b < 100)  # the "model" is right exactly below 100
    t = linear_addition(X, model)
    assert set(t["accuracy"]["reading"]) == {"points", "regression", "regression_heldout"}
    assert np.allclose(t["accuracy"]["line_r2"], 1.0) and np.allclose(t["accuracy"]["line_r2_heldout"], 1.0)
    assert np.allclose(t["line"]["offset"], 0, atol=1e-9)  # on an exact line every reading puts a at a
    assert (t["accuracy"]["linear_accuracy"] == 1.0).all()
    acc = t["accuracy"][t["accuracy"]["reading"] == "points"].set_index("alpha")
    # problems with a1 + a2 < alpha: alpha (alpha + 1) / 2 of them for alpha <= 100
    assert acc.loc[100, "n_problems"] == 5050 and acc.loc[10, "n_problems"] == 55
    assert acc.loc[199, "n_problems"] == 10_000
    assert acc.loc[100, "model_accuracy"] == 1.0 and acc.loc[199, "model_accuracy"] == 0.505


def test_linear_addition_on_a_circle_fails():
    a = np.arange(100)
    X = np.stack([np.cos(2 * np.pi * a / 100), np.sin(2 * np.pi * a / 100)], 1)  # the T = 100 circle alone
    acc = linear_addition(X)["accuracy"]
    acc = acc[acc["reading"] == "points"]
    assert acc["line_r2"].iloc[0] < 0.5
    assert acc["linear_accuracy"].max() < 0.1
    assert acc["model_accuracy"].isna().all()


def test_linear_addition_falls_with_alpha_when_precision_falls_with_a():
    """Positions off the integers by +-0.8 a/99 (alternating): exact for small numbers, the
    sum of two large ones rounds to the wrong answer."""
    a = np.arange(100)
    v = np.random.default_rng(1).normal(size=16)
    X = np.outer(a + 0.8 * (-1.0) ** a * a / 99, v) + 3
    acc = linear_addition(X)["accuracy"]
    acc = acc[acc["reading"] == "points"].set_index("alpha")["linear_accuracy"]
    assert (acc.loc[1:50] == 1.0).all()
    assert acc.loc[199] < acc.loc[100] < acc.loc[50] and acc.loc[199] < 0.6


def test_linear_addition_matches_a_plain_loop():
    rng = np.random.default_rng(2)
    X = np.outer(np.arange(100), rng.normal(size=20)) + 6 * rng.normal(size=(100, 20))
    line = fit_number_line(X, n_components=10)
    t = line.positions
    pred = linear_sums(t)
    for a1, a2 in [(0, 0), (3, 97), (50, 49), (99, 99), (12, 34)]:
        n = np.arange(199)
        assert pred[a1, a2] == n[np.argmin(np.abs(n - (t[a1] + t[a2])))]
    # accuracy over answers < alpha against a loop over problems
    ok = pred == np.add.outer(np.arange(100), np.arange(100))
    answers = np.add.outer(np.arange(100), np.arange(100))
    got, n = accuracy_below(ok, answers, np.array([1, 7, 100, 150, 199]))
    for alpha, g, c in zip([1, 7, 100, 150, 199], got, n):
        sel = answers < alpha
        assert c == sel.sum() and np.isclose(g, ok[sel].mean())
    # R^2 by hand in the PCA space (10 dims), and held out by refitting without each number
    P = line.coords
    fitted = line.x0 + np.outer(np.arange(100), line.v)
    ss_tot = ((P - P.mean(0)) ** 2).sum()
    assert np.isclose(line.r2, 1 - ((P - fitted) ** 2).sum() / ss_tot)
    a = np.arange(100.0)
    sse = 0.0
    for i in range(100):
        keep = a != i
        coef, *_ = np.linalg.lstsq(np.stack([np.ones(99), a[keep]], 1), P[keep], rcond=None)
        sse += ((P[i] - coef[0] - i * coef[1]) ** 2).sum()
    assert np.isclose(line.r2_heldout, 1 - sse / ss_tot)


def test_the_two_readings_of_app_e_line_by_hand():
    """App. E's "fit a line" read two ways on points spread around a line in 50 dims: the line
    through the points explains little of their variance, while a regressed on the 50 dims is
    near-perfect in sample (50 features for 100 numbers) and worse held out; both R^2 and the
    leave-one-out predictions checked against a plain loop of refits."""
    rng = np.random.default_rng(4)
    X = np.outer(np.arange(100), rng.normal(size=64)) / 50 + rng.normal(size=(100, 64))
    t = linear_addition(X, n_components=50)
    acc = t["accuracy"].groupby("reading").first()
    assert acc.loc["points", "line_r2"] < 0.3
    assert acc.loc["regression", "line_r2"] > 0.95 > acc.loc["regression", "line_r2_heldout"]
    assert acc.loc["regression_heldout", "line_r2"] == acc.loc["regression", "line_r2_heldout"]
    line = fit_number_line(X, 50)
    reg = regress_numbers(line.coords)
    a = np.arange(100.0)
    D = np.concatenate([line.coords, np.ones((100, 1))], 1)
    coef, *_ = np.linalg.lstsq(D, a, rcond=None)
    ss_tot = ((a - a.mean()) ** 2).sum()
    assert np.allclose(reg.fitted, D @ coef) and np.isclose(reg.r2, 1 - ((a - D @ coef) ** 2).sum() / ss_tot)
    loo = np.array([D[i] @ np.linalg.lstsq(D[a != i], a[a != i], rcond=None)[0] for i in range(100)])
    assert np.allclose(reg.heldout, loo, atol=1e-6)
    assert np.isclose(acc.loc["regression", "line_r2_heldout"], 1 - ((a - loo) ** 2).sum() / ss_tot)
    positions = t["line"].set_index(["reading", "a"])["position"]
    assert np.allclose(positions["regression"], reg.fitted) and np.allclose(positions["regression_heldout"], loo)
    assert np.allclose(leverages(D), np.diag(D @ np.linalg.pinv(D)))


# ---------------------------------------------------------------- App. F: errors

# wrong answers: (error or a non-number, units-digit sum); 4 correct prompts besides
WRONG = [
    (-10, 12),
    (-10, 15),
    (-10, 10),
    (-10, 11),
    (-10, 13),
    (-10, 18),
    (-10, 3),
    (-10, 5),
    (10, 11),
    (10, 4),
    (10, 0),
    (10, 2),
    (1, 16),
    (1, 10),
    (-1, 1),
    (-20, 7),
    (20, 8),
    (-2, 6),
    (-1, 9),
    (2, 2),
    ("x", 4),
    ("", 12),
]


def hand_made() -> pd.DataFrame:
    rows = []
    for i, (err, s) in enumerate(WRONG + [(0, 5)] * 4):
        u1 = min(9, s)
        a, b = 10 + u1, 20 + (s - u1) + 10 * (i % 3)
        pred = str(a + b + err) if isinstance(err, int) else err
        rows.append({"a": a, "b": b, "answer": a + b, "pred": pred, "correct": err == 0})
    return pd.DataFrame(rows)


def yates(table) -> tuple[float, float]:
    """Chi-squared of a 2x2 table with Yates' correction, by the textbook formula."""
    (a, b), (c, d) = table
    n = a + b + c + d
    chi2 = n * (abs(a * d - b * c) - n / 2) ** 2 / ((a + b) * (c + d) * (a + c) * (b + d))
    return chi2, math.erfc(math.sqrt(chi2 / 2))  # 1 dof: P(X > chi2) = erfc(sqrt(chi2 / 2))


def test_error_table_distribution_and_summary_count_the_hand_made_errors(tmp_path):
    acc = hand_made()
    # pandas reads a column of numbers back as int (as float with an empty prediction among
    # them): the error table must not change
    for keep in (acc["pred"] != "x") & (acc["pred"] != ""), acc["pred"] != "x":
        acc[keep].to_csv(tmp_path / "add.csv", index=False)
        back = pd.read_csv(tmp_path / "add.csv")
        assert pd.api.types.is_numeric_dtype(back["pred"])
        pd.testing.assert_frame_equal(error_table(back), error_table(acc[keep]))
    for df in (acc,):
        err = error_table(df)
        assert len(err) == 22 and err["numeric"].sum() == 20
        dist = error_distribution(err).set_index("error")
        assert dist.loc[-10, "count"] == 8 and dist.loc[10, "count"] == 4 and dist.loc[-1, "count"] == 2
        assert np.isclose(dist.loc[-10, "share"], 8 / 20) and dist.loc[-10, "rank"] == 1 and dist.loc[10, "rank"] == 2
        s = error_summary(df, err).iloc[0]
        assert s["n_prompts"] == 26 and s["n_wrong"] == 22 and np.isclose(s["wrong_share"], 22 / 26)
        assert np.isclose(s["numeric_share_of_wrong"], 20 / 22)
        assert s["top1_error"] == -10 and s["top2_error"] == 10
        assert np.isclose(s["minus10_share"], 0.4) and np.isclose(s["plus10_share"], 0.2)
        assert np.isclose(s["top2_cumulative_share"], 0.6)
    assert (err["units_sum"].to_numpy() == [s for _, s in WRONG]).all()


def test_carry_test_is_yates_chi_squared_by_hand():
    err = error_table(hand_made())
    res = carry_test(err).set_index("split")
    # >= 10: the -10 errors have sums 12 15 10 11 13 18 | 3 5; the 12 other numeric errors
    # have sums 11 16 10 | 4 0 2 1 7 8 6 9 2
    carry = [[6, 2], [3, 9]]
    row = res.loc[">= 10 (carry)"]
    assert [[row.hit_carry, row.hit_no_carry], [row.other_carry, row.other_no_carry]] == carry
    chi2, p = yates(carry)
    assert np.isclose(row.chi2, chi2) and np.isclose(row.p, p) and row.dof == 1
    assert np.isclose(chi2, 20 * 38**2 / (8 * 12 * 9 * 11))
    # > 10 (the authors' code): a units sum of exactly 10 is no carry
    authors = [[5, 3], [2, 10]]
    row = res.loc["> 10 (authors' code)"]
    assert [[row.hit_carry, row.hit_no_carry], [row.other_carry, row.other_no_carry]] == authors
    assert np.isclose(row.chi2, yates(authors)[0]) and np.isclose(row.p, yates(authors)[1])
    assert np.isclose(row.carry_share_hit, 5 / 8) and np.isclose(row.carry_share_other, 2 / 12)


def test_carry_test_without_any_minus_ten_has_no_statistic():
    err = error_table(hand_made())
    err = err[err["error"] != -10]
    res = carry_test(err)
    assert res["chi2"].isna().all() and (res["note"] != "").all()


# ---------------------------------------------------------------- App. F: logits


def planted_logits(n: int = 300, seed: int = 0):
    """Logits over 0..198 = slope * token + c + A cos(2 pi token / T + phi) + noise."""
    rng = np.random.default_rng(seed)
    x = np.arange(199)
    slope = rng.uniform(-0.08, 0.02, n)
    T = rng.choice([10, 100, 5], n)
    A = rng.uniform(1.0, 2.0, n)
    Y = (
        slope[:, None] * x
        + rng.normal(size=(n, 1))
        + A[:, None] * np.cos(2 * np.pi * x / T[:, None] + rng.uniform(0, 2 * np.pi, (n, 1)))
        + 0.05 * rng.normal(size=(n, 199))
    )
    return Y, slope, T


def test_line_fits_and_dominant_periods_find_the_planted_logits():
    Y, slope, T = planted_logits()
    got_slope, intercept, line = line_fits(Y)
    # the planted slope, up to the cosines' own tilt over 199 tokens (largest for T = 100)
    assert np.allclose(got_slope[T != 100], slope[T != 100], atol=0.002)
    assert np.allclose(got_slope, slope, atol=0.01)
    ref = np.polyfit(np.arange(199), Y.T, 1)  # a plain reference: [2, n]
    assert np.allclose(got_slope, ref[0]) and np.allclose(intercept, ref[1])
    top = dominant_periods(Y - line)
    # 199 tokens: period 10 is frequency 20 (9.95), 100 is 2 (99.5), 5 is 40 (4.975)
    assert (top["frequency"] == np.rint(199 / T)).all()
    assert np.allclose(top["period"], 199 / np.rint(199 / T))
    # without the detrending, the ramp of the steepest prompts takes the lowest frequency
    steep = np.abs(slope) > 0.06
    assert (dominant_periods(Y[steep])["frequency"][T[steep] != 100] <= 2).mean() > 0.5


def test_logit_slopes_periods_and_examples_are_the_planted_ones(tmp_path):
    Y, slope, T = planted_logits(n=10_000, seed=3)
    acc = add_table(np.ones(10_000, bool))
    per = logit_line_fourier(Y, acc)
    assert len(per) == 10_000 and np.allclose(per["slope"], slope, atol=0.01)
    counts = period_counts(per["top_period"]).set_index("frequency")
    assert counts["count"].sum() == 10_000 and counts.loc[20, "count"] == (T == 10).sum()
    ex = logit_examples(Y, acc, n_examples=3, seed=5)
    again = logit_examples(Y, acc, n_examples=3, seed=5)
    pd.testing.assert_frame_equal(ex, again)
    rows = np.sort(np.random.default_rng(5).choice(10_000, 3, replace=False))
    for i, r in enumerate(rows):
        part = ex[ex["example"] == i]
        assert part["a"].iloc[0] == r // 100 and part["b"].iloc[0] == r % 100
        assert np.allclose(part["logit"], Y[r]) and np.isclose(part["slope"].iloc[0], per["slope"].iloc[r])
    with pytest.raises(ValueError, match="rows of logits"):
        logit_line_fourier(Y[:10], acc)
    tables = wrong_answer_tables(acc, Y, n_examples=3, seed=5)
    assert set(tables) == {
        "wrong_answers",
        "error_distribution",
        "error_summary",
        "carry_test",
        "logit_examples",
        "logit_line_fourier",
    }
    pd.testing.assert_frame_equal(tables["logit_examples"], ex)
    assert tables["error_summary"]["n_wrong"].iloc[0] == 0 and len(tables["wrong_answers"]) == 0
    # the h5 reader
    with h5py.File(tmp_path / "add_logits.h5", "w") as f:
        f["logits"] = Y.astype(np.float16)
        f.attrs["numbers"] = np.arange(199)
    assert np.allclose(read_answer_logits(tmp_path / "add_logits.h5"), Y, atol=0.05)


def test_wrong_answers_reads_the_final_scores_its_switch_names(tmp_path):
    """Rule model_errors' entry point: where numbers are one token, the final logits of
    add_logits.h5 over every prompt; where they take several (layout.NumberTokens), the
    log-likelihoods L(n) of answer_scores.h5's sample of rows, beside their control."""
    Y, slope, _ = planted_logits(n=10_000, seed=3)
    acc = add_table(np.ones(10_000, bool))
    with h5py.File(tmp_path / "add_logits.h5", "w") as f:
        f["logits"] = Y.astype(np.float16)
        f.attrs["numbers"] = np.arange(199)
    one = wrong_answers(acc, tmp_path / "add_logits.h5", several=False, seed=5)
    assert len(one["logit_line_fourier"]) == 10_000 and "control_slope" not in one["logit_line_fourier"]
    assert np.allclose(one["logit_line_fourier"]["slope"], slope, atol=0.01)
    rows = np.array([3, 250, 7001])
    with h5py.File(tmp_path / "answer_scores.h5", "w") as f:
        f["rows"], f["scores"], f["control"] = rows, Y[rows], 2 * Y[rows]
    several = wrong_answers(acc, tmp_path / "answer_scores.h5", several=True, seed=5)
    per = several["logit_line_fourier"]
    assert per["a"].tolist() == [0, 2, 70] and per["b"].tolist() == [3, 50, 1]
    assert np.allclose(per["slope"], slope[rows], atol=0.01) and np.allclose(per["control_slope"], 2 * per["slope"])
    pd.testing.assert_frame_equal(several["carry_test"], one["carry_test"])  # add.csv's wrong answers alike


# ---------------------------------------------------------------- App. F: neurons


def planted_neurons(n: int = 40, seed: int = 0):
    """Neurons whose logit lens has period T (199 / round(199 / T)) = their fitted a+b period,
    except every fifth, whose lens has period 199 (the paper's "200")."""
    rng = np.random.default_rng(seed)
    T = rng.choice([2, 5, 10, 100], n)
    x = np.arange(199)
    lens = np.cos(2 * np.pi * x / T[:, None] + rng.uniform(0, 6, (n, 1))) + 0.1 * rng.normal(size=(n, 199))
    lens[::5] = 2 * np.cos(2 * np.pi * x / 199) + 0.1 * rng.normal(size=(n // 5, 199))
    neurons = pd.DataFrame(
        {
            "place": "number",  # one-token numbers: the whole number, the paper's lens over 0..198
            "layer": rng.integers(10, 28, n),
            "neuron": rng.integers(0, 16384, n),
            "te": rng.uniform(0.1, 1, n),
            "de": np.linspace(1.0, 0.01, n),
            "max_post": rng.uniform(1, 3, n),
            "max_a": rng.integers(0, 100, n),
            "max_b": rng.integers(0, 100, n),
            "top_variable": "a+b",
            "top_period": T,
        }
    )
    return neurons, lens


def test_the_80_percent_de_set_by_hand():
    """One definition of "the neurons for 80% of the DE" (App. D.2, F): the largest DEs whose sum
    reaches 80% of the signed total of all top neurons' DEs."""
    assert share_set(np.array([1.0, 5.0, 1.0, 3.0]), 0.8).tolist() == [False, True, False, True]
    assert share_set(np.array([1.0, 5.0, 1.0, 3.0]), 0.81).sum() == 3
    assert share_set(np.array([4.0, -1.0, 6.0]), 0.5).tolist() == [False, False, True]  # total 9: 6 >= 4.5
    # negative DEs lower the total: 80% of 7 - 3 = 4 is reached by 3 + 2 (clipped, 80% of 7 needs 3 + 2 + 2)
    de = np.array([3.0, 2.0, 2.0, -3.0])
    assert share_set(de, 0.8).tolist() == [True, True, False, False]
    assert not share_set(np.array([-1.0, -2.0]), 0.8).any()  # no positive total: not defined, no unit


def every_unit_where_the_total_is_not_positive(values, share):
    """32a8dce's set: the paper's DE set, or every unit where the DEs sum to 0 or less."""
    v = np.asarray(values, float)
    return share_set(v, share) if v.sum() > 0 else np.ones(len(v), bool)


def test_a_negative_de_total_gives_the_abs_de_set_named_as_such():
    """Issue: Gemma-3's top neurons' signed DE summed to -2.24, so "the DE set" was every unit and
    the lens "held" for about all of them.  Where the signed total is not positive the set is the
    largest |DE| reaching 80% of the total |DE|, named "|DE| set"; the paper's case (a positive
    total) keeps the DE set and its name."""
    de = np.array([-5.0, 1.0, -3.0, 0.5, -0.5, 0.2, -0.1, 0.4])  # sum -6.5; |DE| total 10.7, 80% = 8.56
    chosen = unit_set(de, 0.8)
    assert chosen.name == ABS_DE_SET == "|DE| set"
    assert chosen.mask.tolist() == [True, True, True, False, False, False, False, False]  # 5 + 3 + 1 = 9 >= 8.56
    wrong = every_unit_where_the_total_is_not_positive(de, 0.8)  # the wrong method: every unit
    assert wrong.sum() == len(de) and chosen.mask.sum() == 3
    paper = np.array([1.0, 5.0, 1.0, 3.0, -0.5])  # a positive total: the paper's set, unchanged
    assert unit_set(paper, 0.8).name == DE_SET and unit_set(paper, 0.8).mask.tolist() == share_set(paper, 0.8).tolist()
    assert not unit_set(np.zeros(4), 0.8).mask.any()  # no DE at all: no unit
    # the paper comparison's count of "the neurons for 80% of the DE": not defined, not every unit
    count = REGISTRY["n_neurons_de80"]
    assert count.extract({"neurons": pd.DataFrame({"de": paper})}, "m") == 2
    assert np.isnan(count.extract({"neurons": pd.DataFrame({"de": de})}, "m"))
    assert "not defined" in count.gap({"neurons": pd.DataFrame({"de": de})}, "m")[1]


def test_the_lens_tables_and_their_claims_name_the_set_they_read():
    """F4's tables carry the set's name (column unit_set) and the findings' claims say it: with a
    negative DE total the lens claims read "the |DE| set's units", never "the DE set's"."""
    neurons, lens = planted_neurons(40)
    neurons["de"] = -neurons["de"].abs()  # every DE negative: the paper's set is not defined
    per = logit_lens_periods(neurons, lens, fraction=0.8)
    assert set(per["unit_set"]) == {ABS_DE_SET}
    keep = unit_set(neurons["de"].to_numpy(), 0.8).mask & (neurons["top_variable"] == "a+b").to_numpy()
    assert len(per) == keep.sum() < len(neurons)
    # the claims read the name from the table: tests/unit/test_contrasts_rules.py (each.names)


def test_a_lens_period_near_t_over_k_is_a_harmonic_match():
    """A lens period T/k (k <= 4) is a harmonic match of the fitted period T; 199/k periods on
    the 199 answer tokens are within 5% of T/k."""
    lens = np.array([199 / 40, 199 / 80, 199 / 20, 199 / 60, 199 / 1, 199 / 4, 199 / 8, 199 / 99, 199 / 30])
    fitted = np.array([5, 5, 5, 10, 100, 100, 100, 2, 10])
    assert harmonic_order(lens, fitted).tolist() == [1, 2, 0, 3, 0, 2, 4, 1, 0]
    assert harmonic_order(lens, fitted, harmonics=1).tolist() == [1, 0, 0, 0, 0, 0, 0, 1, 0]


def test_f4_keeps_neurons_whose_largest_term_is_an_ab_term():
    """App. F: only neurons "whose preactivation fit's largest term is c_{T,a+b}" enter Fig. F4;
    one whose largest term is an a or b term is left out even if its best a+b term has period T."""
    neurons, lens = planted_neurons(40)
    neurons.loc[1::4, "top_variable"] = "a"  # largest term on a: out
    per = logit_lens_periods(neurons, lens, fraction=0.8)
    keep = share_set(neurons["de"].to_numpy(), 0.8) & (neurons["top_variable"] == "a+b").to_numpy()
    assert len(per) == keep.sum() < share_set(neurons["de"].to_numpy(), 0.8).sum()
    assert set(zip(per["layer"], per["neuron"])) == set(zip(neurons["layer"][keep], neurons["neuron"][keep]))
    # a period-5 neuron whose lens shows 2.5 (the harmonic) is a harmonic match, not a strict one
    x = np.arange(199)
    lens2 = np.cos(2 * np.pi * x / 2.5)[None].repeat(2, 0)
    two = pd.DataFrame(
        {
            "place": "number",
            "layer": [1, 2],
            "neuron": [0, 1],
            "de": [1.0, 1.0],
            "top_variable": "a+b",
            "top_period": [5, 10],
        }
    )
    per2 = logit_lens_periods(two, lens2, fraction=1.0)
    assert per2["matches"].tolist() == [False, False] and per2["harmonic"].tolist() == [2, 4]
    assert match_shares(per2) == {"n": 2, "strict": 0.0, "harmonic": 1.0}


def test_the_neuron_logit_lens_finds_the_planted_periods():
    neurons, lens = planted_neurons()
    table = logit_lens_table(neurons, lens, rows=[0, 3])
    assert list(dict.fromkeys(table["label"])) == [
        f"L{neurons.layer[0]}N{neurons.neuron[0]}",
        f"L{neurons.layer[3]}N{neurons.neuron[3]}",
    ]
    assert np.allclose(table["logit"].to_numpy()[:199], neurons.max_post[0] * lens[0])
    assert (table["answer"] == table["max_a"] + table["max_b"]).all() and set(table["place"]) == {"number"}
    per = logit_lens_periods(neurons, lens, fraction=0.8)
    assert set(per["place"]) == {"number"}
    keep = share_set(neurons["de"].to_numpy(), 0.8)
    assert len(per) == keep.sum() < len(neurons)
    # frequency of period T over 199 tokens: nearest k = 199 / T, at most 99 (T = 2 -> 99, 2.01)
    k_of_T = np.minimum(np.rint(199 / neurons["top_period"]), 99)
    planted = np.where(np.arange(len(neurons)) % 5 == 0, 1, k_of_T)[keep]
    assert (per["lens_frequency"].to_numpy() == planted).all()
    assert (per["matches"].to_numpy() == (planted != 1)).all()
    assert (per["matches_harmonic"].to_numpy() == (planted != 1)).all()  # period 199 is no harmonic of T
    with pytest.raises(KeyError, match="top_period"):
        logit_lens_periods(neurons.drop(columns="top_period"), lens)
    both = neuron_lens_tables(neurons, lens, rows=[0, 3])
    pd.testing.assert_frame_equal(both["logit_lens"], table)
    pd.testing.assert_frame_equal(both["logit_lens_periods"], per)


# ---------------------------------------------------------------- figures


def test_figures_of_appendix_e_and_f_label_what_the_tables_hold(tmp_path):
    rng = np.random.default_rng(0)
    v = rng.normal(size=32)
    X = np.outer(np.arange(100) + 0.6 * rng.normal(size=100), v)
    X += 5 * np.outer(np.cos(np.arange(100)), rng.normal(size=32))
    a, b = np.array(GRID).T
    p_correct = 0.98 - 0.4 * (a + b) / 198
    correct = rng.uniform(size=10_000) < p_correct
    err = rng.choice([-10, 10, -1, 1, -20, 0], 10_000, p=[0.45, 0.28, 0.07, 0.05, 0.05, 0.10])
    pred = np.where(correct, (a + b).astype(str), np.where(err == 0, "x", (a + b + err).astype(str)))
    acc = add_table(correct, pred)
    tabs = linear_addition(X, acc)
    fig = F.figE1_linear_addition(tabs["accuracy"], tabs["line"], "toy")
    assert fig.axes[0].get_xlabel().startswith("α") and fig.axes[0].get_ylabel() == "accuracy"
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    r2 = tabs["accuracy"].groupby("reading").first()
    at100 = tabs["accuracy"][tabs["accuracy"]["alpha"] == 100].set_index("reading")
    assert legend == [
        f"toy ({at100['model_accuracy'].iloc[0]:.1%} at α = 100)",
        f"line through the points (R² = {r2.loc['points', 'line_r2']:.3f}, held out "
        f"{r2.loc['points', 'line_r2_heldout']:.3f}, {at100.loc['points', 'linear_accuracy']:.1%} "
        "at α = 100)",
        f"a regressed on the dims (R² = {r2.loc['regression', 'line_r2']:.3f}, "
        f"{at100.loc['regression', 'linear_accuracy']:.1%} at α = 100)",
        f"a regressed on the dims, held out (R² = {r2.loc['regression_heldout', 'line_r2']:.3f}, "
        f"{at100.loc['regression_heldout', 'linear_accuracy']:.1%} at α = 100)",
    ]
    assert "paper (GPT-J)" in fig.axes[0].get_title() and not fig.axes[0].texts  # no note over the curves
    save(fig, tmp_path, "figE1_linear_addition")

    errors = error_table(acc)
    fig = F.figF1_error_distribution(errors, error_summary(acc, errors), "toy")
    assert fig.axes[0].get_xlabel().startswith("error = prediction − answer")
    assert any(t.get_text().startswith("-10:") for t in fig.axes[0].texts)
    save(fig, tmp_path, "figF1_error_distribution")

    fig = F.figF2_carry_test(errors, carry_test(errors), "toy")
    assert "p =" in fig.axes[0].get_title() and fig.axes[0].get_ylabel() == "density"
    save(fig, tmp_path, "figF2_carry_test")

    neurons, lens = planted_neurons(200)
    fig = F.figF3_neuron_logit_lens(logit_lens_table(neurons, lens), "toy")
    assert len([ax for ax in fig.axes if ax.get_visible() and ax.lines]) == 4
    assert "top period" in fig.axes[0].get_title()
    save(fig, tmp_path, "figF3_neuron_logit_lens")

    per = logit_lens_periods(neurons, lens)
    fig = F.figF4_logit_lens_periods(per, "toy")
    assert [ax.get_title().split(" (n")[0] for ax in fig.axes] == [
        f"largest fitted term c(T = {T}, a+b)" for T in (2, 5, 10, 100)
    ]
    shares = match_shares(per[per["fitted_period"] == 5])
    assert f"{shares['strict']:.0%} at T, {shares['harmonic']:.0%} at T/k" in fig.axes[1].get_title()
    save(fig, tmp_path, "figF4_logit_lens_periods")

    Y, _, _ = planted_logits(n=10_000, seed=1)
    fig = F.figF5_logit_examples(logit_examples(Y, acc, 3, seed=0), "toy")
    assert len(fig.axes) == 3 and fig.axes[0].get_ylabel() == "final logit"
    save(fig, tmp_path, "figF5_logit_examples")

    fig = F.figF6_logit_slope_fourier(logit_line_fourier(Y, acc), "toy")
    assert fig.axes[0].get_xlabel() == "a + b" and "slope < 0" in fig.axes[0].get_title()
    assert fig.axes[1].get_xlabel().startswith("top Fourier period")
    save(fig, tmp_path, "figF6_logit_slope_fourier")


def test_figures_survive_a_model_without_numeric_errors(tmp_path):
    """A toy model may answer (almost) everything right: the figures still draw."""
    correct = np.ones(10_000, bool)
    correct[5] = False
    pred = np.array([str(a + b) for a, b in GRID], dtype=object)
    pred[5] = "x"
    acc = add_table(correct, pred)
    errors = error_table(acc)
    assert len(errors) == 1 and not errors["numeric"].any()
    save(F.figF1_error_distribution(errors, error_summary(acc, errors), "toy"), tmp_path, "empty_F1")
    carry = carry_test(errors)
    assert carry["p"].isna().all()
    save(F.figF2_carry_test(errors, carry, "toy"), tmp_path, "empty_F2")
    neurons, lens = planted_neurons(8)
    empty = logit_lens_periods(neurons.assign(top_period=3), lens)
    assert empty.empty
    save(F.figF4_logit_lens_periods(empty, "toy"), tmp_path, "empty_F4")


def test_f1_and_f2_say_when_there_are_too_few_errors(tmp_path):
    """toy-gptj answers all but 2 prompts: Figs. F1 and F2 say in the panel that there are too few
    errors for the test, with n, and the carry test is not run (it is below MIN_ERRORS)."""
    correct = np.ones(10_000, bool)
    correct[[5, 70]] = False
    a, b = np.array(GRID).T
    pred = np.where(correct, (a + b).astype(str), (a + b - 10).astype(str))
    acc = add_table(correct, pred)
    errors = error_table(acc)
    carry = carry_test(errors)
    assert carry["p"].isna().all() and carry["note"].str.startswith("too few errors for the test: n = 2").all()
    for fig in (
        F.figF1_error_distribution(errors, error_summary(acc, errors), "toy"),
        F.figF2_carry_test(errors, carry, "toy"),
    ):
        last_line = fig.axes[0].get_title().split("\n")[-1]
        assert last_line.startswith("too few errors for") and "n = 2 numeric wrong answers" in last_line
    save(fig, tmp_path, "few_F2")
    enough = error_table(hand_made())
    assert len(enough[enough["numeric"]]) == MIN_ERRORS and not carry_test(enough)["p"].isna().any()

"""The nested T = 100 test of a number's last token (docs/several-tokens.md, "Numbers of several tokens"): a
T = 100 circle planted beside digit features is detected although the race between single bases
does not name the helix; without one nothing is detected; the periods 2, 5, 10 add exactly
nothing over a units one-hot; the circles' increment is the comparison's own paired difference;
Holm's adjustment is the step-down procedure; the calibration finds smaller amplitudes where the
noise is lower."""

import re

import numpy as np
import pandas as pd
import pytest
from helpers.findings import committed_findings
from helpers.pages import assert_every_number_is_in_the_table

from helixclock.fitting.bases import Basis, Combined, digit, digit_count
from helixclock.fitting.planes import circle, placebo_sigmas, residual_frame, tens_permuted_circle
from helixclock.stages.structure import nested
from helixclock.stages.structure.nested import (
    CIRCLES,
    VERDICT,
    calibrate,
    detectable,
    helix_t100_coefficients,
    helix_t100_part,
    increments,
    nested_sets,
    nested_tables,
    placebo_p,
    upper_p,
    verdict,
)
from helixclock.stages.structure.number_bases import (
    compare_number_bases,
    crossed_weights,
    design,
    kfold,
    number_bases_tables,
)
from helixclock.stats.multiplicity import holm

N, D = 361, 24


def unit(rng, k, d=D):
    u = rng.normal(size=(k, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def digits_and_classes(n, rng, d=D):
    """Digit circles (units, tens, hundreds, T = 10) and one constant per digit count."""
    feats = [f(2 * np.pi * digit(n, p) / 10) for p in range(3) for f in (np.cos, np.sin)]
    return np.stack(feats, 1) @ unit(rng, 6, d) + 2 * unit(rng, 3, d)[digit_count(n) - 1]


def t100(n, rng, d=D):
    return np.stack([np.cos(2 * np.pi * n / 100), np.sin(2 * np.pi * n / 100)], 1) @ unit(rng, 2, d)


def planted(layers, noise=0.05, seed=0, n_numbers=N, d=D):
    """[n, len(layers), d]: layer l is the sum of its parts (weight, function) plus noise."""
    rng = np.random.default_rng(seed)
    n = np.arange(n_numbers, dtype=np.float64)
    out = []
    for parts in layers:
        x = sum(w * f(n, np.random.default_rng(seed + 1 + i), d) for i, (w, f) in enumerate(parts))
        out.append(x + noise * rng.normal(size=(n_numbers, d)))
    return np.stack(out, 1)


@pytest.fixture(scope="module")
def three():
    """Layer 0: digits and classes; layer 1: the same with a T = 100 circle of weight 1; layer 2:
    the same with weight 0.3."""
    base = [(1.0, digits_and_classes)]
    X = planted([base, base + [(1.0, t100)], base + [(0.3, t100)]])
    return X, nested_tables(X, n_boot=400, placebos=199, realisations=10), number_bases_tables(X, n_boot=400)


def test_a_t100_circle_beside_digits_is_detected_where_the_race_does_not_name_the_helix(three):
    _, t, compared = three
    v = t["nested"][t["nested"]["verdict_test"]].set_index("layer")
    assert list(v["verdict"]) == ["not detected", "detected", "detected"]
    assert v.loc[0, "interval"] in ("covers 0", "below 0") and v.loc[0, "increment"] < 0.002
    assert v.loc[1, "low"] > 0 and v.loc[1, "p_holm"] < 0.05 and v.loc[1, "increment"] > v.loc[2, "increment"]
    # the race: the single helix lacks the class step and the tens circle, and loses at every layer
    assert "helix" not in set(compared["winner"]["winner"])
    circles = t["nested"][t["nested"]["test"] == CIRCLES].set_index("layer")
    assert list(circles["verdict"]) == ["not detected", "detected", "detected"]


def test_the_findings_job_declares_the_stages_verdict_layer_by_layer(three):
    """The registry's finding t100_beyond_digits reads the one-hot rows as they are (increment,
    interval, p) and applies Holm over the layers: its verdict is the stage's at every layer,
    "holds" where the stage says detected, and a layer below 0 is "not detected", not reversed;
    every number of its page is in its table, the calibrated amplitude among them."""
    _, t, _ = three
    nested = t["nested"]
    got = committed_findings(["t100_beyond_digits"], {"number_bases_nested": nested}, several=False)
    c, page = got["contrasts"], got["page"]
    stage = nested[nested["verdict_test"]].set_index("layer")
    assert list(c.index) == [f"t100_beyond_digits[layer={i}]" for i in range(3)]
    words = {"detected": "holds", "not detected": "not detected"}
    assert list(c["verdict"]) == [words[v] for v in stage["verdict"]] == ["not detected", "holds", "holds"]
    assert c["p"].to_numpy() == pytest.approx(stage["p"].to_numpy()) and (c["m"] == 3).all()
    assert c["estimate"].to_numpy() == pytest.approx(stage["increment"].to_numpy())
    assert c["low"].to_numpy() == pytest.approx(stage["low"].to_numpy()) and c["adj_low"].isna().all()
    assert (c["n_pairs"] == 361).all() and (c["clusters"] == "numbers").all()
    assert c["detectable"].to_numpy() == pytest.approx(stage["detectable_fraction"].to_numpy(), nan_ok=True)
    assert assert_every_number_is_in_the_table(page, got["contrasts"].reset_index()) > 20
    assert page.count("**Not detected**") == 1 and "The stage's test: rule number_bases' nested test" in page
    # a planted layer whose increment is significantly below 0: not detected, never "reversed"
    below = nested.copy()
    one = below["verdict_test"] & (below["layer"] == 0)
    below.loc[one, ["increment", "low", "high", "p"]] = [-0.01, -0.015, -0.005, 1e-9]
    again = committed_findings(["t100_beyond_digits"], {"number_bases_nested": below}, several=False)["contrasts"]
    assert again.loc["t100_beyond_digits[layer=0]", "verdict"] == "not detected"


def test_a_layer_below_0_is_no_rejection_and_eases_no_other_layers_step():
    """The p is one-sided (the claim is an increment above 0): a layer whose increment lies
    clearly below 0 has p near 1 and is never rejected (with a two-sided p it was: Gemma-3's
    layer 11 in make real, -0.0028 with p 0.0013, eased every other layer's Holm step)."""
    diff = np.array([-0.01, 0.004, 0.0032])
    se = np.array([0.002, 0.001, 0.001])
    low, high = diff - 2 * se, diff + 2 * se
    p = upper_p(diff, se)
    v = verdict(low, high, p, 0.95)
    assert p[0] > 0.999 and p[1] == pytest.approx(3.17e-5, rel=0.01)
    # layer 1 (p 3.2e-5) passes Holm's first step (0.05 / 3), layer 2 (p 0.00069) the second
    assert list(v["verdict"]) == ["not detected", "detected", "detected"]
    assert v["interval"][0] == "below 0" and v["p_holm"][0] == pytest.approx(p[0])


def test_the_circles_increment_is_the_comparisons_paired_difference(three):
    X, t, _ = three
    pairs = compare_number_bases(X, n_boot=400)["pairs"].set_index(["layer", "basis", "other"])
    circles = t["nested"][t["nested"]["test"] == CIRCLES].set_index("layer")
    for layer in range(3):
        ref = pairs.loc[(layer, "helix + digit circles + classes", "digit circles + classes")]
        assert circles.loc[layer, "increment"] == pytest.approx(ref["diff"], abs=1e-12)
        assert circles.loc[layer, "low"] == pytest.approx(ref["low"], abs=1e-12)
        assert circles.loc[layer, "high"] == pytest.approx(ref["high"], abs=1e-12)


def test_tables_have_their_documented_columns(three):
    _, t, _ = three
    nested, power = t["nested"], t["power"]
    assert list(nested.columns) == [
        "layer", "test", "verdict_test", "n_numbers", "rank_base", "rank_full", "r2_base", "r2_full", "increment", "low",
        "high", "se", "n_placebos", "placebo_rank", "placebo_median", "placebo_max", "p", "p_se", "p_holm",
        "interval", "verdict", "detectable_fraction", "detectable_share", "detectable_unique_share",
        "detectable_power", "null_rate", "n_realisations",
    ]  # fmt: skip
    assert set(nested["test"]) == {VERDICT, CIRCLES} and len(nested) == 6
    assert (nested["n_numbers"] == 361).all()  # the numbers 0..360, each fitted and resampled
    sizes = nested.drop_duplicates("test").set_index("test")
    # one-hot: units 9 + tens 9 + hundreds 3 (digits 1..3 on 0..360) + [2 digits]; n and [3 digits]
    # are sums of one-hot columns.  Circles: units T=10, 5 (cos, sin), T=2 (cos), tens and hundreds
    # circles, n, [2 digits], [3 digits].  T = 100 adds its two columns to each.
    assert sizes.loc[VERDICT, ["rank_base", "rank_full"]].tolist() == [22, 24]
    assert sizes.loc[CIRCLES, ["rank_base", "rank_full"]].tolist() == [12, 14]
    assert nested.loc[~nested["verdict_test"], "detectable_fraction"].isna().all()
    assert list(power.columns) == [
        "layer", "fraction", "amplitude", "variance_share", "unique_share", "n_realisations", "increment",
        "detected_rate", "detected",
    ]  # fmt: skip
    # the null (fraction 0) and the five fractions of each layer, each over 10 realisations
    assert len(power) == 3 * 6 and (power["n_realisations"] == 10).all()
    planted_rows = power[power["fraction"] > 0]
    assert (planted_rows["unique_share"] < planted_rows["variance_share"]).all()
    assert (power.loc[power["fraction"] == 0, ["amplitude", "variance_share", "unique_share"]] == 0).all().all()
    # a T = 100 circle is mostly the tens circle and the trend: its unique part is a small share
    assert (planted_rows["unique_share"] / planted_rows["variance_share"] < 0.2).all()
    assert (nested.loc[nested["verdict_test"], "detectable_power"] == 0.8).all()


def test_periods_dividing_10_add_exactly_nothing_over_a_units_one_hot():
    """Every period dividing 10 is a function of the units digit: over its one-hot the held-out
    increment of cos/sin n T = 2, 5, 10 is 0 to rounding, on any data; T = 100's is not."""
    X = np.random.default_rng(3).normal(size=(200, 2, 5))
    onehot = Basis("onehot", variables=("n",), places=(0,))
    base = Combined("units one-hot", (onehot,))
    units = Combined("+ T=2,5,10", (onehot, Basis("circle", (2, 5, 10), variables=("n",))))
    hundred = Combined("+ T=100", (onehot, Basis("circle", (100,), variables=("n",))))
    got = increments(X, [(base, units), (base, hundred)], folds=5, seed=0, n_boot=50, level=0.95)
    assert np.abs(got[0]["diff"]).max() < 1e-12 and np.abs(got[0]["se"]).max() < 1e-12
    assert np.abs(got[1]["diff"]).min() > 1e-6
    assert upper_p(got[0]["diff"], got[0]["se"]).tolist() == [1.0, 1.0]  # nothing varies: p = 1


def test_lower_noise_detects_a_smaller_planted_amplitude():
    """The calibration plants the helix's own T = 100 part: with less noise a smaller fraction of
    it is detected; a layer without any T = 100 has a helix T = 100 part too (the tens circle's
    shadow), which the test finds only once planted large enough."""
    base = [(1.0, digits_and_classes)]
    quiet = nested_tables(planted([base + [(0.2, t100)]], noise=0.02, seed=4), n_boot=300, placebos=199, realisations=8)
    loud = nested_tables(planted([base + [(0.2, t100)]], noise=0.3, seed=4), n_boot=300, placebos=199, realisations=8)
    fq = quiet["nested"].loc[quiet["nested"]["verdict_test"], "detectable_fraction"].iloc[0]
    fl = loud["nested"].loc[loud["nested"]["verdict_test"], "detectable_fraction"].iloc[0]
    assert fq < fl or (np.isfinite(fq) and np.isnan(fl))
    power = loud["power"]
    assert power["amplitude"].is_monotonic_increasing and power["increment"].is_monotonic_increasing


def test_the_detectable_fraction_rule_on_a_table():
    power = pd.DataFrame(
        {
            "layer": [0] * 4 + [1] * 4 + [2] * 4,
            "fraction": [0.25, 0.5, 1.0, 0.125] * 3,
            "variance_share": [0.01, 0.02, 0.04, 0.005] * 3,
            "unique_share": [0.001, 0.002, 0.004, 0.0005] * 3,
            "detected": [True, False, True, True] + [True, True, True, False] + [False] * 4,
        }
    )
    got = detectable(power).set_index("layer")
    assert got.loc[0, "detectable_fraction"] == 1.0  # 0.5 missed: only the whole from there on
    assert got.loc[1, "detectable_fraction"] == 0.25 and got.loc[1, "detectable_share"] == 0.01
    assert got.loc[1, "detectable_unique_share"] == 0.001
    assert np.isnan(got.loc[2, "detectable_fraction"])


def test_bad_input_is_refused():
    X = planted([[(1.0, digits_and_classes)]], n_numbers=121)
    with pytest.raises(ValueError, match="fractions"):
        nested_tables(X, fractions=(0.5, -1))
    with pytest.raises(ValueError, match="2 digits or more"):
        nested_sets(1)
    with pytest.raises(ValueError, match="folds 1"):
        nested_tables(X, folds=1)
    with pytest.raises(ValueError, match="realisations 0"):
        nested_tables(X, realisations=0)
    base, _ = nested_sets(3)[VERDICT]
    with pytest.raises(ValueError, match="null 'shuffled': one of rotated"):
        calibrate(X, base, helix_t100_coefficients(X), (0.5,), placebo_sigmas(9, 0), 1, 0, 5, 10, 0.95, null="shuffled")


def test_the_figure_shows_the_verdict_when_given_the_nested_table(three, tmp_path):
    """Fig. N1 with today's inputs (r2, winner, peaks, model) and with the nested table before
    the model: its right panel is then the T = 100 increment and its title the verdict."""
    from helpers.figures import save

    from helixclock.stages.structure.figures import figN1_number_bases

    _, t, compared = three
    old = figN1_number_bases(compared["r2"], compared["winner"], compared["peaks"], "toy")
    assert "strongest period" in old.axes[2].get_ylabel()
    new = figN1_number_bases(compared["r2"], compared["winner"], compared["peaks"], t["nested"], "toy")
    assert "T=100" in new.axes[2].get_ylabel() and "detected at layers 1, 2" in new._suptitle.get_text()
    save(new, tmp_path, "figN1_number_bases_nested")


def test_the_onehot_kind_and_its_columns():
    n = np.array([0.0, 7, 42, 305])
    oh = Basis("onehot", variables=("n",), places=(0, 1, 2))
    assert oh.name == "onehot(n)[units,tens,hundreds]" and oh.n_params == 27
    assert oh.columns()[:2] == ["n units=1", "n units=2"] and oh.columns()[-2:] == ["n hundreds=9", "const"]
    A = oh(n)
    assert A.shape == (4, 28) and np.array_equal(A.sum(1), [1, 2, 3, 3])  # nonzero digits, and the constant
    assert A[3, oh.columns().index("n units=5")] == 1 and A[3, oh.columns().index("n hundreds=3")] == 1
    assert A[3, 9:18].sum() == 0  # 305's tens digit is 0: the constant's
    for bad, match in (
        (lambda: Basis("onehot", variables=("n",)), "needs at least one digit place"),
        (lambda: Basis("onehot", (10,), places=(0,)), "takes no periods"),
        (lambda: oh(np.array([-1.0])), "non-negative integers"),
    ):
        with pytest.raises(ValueError, match=match):
            bad()


def interaction(n, rng, d=D):
    """A generic interaction of the tens and the units digit, (t - 4.5)(u - 4.5) / 20: no T = 100."""
    t, u = (n // 10) % 10, n % 10
    return ((t - 4.5) * (u - 4.5) / 20)[:, None] * unit(rng, 1, d)


def test_a_generic_interaction_is_not_called_t100_and_the_circle_is():
    """Issue 54 item 2: planted beside the digits, a generic interaction (t - 4.5)(u - 4.5) / 20 is
    "detected" by the increment over its SE (the wrong arm, the test before) but not against the
    tens-permuted placebo circles, which add about as much; a T = 100 circle is detected against
    them (its rank 0 among 999)."""
    base = [(1.0, digits_and_classes)]
    X = planted([base + [(1.0, interaction)], base + [(0.3, t100)], base + [(0.1, t100)], base], seed=3)
    rows = nested_tables(X, n_boot=200, fractions=(1.0,), realisations=2)["nested"]
    v = rows[rows["verdict_test"]].set_index("layer")
    # the wrong arm, the test before: the increment over its SE, Holm over the layers, "detects" it
    before = verdict(v["low"].to_numpy(), v["high"].to_numpy(), v["p_se"].to_numpy(), 0.95)["verdict"]
    assert list(before[:2]) == ["detected", "detected"] and v.loc[0, "p_se"] < 0.001
    # against the placebos the interaction ranks 42nd of 999 (p 0.043, above Holm's second step,
    # 0.05 / 3): not detected; the circle ranks first (p 0.001)
    assert list(v["verdict"]) == ["not detected", "detected", "not detected", "not detected"]
    assert v.loc[0, "placebo_rank"] == 42 and v.loc[0, "placebo_max"] > v.loc[0, "increment"]
    assert (
        v.loc[1, "placebo_rank"] == 0 and v.loc[1, "p"] == 1 / 1000 and v.loc[1, "placebo_max"] < v.loc[1, "increment"]
    )
    assert (v["n_placebos"] == 999).all()


def test_the_circles_own_increment_is_the_tests_and_the_placebos_are_far_from_it(three):
    """The placebo ranking computes the circle's own increment by Frisch-Waugh-Lovell: the same
    held-out increment as the nested test's."""
    X, t, _ = three
    base, _ = nested_sets(3)[VERDICT]
    sigmas = placebo_sigmas(50, seed=0)
    got = placebo_p(X, base, kfold(X.shape[0], 5, 0), sigmas)
    stage = t["nested"][t["nested"]["verdict_test"]].sort_values("layer")
    assert got["increment_t100"] == pytest.approx(stage["increment"].to_numpy(), abs=1e-10)
    assert got["p"].min() >= 1 / 51 and np.allclose((1 + got["placebo_rank"]) / 51, got["p"])


def test_numbers_are_resampled_by_decade_and_units_digit():
    """The bootstrap weights: a decade's count times its units digit's, so numbers of one decade
    (or one units digit) go in and out together; the total is the count of numbers on average."""
    w = crossed_weights(100, 2000, 0)
    assert w.shape == (2000, 100) and w.mean() == pytest.approx(1.0, abs=0.02)
    grid = w.reshape(2000, 10, 10)  # [resample, decade, units digit]
    # a rank-one table: each cell the product of its decade's and its units digit's counts
    assert np.allclose(grid[:, :, :1] * grid[:, :1, :], grid[:, :1, :1] * grid)


def test_the_page_says_where_the_test_has_no_power_and_where_absence_is_not_shown(three):
    """Issue 54 item 2: a layer "not detected" whose calibration detects not even the whole planted
    part has no power there (the page says it is no evidence of absence); one whose interval lies
    above 0 but that Holm refuses does not show absence; a detected layer says neither."""
    _, t, _ = three
    nested = t["nested"].copy()
    rows = nested["verdict_test"]
    nested.loc[rows & (nested["layer"] == 0), "detectable_fraction"] = np.nan
    nested.loc[rows & (nested["layer"] == 2), ["low", "p"]] = [0.001, 0.2]
    page = committed_findings(["t100_beyond_digits"], {"number_bases_nested": nested}, several=False)["page"]
    line = {
        i: next(x for x in page.splitlines() if x.endswith(f"Row `t100_beyond_digits[layer={i}]`.")) for i in range(3)
    }
    assert "The test has no power here" in line[0] and "absence is not shown" not in line[0]
    assert "absence is not shown" in line[2] and line[2].startswith("- **Not detected**")
    assert "no power" not in line[1] and "absence" not in line[1] and line[1].startswith("- **Holds**")
    # the calibrated amplitude also as the absolute share it is of the data, outside the digits' span
    stage = nested[rows].set_index("layer")
    share = stage.loc[1, "detectable_unique_share"]
    printed = re.search(r", ([0-9.]+) of the data's variance lies outside the test's base\)", line[1])
    assert printed and float(printed.group(1)) == pytest.approx(share, rel=0.05)
    # detected only at the whole: the absolute share printed there too
    nested.loc[rows & (nested["layer"] == 1), ["detectable_fraction", "detectable_unique_share"]] = [1.0, 0.0012]
    page = committed_findings(["t100_beyond_digits"], {"number_bases_nested": nested}, several=False)["page"]
    whole = next(x for x in page.splitlines() if x.endswith("Row `t100_beyond_digits[layer=1]`."))
    assert "it is detected here (0.0012 of the data's variance lies outside the test's base); at smaller" in whole


# -- the calibration (issue 54 item 2): realisations of the test's null, the helix's part planted --


def test_the_calibration_runs_the_stages_own_test(three, monkeypatch):
    """The calibration's Gram-matrix arithmetic is the stage's test: with the data kept and the
    stage's folds and bootstrap (fold seed 0), its increment, placebo p and interval are the
    stage's at every layer, nothing planted or half the helix's part planted; with the rotated
    null they are the stage's test on the data built explicitly: X - Q_c Q_c^T X + Q_c Q_p^T X."""
    X, t, _ = three
    base, _ = nested_sets(3)[VERDICT]
    sigmas = placebo_sigmas(199, seed=0)
    drawn = nested._draws(1, 0, sigmas)[1]
    monkeypatch.setattr(nested, "_draws", lambda r, seed, exclude: (np.zeros(r, np.int64), drawn))
    plant = helix_t100_coefficients(X)
    part = helix_t100_part(X)
    n, fold = X.shape[0], kfold(X.shape[0], 5, 0)

    def stage(data):
        got = increments(data, [nested_sets(3)[VERDICT]], 5, 0, 400, 0.95)[0]
        return got["diff"], placebo_p(data, base, fold, sigmas)["p"], got["low"]

    kept = calibrate(X, base, plant, [0.0, 0.5], sigmas, 1, 0, 5, 400, 0.95, null="kept")
    rows = t["nested"][t["nested"]["verdict_test"]].sort_values("layer")
    assert kept["increment"][0, 0] == pytest.approx(rows["increment"].to_numpy(), abs=1e-10)
    assert kept["p"][0, 0] == pytest.approx(rows["p"].to_numpy()) and kept["p_data"][0] == pytest.approx(rows["p"])
    assert kept["low"][0, 0] == pytest.approx(rows["low"].to_numpy(), abs=1e-10)
    for got, want in zip((kept[k][0, 1] for k in ("increment", "p", "low")), stage(X + 0.5 * part)):
        assert got == pytest.approx(want, abs=1e-10)
    B, _ = design(base, np.arange(n))
    Qc = residual_frame(circle(np.arange(n)), B)
    Qp = residual_frame(tens_permuted_circle(np.arange(n), drawn[0]), np.hstack([B, circle(np.arange(n))]))
    X0 = X - np.einsum("nj,mj,mld->nld", Qc, Qc, X) + np.einsum("nj,mj,mld->nld", Qc, Qp, X)
    rotated = calibrate(X, base, plant, [0.0, 0.5], sigmas, 1, 0, 5, 400, 0.95)
    for i, f in enumerate((0.0, 0.5)):
        for got, want in zip((rotated[k][0, i] for k in ("increment", "p", "low")), stage(X0 + f * part)):
            assert got == pytest.approx(want, abs=1e-10)
    # the replaced plane holds none of the circle's own content: at layer 1 (a circle of weight 1)
    # the stage's increment 0.0078 becomes 0.00007 with nothing planted
    assert rows["increment"].iloc[1] > 0.005 and rotated["increment"][0, 0, 1] < 0.0005


def test_holm_over_many_families_at_once_is_the_findings_holm():
    rng = np.random.default_rng(0)
    p = np.round(rng.uniform(0, 0.06, size=(300, 6)), 3)  # ties included
    got = nested._holm_rejects(p, 0.05)
    assert (got == np.stack([holm(row, 0.05)[0] for row in p])).all() and 0 < got.mean() < 1


FR = (0.0, 0.0625, 0.125, 0.25, 0.5, 1.0)


@pytest.fixture(scope="module")
def arms(three):
    """The calibration of fixture three's layers (no circle, a circle of weight 1, of weight 0.3)
    under its null and two wrong arms, 12 realisations each."""
    X = three[0]
    base, _ = nested_sets(3)[VERDICT]
    plant, sigmas = helix_t100_coefficients(X), placebo_sigmas(199, seed=0)
    return {
        null: calibrate(X, base, plant, FR, sigmas, 12, 0, 5, 200, 0.95, null=null)["detected"].mean(0)
        for null in ("rotated", "kept", "rotated, overlapping")
    }


def test_the_old_calibration_counts_the_datas_own_circle_and_the_rotated_null_does_not(arms):
    """(a) Planted on top of the data (the calibration before), a layer that holds a circle
    (layers 1, 2) "detects" 0.0625 of it, and nothing planted too: the plant is credited with the
    data's own T = 100 content.  With that content replaced by a rotated placebo plane's, neither
    0 nor 0.0625 is detected at any layer.  The placebo plane must be kept apart from the circle:
    residualised on the base alone it holds its principal cosines' share of the data's circle,
    which comes back as "noise" (layer 1 detected with nothing planted)."""
    kept, rotated, overlapping = arms["kept"], arms["rotated"], arms["rotated, overlapping"]
    assert kept[:2].tolist() == [[0, 1, 1], [0, 1, 1]]  # fractions 0 and 0.0625, layers 0, 1, 2
    assert rotated[:2].tolist() == [[0, 0, 0], [0, 0, 0]]
    assert overlapping[0, 1] == 1.0


def test_a_large_true_component_is_detected_and_power_rises_with_amplitude(arms):
    """(b) The whole of the helix's part (at layers 1, 2 a true circle) is detected in every
    realisation; (c) the detection rate rises with the planted fraction at every layer: 0 up to
    0.0625, at layer 1 5 of 12 realisations at 0.125, every one from 0.25 on, so the fraction
    detected with power 0.80 is 0.25 at each layer.  The old calibration's rate is flat at 1 where
    the data hold a circle: it claims full power with nothing planted."""
    rotated, kept = arms["rotated"], arms["kept"]
    assert (rotated[-1] == 1).all()
    assert (np.diff(rotated, axis=0) >= 0).all()
    assert rotated.T.tolist() == [[0, 0, 0, 1, 1, 1], [0, 0, 5 / 12, 1, 1, 1], [0, 0, 0, 1, 1, 1]]
    power = pd.DataFrame(
        {
            "layer": np.repeat(np.arange(3), len(FR)),
            "fraction": np.tile(FR, 3),
            "variance_share": 0.1,
            "unique_share": 0.01,
            "n_realisations": 12,
            "detected_rate": rotated.T.ravel(),
            "detected": rotated.T.ravel() >= 0.8,
        }
    )
    assert detectable(power)["detectable_fraction"].tolist() == [0.25] * 3
    assert (kept[:, 1:] == 1).all()


def test_the_rotated_null_has_the_datas_own_null_size_and_projecting_the_plane_out_does_not():
    """Where the data hold no circle (digits and noise, six layers, each its own noise) the data
    are themselves a realisation of the null: the rotated null's held-out increment with nothing
    planted has their size (mean -0.00161 over 6 layers x 8 realisations, the data's own
    -0.00145 over their folds), while projecting the plane out (nothing put back) biases it low
    (-0.00286): each fold's training part of the emptied plane is anti-correlated with its test
    part, so that calibration would find the test weaker than it is."""
    base_parts = [(1.0, digits_and_classes)]
    X = planted([base_parts] * 6, noise=0.2, seed=10)
    base, _ = nested_sets(3)[VERDICT]
    plant, sigmas = helix_t100_coefficients(X), placebo_sigmas(99, seed=0)
    mean = {
        null: calibrate(X, base, plant, (0.0,), sigmas, 8, 0, 5, 20, 0.95, null=null)["increment"].mean()
        for null in ("kept", "rotated", "projected")
    }
    assert mean["rotated"] == pytest.approx(mean["kept"], rel=0.15)
    assert mean["projected"] < 1.5 * mean["kept"] < 0

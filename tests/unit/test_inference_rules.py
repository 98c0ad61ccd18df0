"""Known-answer tests of the rules of helixclock.stats.inference, one function at a time, on tiny
hand-made tables (docs/findings.md, "Findings"; docs/benchmarks.md, "Mutation testing"): the
resampling weights and the cluster bootstrap against explicit loops, the BCa interval (Efron 1987)
against its formula written out with the jackknife's acceleration mattering, Fieller's interval
against a direct solution of its quadratic, the per-pair SD against the plain SD and a hand value
with clusters, the t test's zero-SE branches, the clusters of a small prompt-sharing graph.  The
coverage tests of tests/unit/test_inference.py check the same functions at their known levels; these
pin each rule exactly, so that a changed operator, bound or argument fails (issue 53, item 7)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helixclock.stats.inference import (
    bca,
    fieller,
    per_pair_sd,
    percentile,
    prompt_clusters,
    ratio_of_means,
    resample,
    resample_weights,
    singletons,
    standard_error,
    t_interval,
    t_test,
)


@pytest.fixture
def no_warnings():
    """The functions silence their own 0/0 and x/0 (NaN is their answer there): any warning fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# -- clusters -------------------------------------------------------------------------------------
def test_clusters_by_clean_a_are_numbered_in_order_of_first_appearance():
    pairs = pd.DataFrame({"clean_a": [5, 3, 5, 1, 3, 9]})
    out = prompt_clusters(pairs, by="clean_a")
    assert out.tolist() == [0, 1, 0, 2, 1, 3] and out.dtype == np.int64


def test_clusters_of_a_prompt_sharing_graph_read_the_operands_asked_for():
    """Pair 0 (1,0)->(2,0) and pair 1 (1,5)->(3,5) share no prompt of (a, b), but share a = 1; pair 2's
    corrupted (2,0) is pair 0's; pair 3 (4,7)->(4,8) shares a = 4 with nothing else."""
    pairs = pd.DataFrame(
        {"clean_a": [1, 1, 6, 4], "corrupted_a": [2, 3, 2, 4], "clean_b": [0, 5, 0, 7], "corrupted_b": [0, 5, 0, 8]}
    )
    by_ab = prompt_clusters(pairs)
    assert by_ab.tolist() == [0, 1, 0, 2] and by_ab.dtype == np.int64
    assert prompt_clusters(pairs, operands=("a",)).tolist() == [0, 0, 0, 1]
    assert prompt_clusters(pairs, "prompt", ("b",)).tolist() == [0, 1, 0, 2]


def test_clusters_of_an_empty_pairs_table_are_empty():
    empty = pd.DataFrame(
        {k: pd.Series([], dtype=np.int64) for k in ("clean_a", "corrupted_a", "clean_b", "corrupted_b")}
    )
    out = prompt_clusters(empty)
    assert out.tolist() == [] and out.dtype == np.int64


def test_clusters_refuse_an_unknown_rule_and_name_the_missing_columns():
    pairs = pd.DataFrame({"clean_a": [1], "clean_b": [0]})
    with pytest.raises(ValueError, match=re.escape("prompt_clusters: by='pair'; allowed: 'prompt', 'clean_a'")):
        prompt_clusters(pairs, by="pair")
    with pytest.raises(
        ValueError, match=re.escape("prompt_clusters: the pairs table lacks column(s) corrupted_a, corrupted_b")
    ):
        prompt_clusters(pairs)
    with pytest.raises(ValueError, match=re.escape("lacks column(s) clean_c, corrupted_a, corrupted_c")):
        prompt_clusters(pairs, operands=("a", "c"))


def test_singletons_number_every_pair():
    out = singletons(4)
    assert out.tolist() == [0, 1, 2, 3] and out.dtype == np.int64
    assert singletons(0).tolist() == []


# -- the resampling -------------------------------------------------------------------------------
def test_resample_weights_count_each_clusters_draws_with_the_seeds_generator():
    C, B, seed = 4, 6, 11
    draws = np.random.default_rng(seed).integers(0, C, size=(B, C))
    expected = np.array([[np.sum(row == c) for c in range(C)] for row in draws], dtype=float)
    w = resample_weights(C, B, seed)
    assert w.dtype == np.float64 and w.shape == (B, C)
    assert np.array_equal(w, expected) and (w.sum(1) == C).all()
    assert np.array_equal(resample_weights(1, 3, 0), np.ones((3, 1)))
    one = resample_weights(3, 1, seed)  # one resample is allowed
    first = np.random.default_rng(seed).integers(0, 3, size=(1, 3))[0]
    assert one.tolist() == [[float(np.sum(first == c)) for c in range(3)]]
    assert one.sum() == 3


@pytest.mark.parametrize("n_clusters, n_boot", [(0, 5), (5, 0), (-1, 5)])
def test_resample_weights_refuse_no_clusters_or_no_resamples(n_clusters, n_boot):
    message = f"resample_weights: {n_clusters} clusters, {n_boot} resamples; both must be 1 or more"
    with pytest.raises(ValueError, match=re.escape(message)):
        resample_weights(n_clusters, n_boot, 0)


def _resample_table():
    """Two quantities on five pairs; pair 2 has neither (its cluster, 3, holds no pair), pair 0
    lacks the second.  Clusters 7 {0, 1}, 1 {3}, 4 {4}: C = 3, numbered 0, 1, 2."""
    values = np.array([[1.0, 2.0, np.nan, 4.0, 8.0], [np.nan, 3.0, np.nan, 5.0, 1.0]])
    return values, np.array([7, 7, 3, 1, 4])


def test_resample_means_each_quantity_over_its_pairs_and_resamples_whole_clusters(no_warnings):
    values, clusters = _resample_table()
    r = resample(values, clusters, n_boot=40, seed=5)
    assert r.n_clusters == 3 and r.n_boot == 40
    assert r.n_pairs.tolist() == [4, 3] and r.n_pairs.dtype == np.int64
    assert r.estimate.tolist() == [3.75, 3.0]
    # leave one cluster out: {3, 4} -> (4+8)/2, (5+1)/2; {0,1,4} -> 11/3, (3+1)/2; {0,1,3} -> 7/3, (3+5)/2
    assert np.allclose(r.jack, [[6.0, 3.0], [11 / 3, 2.0], [7 / 3, 4.0]])
    sums = np.array([[3.0, 4.0, 8.0], [3.0, 5.0, 1.0]])
    counts = np.array([[2.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    w = resample_weights(3, 40, 5)
    expected = np.array([[w[b] @ sums[i] / (w[b] @ counts[i]) for i in range(2)] for b in range(40)])
    assert np.allclose(r.boot, expected)


def test_resample_defaults_every_pair_its_own_cluster_1000_resamples_seed_0():
    x = np.array([[0.5, 1.0, 4.0, -2.0]])
    r = resample(x)
    assert r.n_clusters == 4 and r.n_boot == 1000 and r.jack.shape == (4, 1)
    assert np.array_equal(r.boot, resample(x, singletons(4), 1000, 0).boot)
    assert np.allclose(r.jack[:, 0], [1.0, 2.5 / 3, -0.5 / 3, 5.5 / 3])
    one = resample([1.0, 3.0], None, 4, 2)  # a single row may be a 1-d list
    w = resample_weights(2, 4, 2)
    assert np.allclose(one.boot[:, 0], (w @ [1.0, 3.0]) / 2)


def test_resample_a_quantity_absent_from_a_resample_is_nan(no_warnings):
    """Row 1 has its only pair in cluster 1: resamples that miss that cluster have no mean for it."""
    r = resample(np.array([[1.0, 2.0, 3.0], [np.nan, 5.0, np.nan]]), None, 200, 3)
    w = resample_weights(3, 200, 3)
    missed = w[:, 1] == 0
    assert missed.any() and np.isnan(r.boot[missed, 1]).all() and (r.boot[~missed, 1] == 5.0).all()
    assert np.isnan(r.jack[1, 1]) and r.jack[0, 1] == 5.0


def test_resample_of_no_pairs_is_nan_without_a_warning(no_warnings):
    r = resample(np.full((2, 3), np.nan), n_boot=7)
    assert r.n_clusters == 0 and r.boot.shape == (7, 2) and np.isnan(r.boot).all()
    assert r.jack.shape == (0, 2) and np.isnan(r.estimate).all() and r.n_pairs.tolist() == [0, 0]


def test_resample_refuses_cluster_labels_of_another_length():
    with pytest.raises(ValueError, match=re.escape("resample: 2 cluster labels for 3 pairs")):
        resample(np.ones((1, 3)), np.array([0, 1]))


# -- standard error, t test, t interval -----------------------------------------------------------
def test_standard_error_is_the_bootstraps_sd_times_the_small_sample_factor():
    boot = np.array([[1.0, 2.0], [3.0, 2.0], [5.0, np.nan], [7.0, 4.0]])
    se = standard_error(boot, 4)
    assert se == pytest.approx([np.sqrt(20 / 3 * 4 / 3), np.sqrt(4 / 3 * 4 / 3)])
    assert standard_error(boot, 2) == pytest.approx(se * np.sqrt(2 / 1) / np.sqrt(4 / 3))
    assert np.isnan(standard_error(boot, 1)).all() and standard_error(boot, 1).shape == (2,)
    assert np.isnan(standard_error(boot[:1], 4)).all()
    assert standard_error([[1.0], [3.0]], 2) == pytest.approx([np.sqrt(2) * np.sqrt(2)])


def test_t_test_p_values_and_its_zero_and_nan_standard_errors(no_warnings):
    p = t_test([1.0, -1.5, 0.0, 2.0, 0.0, np.nan, 1.0], [0.5, 0.5, 0.0, 0.0, 1.0, 1.0, np.nan], 4)
    assert p[0] == pytest.approx(2 * stats.t.sf(2.0, 4)) and p[1] == pytest.approx(2 * stats.t.sf(3.0, 4))
    assert p[2] == 1.0 and p[3] == 0.0 and p[4] == 1.0
    assert np.isnan(p[5]) and np.isnan(p[6])
    assert np.isnan(t_test([np.nan, 1.0], [0.0, np.nan], 4)).all()  # NaN wins over the zero-SE rule
    assert t_test(1.0, 0.5, np.array([2, 30])) == pytest.approx(2 * stats.t.sf(2.0, [2, 30]))


def test_t_interval_half_width_is_t_quantile_times_se():
    low, high = t_interval(np.array([1.0, -2.0]), np.array([0.5, 1.0]), 4, np.array([0.05, 0.2]))
    half = np.array([stats.t.ppf(0.975, 4) * 0.5, stats.t.ppf(0.9, 4)])
    assert low == pytest.approx([1.0, -2.0] - half) and high == pytest.approx([1.0, -2.0] + half)
    low, high = t_interval(3.0, 2.0, 9)
    assert (low, high) == pytest.approx((3 - 2 * stats.t.ppf(0.975, 9), 3 + 2 * stats.t.ppf(0.975, 9)))


# -- BCa and percentile ---------------------------------------------------------------------------
def _bca_by_hand(theta, boot, jack, level=0.95, a=None):
    """Efron's BCa written out on one statistic's non-NaN resamples and jackknife values (``a``: the
    acceleration, when given)."""
    boot, jack = boot[~np.isnan(boot)], jack[~np.isnan(jack)]
    share = (np.sum(boot < theta) + 0.5 * np.sum(boot == theta)) / len(boot)
    share = min(max(share, 0.5 / len(boot)), 1 - 0.5 / len(boot))
    z0 = stats.norm.ppf(share)
    d = jack.mean() - jack
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5) if a is None else a
    out = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        z = z0 + stats.norm.ppf(q)
        out.append(np.quantile(boot, stats.norm.cdf(z0 + z / (1 - a * z))))
    return out, z0, a


BOOT = np.array([0.2, 0.5, 0.7, 0.9, 1.0, 1.1, 1.4, 1.8, 2.5, 3.5])  # 4 below 1.0, 1 tie: share 0.45
JACK = np.array([0.8, 0.9, 1.0, 1.05, 1.6])  # skewed: acceleration about -0.0855


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_bca_is_efrons_interval_with_the_jackknifes_acceleration(level):
    (lo, hi), z0, a = _bca_by_hand(1.0, BOOT, JACK, level)
    assert z0 == pytest.approx(stats.norm.ppf(0.45)) and a == pytest.approx(-0.0855, abs=5e-4)
    low, high = bca(np.array([1.0]), BOOT[:, None], JACK[:, None], level)
    assert low == pytest.approx([lo]) and high == pytest.approx([hi])
    # the acceleration matters: a jackknife without skew (a = 0) moves both bounds
    (lo0, hi0), _, _ = _bca_by_hand(1.0, BOOT, np.array([0.8, 0.9, 1.0, 1.1, 1.2]), level)
    assert abs(lo - lo0) > 0.01 and abs(hi - hi0) > 0.01
    if level == 0.95:
        low_default, high_default = bca(np.array([1.0]), BOOT[:, None], JACK[:, None])
        assert (low_default, high_default) == (low, high)


def test_bca_columns_leave_their_nan_resamples_out_and_clip_the_bias_share(no_warnings):
    """Column 0 with NaN resamples and jackknife values; column 1 entirely below its estimate (the
    share clipped to 1 - 0.5/B); column 2 entirely above (0.5/B); column 3 symmetric jackknife."""
    boot = np.column_stack(
        [np.r_[BOOT, np.nan, np.nan], np.r_[BOOT, 0.0, 0.1], np.r_[BOOT, 4.0, 5.0] + 1.0, np.r_[BOOT, 1.0, 1.0]]
    )
    jack = np.column_stack([np.r_[JACK, np.nan], np.r_[JACK, 1.0], np.r_[JACK, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    theta = np.array([1.0, 10.0, 0.5, 1.0])
    low, high = bca(theta, boot, jack)
    for j in range(4):
        (lo, hi), z0, a = _bca_by_hand(theta[j], boot[:, j], jack[:, j])
        assert low[j] == pytest.approx(lo) and high[j] == pytest.approx(hi), j
    assert _bca_by_hand(10.0, boot[:, 1], jack[:, 1])[1] == pytest.approx(stats.norm.ppf(1 - 0.5 / 12))
    assert _bca_by_hand(0.5, boot[:, 2], jack[:, 2])[1] == pytest.approx(stats.norm.ppf(0.5 / 12))


def test_bca_of_a_flat_or_empty_statistic(no_warnings):
    """No spread: [estimate, estimate] (even away from the resamples, and with NaN among them); no
    resample at all: NaN; a jackknife without spread: no acceleration."""
    boot = np.array([[2.0, np.nan, 1.0], [2.0, np.nan, 2.0], [np.nan, np.nan, 4.0], [2.0, np.nan, 8.0]])
    jack = np.array([[1.0, 1.0, 3.0], [1.0, 1.0, 3.0], [1.0, 1.0, 3.0]])
    low, high = bca(np.array([5.0, 1.0, 3.0]), boot, jack)
    assert low[0] == 5.0 and high[0] == 5.0
    assert np.isnan(low[1]) and np.isnan(high[1])
    (lo, hi), _, _ = _bca_by_hand(3.0, boot[:, 2], jack[:, 2], a=0.0)
    assert low[2] == pytest.approx(lo) and high[2] == pytest.approx(hi)


def test_bca_upper_quantile_at_one_is_the_largest_valid_resample(no_warnings):
    """Every resample below the estimate (z0 = Phi^-1(1 - 0.5/10)) and a jackknife outlier (a =
    0.154): the upper level rounds to 1, and the bound is the largest of the 10 valid resamples (not
    the NaN sorted after them)."""
    boot = np.r_[np.linspace(0.0, 1.0, 10), np.nan, np.nan][:, None]
    jack = np.r_[np.zeros(19), -5.0][:, None]
    (lo, hi), z0, a = _bca_by_hand(2.0, boot[:, 0], jack[:, 0])
    assert a == pytest.approx(0.1539, abs=1e-4) and hi == 1.0
    low, high = bca(np.array([2.0]), boot, jack)
    assert high[0] == 1.0 and low[0] == pytest.approx(lo)


def test_percentile_interval_leaves_nan_out():
    boot = np.column_stack([BOOT, np.r_[BOOT[:8], np.nan, np.nan]])
    low, high = percentile(boot)
    assert low == pytest.approx([np.quantile(BOOT, 0.025), np.quantile(BOOT[:8], 0.025)])
    assert high == pytest.approx([np.quantile(BOOT, 0.975), np.quantile(BOOT[:8], 0.975)])
    low, high = percentile(boot, 0.5)
    assert low[0] == pytest.approx(np.quantile(BOOT, 0.25)) and high[0] == pytest.approx(np.quantile(BOOT, 0.75))


# -- ratios ---------------------------------------------------------------------------------------
def _fieller_roots(num, den, var_num, var_den, cov, df, level=0.95):
    """The r with (num - r den)^2 = t^2 (var_num - 2 r cov + r^2 var_den), by numpy's polynomial roots."""
    t2 = stats.t.ppf((1 + level) / 2, df) ** 2
    coefficients = [den**2 - t2 * var_den, -2 * (num * den - t2 * cov), num**2 - t2 * var_num]
    return np.sort(np.roots(coefficients).real)


def test_fieller_bounds_are_the_roots_of_its_quadratic():
    num, den, var_num, var_den, cov = (
        np.array([2.0, -0.6]),
        np.array([1.0, 0.4]),
        [0.09, 0.02],
        [0.04, 0.01],
        [0.01, -0.005],
    )
    ratio = fieller(num, den, var_num, var_den, cov, 5)
    assert ratio.estimate == pytest.approx([2.0, -1.5]) and ratio.defined.tolist() == [True, True]
    for j in range(2):
        lo, hi = _fieller_roots(num[j], den[j], var_num[j], var_den[j], cov[j], 5)
        assert ratio.low[j] == pytest.approx(lo) and ratio.high[j] == pytest.approx(hi)
        t2 = stats.t.ppf(0.975, 5) ** 2
        for r in (lo, hi):
            assert (num[j] - r * den[j]) ** 2 == pytest.approx(t2 * (var_num[j] - 2 * r * cov[j] + r**2 * var_den[j]))
    at_80 = fieller(2.0, 1.0, 0.09, 0.04, 0.01, 5, level=0.8)
    assert (at_80.low, at_80.high) == pytest.approx(tuple(_fieller_roots(2.0, 1.0, 0.09, 0.04, 0.01, 5, 0.8)))
    assert at_80.high < ratio.high[0]


def test_fieller_is_not_defined_where_the_denominator_interval_reaches_zero(no_warnings):
    """den 0.3 with var 0.04: t^2 var_den > den^2; den 0 with no variance: a = 0 exactly."""
    ratio = fieller([1.0, 1.0, 1.0], [0.3, 0.0, 1.0], [0.01, 0.01, 0.0], [0.04, 0.0, 0.0], [0.0, 0.0, 0.0], 5)
    assert ratio.defined.tolist() == [False, False, True]
    assert np.isnan(ratio.low[:2]).all() and np.isnan(ratio.high[:2]).all()
    assert ratio.estimate[0] == pytest.approx(1 / 0.3) and ratio.estimate[1] == np.inf
    assert ratio.low[2] == ratio.high[2] == 1.0  # no variance: the interval is the point


def test_fieller_clips_a_negative_discriminant_to_the_vertex():
    """Inconsistent (co)variances (here a negative var_num) can make b^2 - ac < 0: the bounds then
    meet at b / a instead of being NaN."""
    ratio = fieller(1.0, 1.0, -0.05, 0.0, 0.0, 5)  # c = 1 + 0.05 t^2 > b^2 / a = 1
    assert ratio.defined and ratio.low == pytest.approx(1.0) and ratio.high == pytest.approx(1.0)


def test_ratio_of_means_reads_the_joint_resamples_variances():
    values = np.array([[2.0, 3.0, 1.5, 4.0, 2.5, 3.5], [1.0, 1.2, 0.8, 1.5, 1.1, 0.9], [0.5, -1.0, 2.0, 0.0, 1.0, 0.3]])
    r = resample(values, None, 300, 4)
    C = r.n_clusters
    cov = np.cov(r.boot.T, ddof=1) * C / (C - 1)
    ratio = ratio_of_means(r)
    assert ratio.estimate == pytest.approx(values[0].mean() / values[1].mean())
    lo, hi = _fieller_roots(r.estimate[0], r.estimate[1], cov[0, 0], cov[1, 1], cov[0, 1], C - 1)
    assert ratio.low == pytest.approx(lo) and ratio.high == pytest.approx(hi) and ratio.defined
    several = ratio_of_means(r, np.array([0, 2]), np.array([1, 1]), level=0.9)
    for j, (i, k) in enumerate([(0, 1), (2, 1)]):
        lo, hi = _fieller_roots(r.estimate[i], r.estimate[k], cov[i, i], cov[k, k], cov[i, k], C - 1, 0.9)
        assert several.low[j] == pytest.approx(lo) and several.high[j] == pytest.approx(hi)
    distinct = ratio_of_means(r, np.array([0, 0]), np.array([1, 2]))  # row 2's mean is near 0: not defined
    assert distinct.defined.tolist() == [True, False]
    lo, hi = _fieller_roots(r.estimate[0], r.estimate[1], cov[0, 0], cov[1, 1], cov[0, 1], C - 1)
    assert distinct.low[0] == pytest.approx(lo) and distinct.high[0] == pytest.approx(hi)
    swapped = ratio_of_means(r, 1, 0)
    lo, hi = _fieller_roots(r.estimate[1], r.estimate[0], cov[1, 1], cov[0, 0], cov[0, 1], C - 1)
    assert swapped.low == pytest.approx(lo) and swapped.high == pytest.approx(hi)


def test_ratio_of_means_leaves_nan_resamples_out_of_the_variances():
    """Row 0 has only pairs 4 and 5: resamples that draw neither have no mean for it (NaN)."""
    values = np.array([[np.nan, np.nan, np.nan, np.nan, 2.0, 4.0], [1.0, 1.5, 2.5, 2.0, 1.8, 1.2]])
    r = resample(values, None, 400, 1)
    assert np.isnan(r.boot[:, 0]).any()
    C = r.n_clusters
    a = r.boot[:, 0] - np.nanmean(r.boot[:, 0])
    b = r.boot[:, 1] - r.boot[:, 1].mean()
    scale = C / (C - 1) / (r.n_boot - 1)
    var_a, var_b, cov = np.nansum(a * a) * scale, np.sum(b * b) * scale, np.nansum(a * b) * scale
    ratio = ratio_of_means(r)
    assert ratio.defined and ratio.estimate == pytest.approx(1.8)
    lo, hi = _fieller_roots(3.0, 10.0 / 6, var_a, var_b, cov, C - 1)
    assert ratio.low == pytest.approx(lo) and ratio.high == pytest.approx(hi)


def test_ratio_of_means_of_two_clusters_is_defined_on_one_degree_of_freedom():
    r = resample(np.array([[2.0, 2.2], [1.0, 1.01]]), None, 200, 0)
    ratio = ratio_of_means(r)
    C = r.n_clusters
    assert C == 2 and ratio.defined
    cov = np.cov(r.boot.T, ddof=1) * 2
    lo, hi = _fieller_roots(r.estimate[0], r.estimate[1], cov[0, 0], cov[1, 1], cov[0, 1], 1)
    assert ratio.low == pytest.approx(lo) and ratio.high == pytest.approx(hi)


def test_ratio_of_means_of_one_cluster_is_not_defined():
    r = resample(np.array([[2.0, 4.0], [1.0, 3.0]]), np.array([0, 0]), 20, 0)
    ratio = ratio_of_means(r)
    assert ratio.estimate == pytest.approx(1.5) and np.isnan(ratio.low) and np.isnan(ratio.high)
    assert ratio.defined.dtype == bool and not ratio.defined
    several = ratio_of_means(r, np.array([0, 1]), np.array([1, 0]))
    assert several.estimate == pytest.approx([1.5, 2 / 3]) and several.low.shape == (2,)
    assert several.defined.tolist() == [False, False]


# -- per-pair SD ----------------------------------------------------------------------------------
def test_per_pair_sd_is_the_plain_sd_when_every_pair_is_its_own_cluster():
    x = np.array([1.0, 2.0, 4.0, 7.0, np.nan, 10.0])
    kept = x[~np.isnan(x)]
    assert per_pair_sd(x) == pytest.approx(np.std(kept, ddof=1))
    assert per_pair_sd(x, np.arange(6)) == pytest.approx(np.std(kept, ddof=1))
    assert isinstance(per_pair_sd(x), float)


def test_per_pair_sd_with_clusters_by_hand():
    """Pairs 1, 2 | 4, 7 | (NaN) | 10: the NaN pair's cluster is dropped, C = 3, n = 5, mean 4.8;
    cluster residual sums -6.6, 1.4, 5.2: sqrt(3/2 * 72.56 / 5)."""
    x = np.array([1.0, 2.0, 4.0, 7.0, np.nan, 10.0])
    assert per_pair_sd(x, np.array([0, 0, 1, 1, 2, 3])) == pytest.approx(np.sqrt(1.5 * 72.56 / 5))
    assert per_pair_sd(x, np.array([8, 8, 5, 5, 2, 0])) == pytest.approx(np.sqrt(1.5 * 72.56 / 5))


def test_per_pair_sd_needs_two_pairs_and_two_clusters():
    assert np.isnan(per_pair_sd([np.nan, 3.0, np.nan]))
    assert np.isnan(per_pair_sd([1.0, 3.0, 5.0], np.array([4, 4, 4])))
    assert np.isnan(per_pair_sd([1.0, 3.0, np.nan], np.array([4, 4, 2])))
    assert per_pair_sd([1.0, 3.0]) == pytest.approx(np.sqrt(2.0))


# -- None given for a value ------------------------------------------------------------------------
def test_none_in_a_list_reads_as_a_missing_value(no_warnings):
    """Every function reads its inputs as float64, so a Python None is NaN (a pair the quantity lacks):
    the answer equals the one with NaN in its place."""
    nan = np.nan
    same = np.testing.assert_array_equal
    assert resample([[1.0, None, 3.0]]).estimate.tolist() == [2.0]
    assert per_pair_sd([1.0, None, 3.0]) == pytest.approx(np.sqrt(2.0))
    same(t_test([1.0, None], [0.5, 0.5], 4), t_test([1.0, nan], [0.5, 0.5], 4))
    same(t_test([1.0, 1.0], [0.5, None], 4), t_test([1.0, 1.0], [0.5, nan], 4))
    same(t_interval([1.0, 2.0], [0.5, None], 4), t_interval([1.0, 2.0], [0.5, nan], 4))
    same(t_interval([1.0, 2.0], [0.5, 0.5], 4, [0.05, None]), t_interval([1.0, 2.0], [0.5, 0.5], 4, [0.05, nan]))
    same(standard_error([[1.0], [None], [3.0]], 3), standard_error([[1.0], [nan], [3.0]], 3))
    boot, jack = [[0.5], [None], [1.5], [1.0]], [[0.9], [None], [1.2]]
    nboot, njack = [[0.5], [nan], [1.5], [1.0]], [[0.9], [nan], [1.2]]
    same(bca([1.0], boot, njack), bca([1.0], nboot, njack))
    same(bca([1.0], nboot, jack), bca([1.0], nboot, njack))
    same(bca([None], nboot, njack), bca([nan], nboot, njack))
    for args in ([None, 1.0, 0.1, 0.1, 0.0], [1.0, None, 0.1, 0.1, 0.0], [1.0, 1.0, None, 0.1, 0.0]):
        got = fieller(*([a] for a in args), 5)
        want = fieller(*([nan if a is None else a] for a in args), 5)
        for g, w in zip(
            (got.estimate, got.low, got.high, got.defined), (want.estimate, want.low, want.high, want.defined)
        ):
            same(g, w)

"""Known-answer tests of the findings' statistics (helixclock.stats.inference, .multiplicity, .crossfit):
synthetic per-pair tables with a planted truth, no model.  Pairs are drawn through the real
``sampling.pair_indices`` from a synthetic accuracy table; each test replicates the planted noise
R = 2,000 times, vectorised, with fixed seeds, and compares a rate with its known value within
two Monte Carlo standard errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.tables import pairs_table, sampled_correct
from scipy import stats

from helixclock.prompts.sampling import pair_indices
from helixclock.stages.findings.contrasts import Tables
from helixclock.stats.crossfit import cross_fit, fold_bound, folds
from helixclock.stats.inference import (
    bca,
    percentile,
    prompt_clusters,
    ratio_of_means,
    resample,
    singletons,
    standard_error,
    t_interval,
    t_test,
)
from helixclock.stats.multiplicity import ALPHA, benjamini_hochberg, holm, holm_adjusted, mde, verdict

R = 2000  # replicates of every rate below
B = 1000  # resamples (config key helix.bootstrap's default)
N = 50  # pairs (the real models' clock stages)
LEVEL = 0.95


def mc_se(rate: float, reps: int = R) -> float:
    """The Monte Carlo standard error of a rate estimated from ``reps`` replicates."""
    return float(np.sqrt(rate * (1 - rate) / reps))


def t_summary(values, clusters=None, seed=0, level=LEVEL):
    """Estimate, standard error, degrees of freedom and the t interval of each row's mean."""
    r = resample(values, clusters, B, seed)
    se = standard_error(r.boot, r.n_clusters)
    low, high = t_interval(r.estimate, se, r.n_clusters - 1, 1 - level)
    return r, se, low, high


# -- coverage -------------------------------------------------------------------------------------
def test_intervals_cover_a_normal_mean_at_their_known_finite_sample_levels():
    """n = 50 normal pairs: the bootstrap-SE t interval (C/(C-1) and t_{C-1}) covers at its exact
    0.95; BCa, for a symmetric mean, at the level of xbar -/+ z sd_ML / sqrt(n) (its known
    finite-sample coverage, 0.942 at n = 50, below 0.95), and so does the percentile interval."""
    x = np.random.default_rng(1).normal(0.3, 1.0, size=(R, N))
    r, se, low, high = t_summary(x)
    covered_t = ((low <= 0.3) & (0.3 <= high)).mean()
    assert abs(covered_t - 0.95) <= 2 * mc_se(0.95), covered_t
    known_bca = 1 - 2 * stats.t.sf(stats.norm.ppf(0.975) * np.sqrt((N - 1) / N), N - 1)
    lo, hi = bca(r.estimate, r.boot, r.jack)
    covered_bca = ((lo <= 0.3) & (0.3 <= hi)).mean()
    assert abs(covered_bca - known_bca) <= 2 * mc_se(known_bca), (covered_bca, known_bca)
    lo_p, hi_p = percentile(r.boot)
    assert abs(((lo_p <= 0.3) & (0.3 <= hi_p)).mean() - known_bca) <= 2 * mc_se(known_bca)


def test_the_t_interval_covers_a_skewed_mean_as_well_as_bca():
    """Exponential pairs (skewness 2), n = 50: both fall short of 0.95 (about 0.92), and BCa does
    not cover more than the t interval on the same replicates (against the paired Monte Carlo SE
    of the difference): why the findings use the t interval."""
    x = np.random.default_rng(2).exponential(1.0, size=(R, N))
    r, _, low, high = t_summary(x)
    lo, hi = bca(r.estimate, r.boot, r.jack)
    gain = ((lo <= 1) & (1 <= hi)).astype(float) - ((low <= 1) & (1 <= high)).astype(float)
    assert gain.mean() <= 2 * gain.std() / np.sqrt(R), gain.mean()
    assert ((low <= 1) & (1 <= high)).mean() < 0.95 - 2 * mc_se(0.95)


# -- clusters -------------------------------------------------------------------------------------
def test_prompt_clusters_are_the_components_of_the_prompt_sharing_graph():
    pairs = pd.DataFrame(
        {
            "clean_a": [1, 2, 3, 4, 5],
            "corrupted_a": [9, 1, 8, 8, 7],
            "clean_b": [0, 0, 0, 0, 1],
            "corrupted_b": [0, 0, 0, 0, 1],
        }
    )
    # pair 1's corrupted (1, 0) is pair 0's clean; pairs 2, 3 share corrupted (8, 0); pair 4 alone
    assert prompt_clusters(pairs).tolist() == [0, 0, 1, 1, 2]
    assert prompt_clusters(pairs, by="clean_a").tolist() == [0, 1, 2, 3, 4]


R_DRAWS = 1000  # pair draws of the design tests (pair_indices is a Python loop: 1,000 draws take about 2 s)


def _design(per_b: int, n_b: int, seed: int = 3):
    """A deterministic 'model' over the correct prompts of ``sampled_correct(per_b, n_b)``: a fixed
    value f(x, c) of every (clean x, corrupted c) (an effect of each prompt on either side and a
    fixed interaction), each clean x's possible partners (same b, another answer: what
    ``pair_indices`` draws from with vary a) and the design's true mean, by enumeration: the mean
    over clean prompts x (those with a partner) of the mean of f(x, c) over x's partners c."""
    correct = sampled_correct(per_b=per_b, n_b=n_b)
    n = len(correct)
    rng = np.random.default_rng(seed)
    f = rng.normal(0, 1.0, n)[:, None] + rng.normal(0, 1.0, n)[None, :] + rng.normal(0, 0.3, (n, n))
    b, answer = correct["b"].to_numpy(), correct["answer"].to_numpy()
    partners = (b[:, None] == b[None, :]) & (answer[:, None] != answer[None, :])
    has = partners.any(1)
    truth = float(np.mean([f[x, partners[x]].mean() for x in np.flatnonzero(has)]))
    return correct, f, truth, int(has.sum())


@pytest.mark.parametrize("per_b, n_b", [(4, 30), (4, 15)])
def test_pairs_drawn_as_the_pipeline_draws_them_are_its_unit_and_cover_the_designs_mean(per_b, n_b):
    """The resampling unit is the pair (docs/findings.md, "Findings"): pairs drawn by the real
    ``pair_indices`` (clean prompts without replacement, each partner drawn given its clean one
    from 4 prompts of its b, so partners repeat and prompts are shared) over a fixed f(x, c).  The
    findings' clusters of such a table (``Tables.clusters``, read from its prompts table) are the
    pairs themselves, although prompts are shared; the t interval on the pair bootstrap covers the
    design's mean (enumerated) at 0.95 or more (conservative: no finite-population correction,
    measured 0.977 with 120 clean prompts and 0.998 with 60, for 50 pairs).  The finite-population
    correction sqrt(1 - n / N) on that SE, the plausible wrong method, under-covers (0.92 and
    0.76): the partners' variance is not finite-population."""
    correct, f, truth, n_clean = _design(per_b, n_b)
    x = np.empty((R_DRAWS, N))
    shared = []
    for seed in range(R_DRAWS):
        d = pairs_table(correct, N, seed)
        clean, corrupted = pair_indices(correct, N, seed)
        x[seed] = f[clean, corrupted]
        if seed < 20:  # the findings' clusters of a raw table of these pairs, from its prompts table
            frame = pd.DataFrame(np.zeros((1, N)), columns=[f"pair_{i}" for i in range(N)])
            prompts = d.assign(pair=[f"pair_{i}" for i in range(N)], draw="measure")
            clusters, unit = Tables({"t": frame}, {"t": prompts}).clusters("t")
            assert unit == "pairs" and clusters.tolist() == list(range(N))
            shared.append(prompt_clusters(d).max() + 1 < N)
    assert np.mean(shared) > 0.9  # prompts are shared in (almost) every draw
    r, se, low, high = t_summary(x)
    covered = (low <= truth) & (truth <= high)
    assert covered.mean() >= 0.95 - 2 * mc_se(0.95, R_DRAWS), covered.mean()
    fpc = se * np.sqrt(1 - N / n_clean)
    lo, hi = t_interval(r.estimate, fpc, r.n_clusters - 1)
    covered_fpc = ((lo <= truth) & (truth <= hi)).mean()
    assert covered_fpc < 0.95 - 2 * mc_se(0.95, R_DRAWS), covered_fpc  # measured: 0.92 (120), 0.76 (60)


# -- multiplicity ---------------------------------------------------------------------------------
def test_holm_keeps_the_familywise_rate_under_a_planted_null_and_its_intervals_agree():
    """A family of m = 5 paired differences (two rows of correlated pair effects, true difference 0)
    on n = 50 pairs: Holm's familywise error rate is at most alpha + 2 MC SE, while testing each at
    alpha is not (the positive control); each adjusted interval excludes 0 exactly where Holm
    rejects."""
    m = 5
    rng = np.random.default_rng(4)
    shared = rng.normal(0, 2.0, size=(R, m, N))  # what both rows of a pair share
    x = shared + rng.normal(0, 1.0, size=(R, m, N))
    y = shared + rng.normal(0, 1.0, size=(R, m, N))
    d = (x - y).reshape(R * m, N)
    r, se, _, _ = t_summary(d)
    p = t_test(r.estimate, se, r.n_clusters - 1).reshape(R, m)
    results = [holm(row) for row in p]
    reject = np.array([rej for rej, _ in results])
    level = np.array([lev for _, lev in results])
    fwer = reject.any(1).mean()
    assert fwer <= ALPHA + 2 * mc_se(ALPHA), fwer
    assert (p <= ALPHA).any(1).mean() > ALPHA + 2 * mc_se(ALPHA)  # unadjusted: fails
    low, high = t_interval(r.estimate, se, r.n_clusters - 1, level.ravel())
    excludes = ((low > 0) | (high < 0)).reshape(R, m)
    assert np.array_equal(excludes, reject)


def test_holm_steps_and_benjamini_hochberg_levels():
    p = np.array([0.001, 0.04, 0.013, 0.2, np.nan])
    reject, level = holm(p, 0.05)
    assert reject.tolist() == [True, False, True, False, False]
    assert np.allclose(level[:4], [0.05 / 4, 0.05 / 2, 0.05 / 3, 0.05 / 2]) and np.isnan(level[4])
    reject, level = benjamini_hochberg(np.array([0.001, 0.008, 0.039, 0.04, 0.9]), 0.05)
    assert reject.tolist() == [True, True, True, True, False]  # step-up: 0.04 <= 4 * 0.05 / 5 takes 0.039 along
    assert np.allclose(level, 0.04)
    assert verdict(-0.3, True, "negative") == "holds"
    assert verdict(0.3, True, "negative") == "reversed"
    assert verdict(-0.3, False, "negative") == "not distinguished"


def test_holm_adjusted_p_values_are_the_step_down_procedures():
    p = np.array([0.01, 0.04, 0.03, 0.005, np.nan, 0.2])
    adj = holm_adjusted(p)
    assert np.allclose(adj[[3, 0, 2, 1, 5]], [0.025, 0.04, 0.09, 0.09, 0.2]) and np.isnan(adj[4])
    rng = np.random.default_rng(0)
    for _ in range(200):
        q = rng.uniform(0, 0.05, size=rng.integers(1, 12))
        for alpha in (0.01, 0.05):
            rejected, m = set(), len(q)
            for k, i in enumerate(np.argsort(q)):  # reject while p_(k) <= alpha / (m - k)
                if q[i] > alpha / (m - k):
                    break
                rejected.add(i)
            assert set(np.flatnonzero(holm_adjusted(q) <= alpha)) == rejected
            assert set(np.flatnonzero(holm(q, alpha)[0])) == rejected  # the decisions the findings use


@pytest.mark.parametrize("df", [2, 6, 24])
def test_minimal_detectable_effect_has_80_percent_power_on_its_degrees_of_freedom(df):
    """Normal pairs of known SD 1 and mean the printed MDE (n = df + 1 pairs, alpha' = 0.0125:
    Holm's first step for m = 4): the findings' t test (pair bootstrap SE, t on df) rejects in the
    expected direction in 0.80 +/- 0.03 of 4,000 replicates.  The normal approximation's MDE, the
    old formula (z_{1 - alpha'/2} + z_0.8) / sqrt(n), has far less power on few degrees of
    freedom (measured 0.14 at df 2, 0.52 at df 6, 0.74 at df 24): the wrong method, rejected."""
    alpha_prime, n, reps = ALPHA / 4, df + 1, 4000
    z_effect = (stats.norm.ppf(1 - alpha_prime / 2) + stats.norm.ppf(0.8)) / np.sqrt(n)
    effect = float(mde(1.0, n, alpha_prime, df=df))
    assert effect > z_effect
    power = {}
    for name, mean in (("t", effect), ("z", z_effect)):
        x = np.random.default_rng(5 + df).normal(mean, 1.0, size=(reps, n))
        r, se, _, _ = t_summary(x)
        power[name] = ((t_test(r.estimate, se, df) <= alpha_prime) & (r.estimate > 0)).mean()
    assert abs(power["t"] - 0.8) <= 0.03, power
    assert power["z"] < 0.8 - 0.03, power


def test_minimal_detectable_effect_scales_with_the_sd_and_is_undefined_without_df():
    """sd / sqrt(n) scales it; NaN sd, df or df below 1 give NaN; vectorised over rows."""
    one = float(mde(1.0, 1, 0.0125, df=6))
    assert float(mde(3.0, 9, 0.0125, df=6)) == pytest.approx(one)
    out = mde(np.array([1.0, np.nan, 1.0, 1.0]), 1, 0.0125, df=np.array([6, 6, np.nan, 0]))
    assert out[0] == pytest.approx(one) and np.isnan(out[1:]).all()


# -- ratios ---------------------------------------------------------------------------------------
def test_fieller_covers_a_ratio_and_a_denominator_that_straddles_zero_is_not_defined():
    """num = 2.5 den in expectation (den mean 1, num = 2 + 0.5 den + noise): Fieller's interval
    covers 2.5 at 0.95 within 2 MC SE; with the denominator's mean 0 the ratio is "not defined"
    in most replicates, and always exactly where the denominator's t interval includes 0."""
    rng = np.random.default_rng(6)
    for den_mean in (1.0, 0.0):
        den = rng.normal(den_mean, 1.0, (R, N))
        num = 2 * den_mean + 0.5 * den + rng.normal(0, 1.0, (R, N))
        r = resample(np.concatenate([num, den]), None, B, 0)
        ratio = ratio_of_means(r, np.arange(R), R + np.arange(R))
        se = standard_error(r.boot[:, R:], r.n_clusters)
        lo, hi = t_interval(r.estimate[R:], se, r.n_clusters - 1)
        assert np.array_equal(ratio.defined, (lo > 0) | (hi < 0))
        if den_mean == 1.0:
            covered = (ratio.low <= 2.5) & (2.5 <= ratio.high)
            assert ratio.defined.all() and abs(covered.mean() - 0.95) <= 2 * mc_se(0.95), covered.mean()
        else:
            assert (~ratio.defined).mean() >= 0.9 and np.isnan(ratio.low[~ratio.defined]).all()


# -- cross-fitting --------------------------------------------------------------------------------
def _planted_candidates(seed: int, means: np.ndarray):
    """K candidates (layers) measured on the same pairs drawn by pair_indices: per-pair noise of
    unit SD around ``means`` [K], R replicates; the pairs' clusters and folds."""
    correct = sampled_correct(per_b=20, n_b=40, seed=seed)
    d = pairs_table(correct, N, seed)
    clusters = prompt_clusters(d)
    fold = folds(clusters, seed)
    noise = np.random.default_rng(seed).normal(0, 1.0, size=(R, len(means), N))
    return means[None, :, None] + noise, clusters, fold


def _selected_best(values, clusters, fold, cross_fitted: bool):
    """The best candidate's estimate and t interval, cross-fitted (the choice resampled with the
    pairs) or chosen on all pairs and measured on them (the choice fixed, the chosen row's pairs
    resampled: what the README's hand-picked blocks did)."""
    chosen = cross_fit(values, values, fold if cross_fitted else None)
    if cross_fitted:
        cf = fold_bound(chosen.values, fold, clusters, B, 0)
        low, high = t_interval(cf.estimate, cf.se, cf.df)
        return cf.estimate, low, high
    r, _, low, high = t_summary(chosen.values, clusters)
    return r.estimate, low, high


@pytest.mark.parametrize("cross_fitted", [True, False])
def test_cross_fitting_removes_the_winners_curse_and_same_pairs_selection_fails(cross_fitted):
    """10 candidates of no effect: the best, chosen and measured on the same pairs, is biased up
    (about +0.22) and excluded from 0 far more often than alpha (the positive control); chosen
    on one fold and measured on the other, its mean bias is about 0 and its exclusion rate at
    most alpha + 2 MC SE."""
    values, clusters, fold = _planted_candidates(7, np.zeros(10))
    estimate, low, high = _selected_best(values, clusters, fold, cross_fitted)
    bias = estimate.mean()
    excluded = ((low > 0) | (high < 0)).mean()
    bias_se = estimate.std() / np.sqrt(R)
    ok = abs(bias) <= 2 * bias_se and excluded <= ALPHA + 2 * mc_se(ALPHA)
    assert ok == cross_fitted, (bias, excluded)
    if not cross_fitted:
        assert bias > 0.15 and excluded > 0.15


def test_the_fixed_values_bootstrap_of_a_cross_fitted_mean_is_too_narrow():
    """Why :func:`fold_bound`: the cross-fitted per-pair values bootstrapped as if fixed reject
    more often than alpha + 2 MC SE under the same planted null (the two folds' terms are
    correlated through their choices)."""
    values, clusters, fold = _planted_candidates(7, np.zeros(10))
    chosen = cross_fit(values, values, fold)
    _, _, low, high = t_summary(chosen.values, clusters)
    assert ((low > 0) | (high < 0)).mean() > ALPHA + 2 * mc_se(ALPHA)


def test_cross_fitted_estimate_is_unbiased_for_the_chosen_candidates_effect():
    """Candidates with different planted effects: the cross-fitted estimate's mean equals the mean
    planted effect of the candidates the two folds chose (each weighted by the pairs it is
    measured on), within 2 MC SE."""
    means = np.linspace(0, 0.4, 8)
    values, _, fold = _planted_candidates(8, means)
    chosen = cross_fit(values, values, fold)
    truth = (means[chosen.choice[:, 0]] * (fold == 1).sum() + means[chosen.choice[:, 1]] * (fold == 0).sum()) / N
    err = chosen.values.mean(1) - truth
    assert abs(err.mean()) <= 2 * err.std() / np.sqrt(R), err.mean()
    assert (chosen.choice == 7).mean() > 0.3  # the best is found often


def test_folds_keep_clusters_whole_and_balance_pairs():
    clusters = np.array([0, 0, 0, 1, 2, 2, 3, 4, 5, 5])
    f = folds(clusters, 0)
    for c in np.unique(clusters):
        assert len(set(f[clusters == c])) == 1
    assert abs((f == 0).sum() - (f == 1).sum()) <= 3
    assert singletons(3).tolist() == [0, 1, 2]

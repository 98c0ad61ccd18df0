"""Known answers for the choice rules of stats/crossfit.py (README, "Findings"; docs/findings.md;
issue 53, item 1): the folds (whole clusters, balanced, seeded), the choice on a selection draw
(max, min, max_abs; a candidate without pairs never chosen), cross-fitting (each pair measured at
the other fold's choice) and the fold bound's columns, each against the numbers computed here.
Written so that `make mutation` (docs/benchmarks.md, "Mutation testing") has a test that fails on
each wrong variant of these rules."""

from __future__ import annotations

import numpy as np
import pytest

from helixclock.stats.crossfit import FOLDS, choose, cross_fit, fold_bound, folds
from helixclock.stats.inference import resample, standard_error


def test_folds_keep_clusters_whole_balance_pairs_and_follow_the_seed():
    assert FOLDS == 2
    # 10 singletons: 5 and 5 whatever the seed; the first cluster in the seeded order goes to fold 0
    for seed in range(5):
        f = folds(np.arange(10), seed)
        assert f.dtype == np.int64 and f.shape == (10,)
        assert np.bincount(f).tolist() == [5, 5]
        first = np.random.default_rng(seed).permutation(10)[0]
        assert f[first] == 0
    # clusters of 4, 3, 2 and 1 pairs (labels not sorted, strings): each whole, sizes within 4
    clusters = np.array(["d", "a", "a", "b", "a", "c", "d", "b", "d", "d"])
    for seed in range(6):
        f = folds(clusters, seed)
        for c in np.unique(clusters):
            assert len(set(f[clusters == c].tolist())) == 1
        assert abs(int((f == 0).sum()) - int((f == 1).sum())) <= 4
        assert set(f.tolist()) == {0, 1}
    # the greedy rule replayed: each cluster, in the seed's order, to the fold with fewer pairs so far
    # (fold 0 on a tie); another seed gives another split
    order = np.random.default_rng(11).permutation(4)
    f = folds(clusters, 11)
    labels = np.array(["a", "b", "c", "d"])
    filled, want = [0, 0], {}
    for i in order:
        k = int(filled[1] < filled[0])
        want[labels[i]] = k
        filled[k] += int((clusters == labels[i]).sum())
    assert f.tolist() == [want[c] for c in clusters]
    assert np.array_equal(folds(clusters, 11), f) and not all(
        np.array_equal(folds(clusters, s), f) for s in range(12, 20)
    )


def test_choose_by_rule_and_a_candidate_without_pairs_is_never_chosen():
    # 3 candidates, 4 pairs: means 1.0, -2.0, 0.5
    c = np.array([[1.0, 1.0, 1.0, 1.0], [-2.0, -1.0, -3.0, -2.0], [0.5, 0.5, 0.5, 0.5]])
    assert int(choose(c)) == 0 and int(choose(c, "max")) == 0
    assert int(choose(c, "min")) == 1
    assert int(choose(c, "max_abs")) == 1
    # NaN pairs are left out of a mean; an all-NaN candidate is never chosen, by any rule
    c2 = np.array([[np.nan] * 4, [0.1, np.nan, 0.1, 0.1], [-0.2, -0.2, np.nan, -0.2]])
    assert int(choose(c2, "max")) == 1 and int(choose(c2, "min")) == 2 and int(choose(c2, "max_abs")) == 2
    # batched: one choice per leading index
    assert choose(np.stack([c, -c]), "max").tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"^choose: rule 'best'; allowed: max, min, max_abs$"):
        choose(c, "best")


def test_cross_fit_measures_each_pair_at_the_other_folds_choice():
    # 2 candidates, 6 pairs; fold 0 = pairs 0-2 favours candidate 1, fold 1 = pairs 3-5 candidate 0
    criterion = np.array([[0, 0, 0, 5, 5, 5], [1, 1, 1, 0, 0, 0]], float)
    values = np.array([[10, 11, 12, 13, 14, 15], [20, 21, 22, 23, 24, 25]], float)
    fold = np.array([0, 0, 0, 1, 1, 1])
    got = cross_fit(values, criterion, fold)
    assert got.choice.tolist() == [1, 0]
    assert got.values.tolist() == [10, 11, 12, 23, 24, 25]  # fold 0 at fold 1's choice, and back
    same = cross_fit(values, criterion, None, "max")
    # on all pairs: means 2.5 and 0.5: candidate 0 for every pair
    assert same.choice.tolist() == [0, 0] and same.values.tolist() == [10, 11, 12, 13, 14, 15]
    assert cross_fit(values, criterion, fold, "min").values.tolist() == [20, 21, 22, 13, 14, 15]
    # integer values come back as float pairs' values (room for NaN), the ints' numbers
    ints = cross_fit(values.astype(np.int64), criterion, fold)
    assert ints.values.dtype == np.float64 and ints.values.tolist() == got.values.tolist()
    # batched, on the same pairs: one choice (twice) per leading index, on the last axis
    batch = cross_fit(np.stack([values, values]), np.stack([criterion, -criterion]), None)
    assert batch.choice.shape == (2, 2) and batch.choice.tolist() == [[0, 0], [1, 1]]
    assert batch.values.tolist() == [[10, 11, 12, 13, 14, 15], [20, 21, 22, 23, 24, 25]]
    with pytest.raises(ValueError, match=r"^cross_fit: folds must be 0 or 1, one per pair \(6\)$"):
        cross_fit(values, criterion, np.array([0, 0, 0, 1, 1, 2]))
    with pytest.raises(ValueError, match="one per pair"):
        cross_fit(values, criterion, np.array([0, 1, 0, 1, 0]))


def test_fold_bound_is_the_weighted_sum_of_the_folds_standard_errors():
    """Two rows over 12 pairs in 6 clusters (folds of 3 clusters each, 6 and 6 pairs); the second
    row lacks two pairs of fold 1: its weights are 6/10 and 4/10.  Every column by hand."""
    rng = np.random.default_rng(7)
    values = rng.normal(0.3, 1.0, (2, 12))
    values[1, [6, 7]] = np.nan
    clusters = np.repeat(np.arange(6), 2)
    fold = (clusters >= 3).astype(int)
    got = fold_bound(values, fold, clusters, 400, 5)
    assert got.n_pairs.tolist() == [12, 10] and got.n_pairs.dtype == np.int64
    assert got.n_clusters == 6
    assert got.df == 2  # the smaller fold's 3 clusters - 1
    np.testing.assert_allclose(got.estimate, np.nanmean(values, axis=1), rtol=1e-12)
    want = np.zeros(2)
    for f in (0, 1):
        idx = np.flatnonzero(fold == f)
        r = resample(values[:, idx], clusters[idx], 400, 5 + f)
        want += r.n_pairs / np.array([12, 10]) * standard_error(r.boot, r.n_clusters)
    np.testing.assert_allclose(got.se, want, rtol=1e-12)
    # a leading shape is kept; df is at least 1 where a fold has a single cluster
    got3 = fold_bound(values.reshape(2, 1, 12), fold, clusters, 50, 0)
    assert got3.estimate.shape == (2, 1) and got3.se.shape == (2, 1) and got3.n_pairs.shape == (2, 1)
    one = fold_bound(values[:1], np.r_[np.zeros(2, int), np.ones(10, int)], clusters, 50, 0)
    assert one.df == 1


@pytest.mark.filterwarnings("ignore:Degrees of freedom <= 0:RuntimeWarning")
def test_fold_bound_of_a_row_without_pairs_in_one_fold_or_any():
    """A row present only in fold 0 gets fold 0's SE at weight 1 (fold 1 adds nothing); a row
    with no pairs has a NaN estimate, zero pairs, and the clusters count those with a pair."""
    values = np.array([[1.0, 2.0, 4.0, np.nan, np.nan, np.nan], [np.nan] * 6])
    fold = np.array([0, 0, 0, 1, 1, 1])
    clusters = np.arange(6)
    got = fold_bound(values, fold, clusters, 300, 2)
    r = resample(values[:1, :3], clusters[:3], 300, 2)
    assert got.estimate[0] == pytest.approx(7 / 3)
    assert got.se[0] == pytest.approx(float(standard_error(r.boot, r.n_clusters)[0]), rel=1e-12)
    assert np.isnan(got.estimate[1]) and got.se[1] == 0.0
    assert got.n_pairs.tolist() == [3, 0]
    assert got.n_clusters == 3


@pytest.mark.filterwarnings("ignore:Degrees of freedom <= 0:RuntimeWarning")
def test_fold_bound_is_not_defined_where_a_fold_has_a_single_pair():
    """A fold with one pair has no standard error (one cluster): the bound, which needs both
    folds' SEs, is NaN, not fold 0's alone."""
    values = np.array([[1.0, 2.0, 4.0, 3.0, np.nan, np.nan]])
    fold = np.array([0, 0, 0, 1, 1, 1])
    got = fold_bound(values, fold, np.arange(6), 200, 0)
    assert got.estimate[0] == pytest.approx(2.5)
    assert np.isnan(got.se[0]) and got.n_pairs.tolist() == [4]

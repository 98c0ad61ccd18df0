"""Choices made after the run from the raw tables (Table 1's best layer, Fig. 5's best block):
on a job's selection draw (:func:`choose`) or, where the job recorded none, cross-fitted
(:func:`cross_fit`, :func:`fold_bound`) (README, "Findings").

Selecting the largest of K noisy means and reporting it on the same pairs over-states it (the
winner's curse: with K = 10 candidates of no effect and 50 pairs of unit SD the chosen mean is
about +0.22, and its t-test rejects far more often than alpha).  The exact remedy is a choice on
pairs that do not measure: :func:`choose` on the job's selection draw, then the ordinary test of
a mean on the measuring pairs (tests/unit/test_selection_draw.py: coverage 0.95 in four
scenarios).  Without a draw, the pairs are split into two folds (each pair its own unit, the
design's: tests/unit/test_inference.py); the object is chosen on each fold and measured on the
other, and each pair keeps the value of the object chosen without it.  The mean of those
per-pair values has no selection bias; its standard error is :func:`fold_bound`'s, conservative
(coverage about 0.99).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .inference import resample, standard_error

FOLDS = 2


def folds(clusters: np.ndarray, seed: int) -> np.ndarray:
    """[n] fold (0 or 1) of each pair: whole clusters, in a seeded order, each to the fold with
    fewer pairs so far (the folds' pair counts differ by at most the largest cluster)."""
    clusters = np.asarray(clusters)
    labels, sizes = np.unique(clusters, return_counts=True)
    order = np.random.default_rng(seed).permutation(len(labels))
    fold_of = {}
    filled = [0, 0]
    for i in order:
        f = int(filled[1] < filled[0])
        fold_of[labels[i]] = f
        filled[f] += int(sizes[i])
    return np.array([fold_of[c] for c in clusters], dtype=np.int64)


@dataclass(frozen=True)
class Selected:
    """Per-pair values of the chosen object (``values`` [..., n]) and the choices: ``choice``
    [..., 2], the candidate chosen on fold 0 (measured on fold 1's pairs) and on fold 1
    (measured on fold 0's); with ``same_pairs`` both are the choice on all pairs."""

    values: np.ndarray
    choice: np.ndarray


def _choose(criterion: np.ndarray, mask: np.ndarray, rule: str) -> np.ndarray:
    """Index [...] of the candidate whose criterion, averaged over the pairs in ``mask``, is
    largest (``max``), smallest (``min``) or largest in size (``max_abs``)."""
    x = np.where(mask, criterion, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a candidate without pairs: NaN, never chosen
        means = np.nanmean(x, axis=-1)  # [..., K]
    if rule == "max_abs":
        means = np.abs(means)
    elif rule == "min":
        means = -means
    elif rule != "max":
        raise ValueError(f"choose: rule {rule!r}; allowed: max, min, max_abs")
    return np.argmax(np.where(np.isnan(means), -np.inf, means), axis=-1)


def choose(criterion, rule: str = "max") -> np.ndarray:
    """Index [...] of the candidate (axis -2) whose ``criterion`` [..., K, n], averaged over its
    pairs (axis -1), is largest (``max``), smallest (``min``) or largest in size (``max_abs``):
    the choice on a job's selection draw, measured then on pairs that did not choose it."""
    criterion = np.asarray(criterion, np.float64)
    return _choose(criterion, np.ones(criterion.shape[-1], bool), rule)


def cross_fit(values, criterion, fold: np.ndarray | None, rule: str = "max") -> Selected:
    """For candidates k (axis -2) measured per pair (axis -1): ``values`` [..., K, n] the
    quantity reported and ``criterion`` [..., K, n] what the choice maximises (often the same).
    With ``fold`` [n] (:func:`folds`) each pair gets the value of the candidate chosen on the
    other fold; with ``fold`` None the candidate chosen on all pairs (the same pairs: what the
    paper does, kept under ``compat: authors``)."""
    values = np.asarray(values, np.float64)
    criterion = np.asarray(criterion, np.float64)
    n = values.shape[-1]
    if fold is None:
        k = _choose(criterion, np.ones(n, bool), rule)
        picked = np.take_along_axis(values, k[..., None, None], axis=-2)[..., 0, :]
        return Selected(picked, np.stack([k, k], axis=-1))
    fold = _check_folds(fold, n)
    choice = np.stack([_choose(criterion, fold == f, rule) for f in range(FOLDS)], axis=-1)  # [..., 2]
    # a pair of fold f is measured at the choice of the other fold
    other = choice[..., 1 - fold]  # [..., n]
    picked = np.take_along_axis(values, other[..., None, :], axis=-2)[..., 0, :]
    return Selected(picked, choice)


def _check_folds(fold, n: int) -> np.ndarray:
    fold = np.asarray(fold)
    if fold.shape != (n,) or set(np.unique(fold).tolist()) - {0, 1}:
        raise ValueError(f"cross_fit: folds must be 0 or 1, one per pair ({n})")
    return fold


@dataclass(frozen=True)
class FoldBound:
    """The cross-fitted mean (``estimate`` [...]) with a standard error that holds whatever the
    choices (``se``: the bound below), its degrees of freedom, the pairs with a value and the
    clusters (over both folds)."""

    estimate: np.ndarray
    se: np.ndarray
    df: int
    n_pairs: np.ndarray
    n_clusters: int


def fold_bound(values, fold, clusters, n_boot: int, seed: int) -> FoldBound:
    """Inference for the cross-fitted mean of ``values`` [..., n] (each pair's value at the
    candidate chosen on the other fold, :func:`cross_fit`): the pooled mean is w0 m0 + w1 m1, the
    folds' means weighted by their pairs, and each fold's mean, given the other fold's choice, is
    an ordinary mean with its own (cluster-bootstrap) standard error se_f.  The two are
    correlated (each fold's choice follows its own noise, which the other fold's choice then
    reads), so the standard error is bounded by w0 se0 + w1 se1 (the two perfectly correlated):
    valid whatever the candidates, conservative where the choice is stable.  The bootstrap of the
    fixed per-pair values instead misses the correlation: with 10 candidates of no effect and 50
    pairs its test rejects about 0.09 at alpha 0.05 (tests/unit/test_inference.py).  Resampling the
    choices as well (the whole procedure on each resample) over-states the spread where
    candidates tie, and lost about half of this bound's power where one candidate of ten had an
    effect, in trials while building it.  Degrees of freedom: the smaller fold's clusters - 1."""

    values = np.asarray(values, np.float64)
    fold = _check_folds(fold, values.shape[-1])
    clusters = np.asarray(clusters)
    flat = values.reshape(-1, values.shape[-1])
    present = ~np.isnan(flat)
    total = np.zeros(len(flat))
    count = present.sum(1).astype(np.float64)
    bound = np.zeros(len(flat))
    sizes = []
    for f in range(FOLDS):
        idx = np.flatnonzero(fold == f)
        r = resample(flat[:, idx], clusters[idx], n_boot, seed + f)
        se = standard_error(r.boot, r.n_clusters)
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = r.n_pairs / count
        total += np.nan_to_num(r.estimate) * r.n_pairs
        bound += np.where(r.n_pairs > 0, weight * se, 0.0)
        sizes.append(r.n_clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = total / count
    shape = values.shape[:-1]
    return FoldBound(
        estimate.reshape(shape),
        bound.reshape(shape),
        max(min(sizes) - 1, 1),
        count.astype(np.int64).reshape(shape),
        int(len(np.unique(clusters[present.any(0)]))),
    )

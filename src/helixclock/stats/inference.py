"""Inference on per-pair tables that matches the design of the patching experiments.

The model jobs' raw tables (:mod:`helixclock.stats.statistics`) hold one value per clean/corrupted
pair.  The findings of the project (docs/findings.md, "Findings") are means of such values, paired
differences of two of them, and ratios of two means; this module gives them intervals, tests
and standard errors that respect how the pairs were drawn:

* **Paired, aligned.** A difference is the mean of per-pair differences over the pairs both
  quantities have (a term of an answer's hundreds digit exists only for some pairs); every
  quantity of a finding is resampled with the same indices.
* **The resampling unit: the pair.** Clean prompts are drawn without replacement and each
  corrupted partner independently given its clean prompt (from a small group: same b, same token
  shape), over a deterministic model: the pairs are exchangeable, and a prompt that two pairs
  share by chance makes them no more alike than any two pairs (their covariance is at most 0).
  The findings resample pairs (every pair its own cluster, :func:`singletons`), with no
  finite-population correction: conservative for the design's mean, the mean over clean prompts
  of the mean over each one's possible partners (tests/unit/test_inference.py, pairs drawn by
  the real ``pair_indices``).  :func:`prompt_clusters` also gives clusters of pairs for a design
  whose sampled unit is larger than the pair: ``by="clean_a"`` where a itself is the sampled unit
  (pairs of one clean a resampled together), ``by="prompt"`` the components of the
  prompt-sharing graph (too few and too wide for this design: kept for the comparison).
* **Tests and intervals.** :func:`t_test` and :func:`t_interval` read the bootstrap's standard
  error, corrected for the number of clusters C (``sqrt(C / (C - 1))``, the small-sample factor
  of cluster-robust standard errors) and referred to Student's t with C - 1 degrees of freedom:
  for a normal mean with each pair its own cluster this is the one-sample t-test and t interval,
  exact at any n but for the resampling noise of the SE, and the interval excludes 0 exactly
  where the test rejects.  The percentile interval under-covers at n = 50 (0.942 for a normal
  mean, the level of xbar -/+ z sd_ML / sqrt(n)); :func:`bca` (bias-corrected, accelerated by
  the leave-one-cluster-out jackknife) covers at that same 0.942 for a normal mean and no
  better than the t interval on the skewed distributions tried (exponential, chi-squared,
  lognormal at n = 50: both 0.92-0.93), so the findings use the t interval; both are tested
  (tests/unit/test_inference.py).
* **Ratios.** :func:`fieller` (DE/TE, helix/TE): the interval is defined only where the
  denominator's own interval excludes 0, else "not defined".

Every function is vectorised over statistics (columns) and seeded: the resampling weights depend
only on (number of clusters, resamples, seed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

LEVEL = 0.95


# -- which pairs share a prompt ------------------------------------------------------------------
def prompt_clusters(pairs: pd.DataFrame, by: str = "prompt", operands: tuple[str, ...] = ("a", "b")) -> np.ndarray:
    """The cluster of each pair (one row of ``pairs`` per pair, columns ``clean_a``,
    ``corrupted_a``, ``clean_b``, ``corrupted_b``: the helix stage's ``raw/pairs.csv``), numbered
    0..C-1 in order of first appearance.

    ``by="prompt"``: the connected components of the prompt-sharing graph (a prompt is its
    ``operands``; two pairs are joined when any prompt of one is a prompt of the other).
    ``by="clean_a"``: the pairs of one clean a form a cluster (where a itself is the sampled
    unit, as a held-out a is).  The findings resample pairs one by one (the module's docstring
    says why)."""
    if by == "clean_a":
        return _first_appearance(pairs["clean_a"].to_numpy())
    if by != "prompt":
        raise ValueError(f"prompt_clusters: by={by!r}; allowed: 'prompt', 'clean_a'")
    missing = [f"{side}_{k}" for side in ("clean", "corrupted") for k in operands if f"{side}_{k}" not in pairs]
    if missing:
        raise ValueError(f"prompt_clusters: the pairs table lacks column(s) {', '.join(missing)}")
    clean = list(zip(*(pairs[f"clean_{k}"].tolist() for k in operands)))
    corrupted = list(zip(*(pairs[f"corrupted_{k}"].tolist() for k in operands)))
    ids = {p: i for i, p in enumerate(dict.fromkeys(clean + corrupted))}
    u = np.array([ids[p] for p in clean], dtype=np.int64)
    v = np.array([ids[p] for p in corrupted], dtype=np.int64)
    graph = coo_matrix((np.ones(len(u)), (u, v)), shape=(len(ids), len(ids)))
    _, component = connected_components(graph, directed=False)
    return _first_appearance(component[u])


def _first_appearance(labels: np.ndarray) -> np.ndarray:
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()]


def singletons(n: int) -> np.ndarray:
    """Each of ``n`` pairs its own cluster (a table whose prompts are not read)."""
    return np.arange(n, dtype=np.int64)


# -- the resampling -------------------------------------------------------------------------------
def resample_weights(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """[n_boot, C] how often each cluster is drawn in each resample (C draws with replacement):
    the same for every statistic resampled with the same (C, n_boot, seed)."""
    if n_clusters < 1 or n_boot < 1:
        raise ValueError(f"resample_weights: {n_clusters} clusters, {n_boot} resamples; both must be 1 or more")
    draws = np.random.default_rng(seed).integers(0, n_clusters, size=(n_boot, n_clusters))
    flat = (draws + n_clusters * np.arange(n_boot)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n_clusters).reshape(n_boot, n_clusters).astype(np.float64)


@dataclass(frozen=True)
class Resampled:
    """Means of q per-pair quantities (rows of ``values``), each over the pairs it has:
    ``estimate`` [q], the resamples' ``boot`` [B, q], the leave-one-cluster-out ``jack`` [C, q],
    pairs present per quantity ``n_pairs`` [q], and the number of clusters (those holding a
    pair of any quantity)."""

    estimate: np.ndarray
    boot: np.ndarray
    jack: np.ndarray
    n_pairs: np.ndarray
    n_clusters: int

    @property
    def n_boot(self) -> int:
        return self.boot.shape[0]


def resample(values, clusters: np.ndarray | None = None, n_boot: int = 1000, seed: int = 0) -> Resampled:
    """Cluster-bootstrap the means of ``values`` [q, n] (NaN: a pair the quantity lacks; each
    mean is over the pairs present), clusters [n] (default: every pair its own), resampling
    whole clusters with the same weights for every row (:func:`resample_weights`)."""
    x = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = x.shape[1]
    clusters = singletons(n) if clusters is None else np.asarray(clusters)
    if clusters.shape != (n,):
        raise ValueError(f"resample: {len(clusters)} cluster labels for {n} pairs")
    present = ~np.isnan(x)
    used = present.any(0)
    labels = _first_appearance(clusters[used]) if used.any() else np.zeros(0, np.int64)
    x, present = x[:, used], present[:, used]
    C = int(labels.max()) + 1 if len(labels) else 0
    member = np.zeros((x.shape[1], C))
    member[np.arange(x.shape[1]), labels] = 1.0
    sums = np.where(present, x, 0.0) @ member  # [q, C]
    counts = present.astype(np.float64) @ member
    total, count = sums.sum(1), counts.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = total / count
        if C == 0:
            return Resampled(estimate, np.full((n_boot, len(x)), np.nan), np.zeros((0, len(x))), count, 0)
        w = resample_weights(C, n_boot, seed)
        boot = (w @ sums.T) / (w @ counts.T)
        jack = (total[None] - sums.T) / (count[None] - counts.T)
    return Resampled(estimate, boot, jack, count.astype(np.int64), C)


# -- intervals and tests --------------------------------------------------------------------------
def standard_error(boot: np.ndarray, n_clusters: int) -> np.ndarray:
    """The bootstrap standard error of each column of ``boot`` [B, k], times sqrt(C / (C - 1))
    (NaN below two clusters)."""
    boot = np.asarray(boot, dtype=np.float64)
    if n_clusters < 2 or boot.shape[0] < 2:
        return np.full(boot.shape[1:], np.nan)
    return np.nanstd(boot, axis=0, ddof=1) * np.sqrt(n_clusters / (n_clusters - 1))


def t_test(estimate, se, df) -> np.ndarray:
    """Two-sided p-values of estimate = 0 from t = estimate / se on ``df`` degrees of freedom;
    a zero standard error gives p = 1 for a zero estimate and 0 otherwise."""
    estimate, se = np.asarray(estimate, np.float64), np.asarray(se, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(estimate) / se
    p = 2 * stats.t.sf(t, df)
    p = np.where(se == 0, np.where(estimate == 0, 1.0, 0.0), p)
    return np.where(np.isnan(se) | np.isnan(estimate), np.nan, p)


def t_interval(estimate, se, df, alpha=1 - LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """estimate -/+ t_{df, 1 - alpha/2} se (``alpha`` may differ per statistic): excludes 0
    exactly where :func:`t_test`'s p is at most ``alpha``."""
    half = stats.t.ppf(1 - np.asarray(alpha, np.float64) / 2, df) * np.asarray(se, np.float64)
    return np.asarray(estimate) - half, np.asarray(estimate) + half


def bca(estimate, boot, jack, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """BCa interval of each statistic: ``estimate`` [k], its resamples ``boot`` [B, k] and its
    leave-one-cluster-out values ``jack`` [C, k] (Efron 1987).  The bias correction z0 counts
    the resamples below the estimate (ties half); the acceleration is the jackknife's skewness.
    A statistic without spread gives [estimate, estimate]; NaN resamples are left out."""
    theta = np.asarray(estimate, np.float64)
    boot, jack = np.asarray(boot, np.float64), np.asarray(jack, np.float64)
    valid = ~np.isnan(boot)
    n = valid.sum(0)
    below = ((boot < theta) & valid).sum(0) + 0.5 * ((boot == theta) & valid).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.clip(below / n, 0.5 / np.maximum(n, 1), 1 - 0.5 / np.maximum(n, 1))
        z0 = stats.norm.ppf(share)
        d = np.nanmean(jack, 0) - jack
        a = np.nansum(d**3, 0) / (6 * np.nansum(d**2, 0) ** 1.5)
    a = np.where(np.isfinite(a), a, 0.0)
    bounds = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        z = z0 + stats.norm.ppf(q)
        bounds.append(_column_quantiles(boot, stats.norm.cdf(z0 + z / (1 - a * z))))
    low, high = bounds
    flat = np.nanmax(boot, 0, initial=-np.inf) == np.nanmin(boot, 0, initial=np.inf)
    return np.where(flat, theta, low), np.where(flat, theta, high)


def _column_quantiles(boot: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The q[j] quantile of column j of ``boot`` (NaNs left out; linear interpolation)."""
    srt = np.sort(boot, axis=0)  # NaN last
    n = (~np.isnan(boot)).sum(0)
    pos = np.nan_to_num(q, nan=0.5) * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    cols = np.arange(boot.shape[1])
    frac = pos - lo
    out = srt[lo, cols] * (1 - frac) + srt[hi, cols] * frac
    return np.where((n > 0) & ~np.isnan(q), out, np.nan)


def percentile(boot, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval (what :func:`helixclock.stats.statistics.bootstrap_ci` gives; here for
    the known-answer tests' comparison)."""
    return tuple(np.nanquantile(boot, q, axis=0) for q in ((1 - level) / 2, (1 + level) / 2))


@dataclass(frozen=True)
class Ratio:
    """A ratio of two means: its estimate, the Fieller interval, and whether it is defined (the
    denominator's interval at the same level excludes 0)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    defined: np.ndarray


def fieller(num, den, var_num, var_den, cov, df, level: float = LEVEL) -> Ratio:
    """Fieller's interval for num / den from the variances and covariance of the two means
    (here from their joint resamples): the r with (num - r den)^2 <= t^2 (var_num - 2 r cov +
    r^2 var_den), t = t_{df, (1 + level) / 2}.  It is a bounded interval exactly where den^2 >
    t^2 var_den, i.e. where the denominator's t interval excludes 0; elsewhere "not defined"
    (``defined`` False, NaN bounds)."""
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    var_num, var_den, cov = (np.asarray(v, np.float64) for v in (var_num, var_den, cov))
    t2 = stats.t.ppf((1 + level) / 2, df) ** 2
    a = den**2 - t2 * var_den
    b = num * den - t2 * cov
    c = num**2 - t2 * var_num
    disc = np.maximum(b**2 - a * c, 0.0)
    defined = a > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(disc)
        low = np.where(defined, (b - root) / a, np.nan)
        high = np.where(defined, (b + root) / a, np.nan)
        estimate = num / den
    return Ratio(estimate, low, high, defined)


def ratio_of_means(r: Resampled, num=0, den=1, level: float = LEVEL) -> Ratio:
    """Fieller's interval for mean(row ``num``) / mean(row ``den``) of one :func:`resample`
    (rows masked to the pairs both have, by the caller; ``num`` and ``den`` may be arrays of row
    indices, one ratio each), with the bootstrap's (co)variances times C / (C - 1) and C - 1
    degrees of freedom."""
    C = r.n_clusters
    num, den = np.asarray(num), np.asarray(den)
    if C < 2:
        nan = np.full(num.shape, np.nan)
        return Ratio(r.estimate[num] / r.estimate[den], nan, nan, np.zeros(num.shape, bool))
    a = r.boot[:, num] - np.nanmean(r.boot[:, num], 0)
    b = r.boot[:, den] - np.nanmean(r.boot[:, den], 0)
    scale = C / (C - 1) / (r.n_boot - 1)
    var_a, var_b, cov = (np.nansum(x * y, 0) * scale for x, y in ((a, a), (b, b), (a, b)))
    return fieller(r.estimate[num], r.estimate[den], var_a, var_b, cov, C - 1, level)


def per_pair_sd(values, clusters: np.ndarray | None = None) -> float:
    """The SD of a per-pair quantity as the power calculation reads it: sqrt(n) times its
    cluster-robust standard error (the plain SD where every pair is its own cluster)."""
    x = np.asarray(values, np.float64)
    keep = ~np.isnan(x)
    x = x[keep]
    n = len(x)
    if n < 2:
        return float("nan")
    labels = _first_appearance((singletons(len(keep)) if clusters is None else np.asarray(clusters))[keep])
    C = int(labels.max()) + 1
    if C < 2:
        return float("nan")
    resid = np.bincount(labels, weights=x - x.mean(), minlength=C)
    return float(np.sqrt(C / (C - 1) * (resid**2).sum() / n))

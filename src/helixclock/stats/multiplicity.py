"""Multiplicity, verdicts and power for the declared findings (docs/findings.md, "Findings").

A *confirmatory family* (each sentence of the README a claim) is tested with Holm's step-down
procedure, which keeps the familywise error rate at alpha; a *screening list* (heads screened
for an effect) with Benjamini-Hochberg, which keeps the false discovery rate at alpha.  Each
finding also gets an interval that agrees with its verdict, at the level of the step that
decided it (:func:`holm`, :func:`benjamini_hochberg`): it excludes 0 exactly where the procedure
rejects.  For Holm the first step's interval is Bonferroni's simultaneous interval; for BH it is
the false-coverage-rate interval of Benjamini and Yekutieli (2005), at level 1 - R alpha / m for
R selected of m.

The intervals at a step's level are not simultaneous: each covers at its own level, and the chance
that some interval of a family misses is larger than alpha (1 - prod_k (1 - alpha / k), k = 1..m,
where every row is rejected at its own step and the rows are independent: 0.101 for m = 4, 0.074
for m = 2).  :func:`bonferroni` gives the simultaneous ones: every row at alpha / m, which cover
together with probability at least 1 - alpha; a row that Holm rejects at a later step can have a
Bonferroni interval that includes 0.

The power statement: the minimal detectable effect at 80% power of a two-sided t test at level
alpha' on df degrees of freedom (:func:`mde`, the noncentral t: the exact power of a one-sample t
test of normal pairs); with alpha' = alpha / m (the first step of Holm, the strictest, and the one
declared before the run: the step that decides a row depends on the other rows' p-values) it says
what a family's pair count can and cannot show.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats

ALPHA = 0.05
POWER = 0.8
VERDICTS = ("holds", "not distinguished", "reversed")
SIGNS = {"positive": 1, "negative": -1}


def holm(p, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down procedure over the p-values ``p`` [m] (NaN: not tested, left out of m):
    (reject [m], level [m]), ``level`` the alpha of the step that decided each hypothesis,
    alpha / (m - r + 1) for the one of rank r, or for every rank from the first that fails on,
    that step's level.  A t interval at ``level`` excludes 0 exactly where ``reject``."""
    p = np.asarray(p, np.float64)
    reject = np.zeros(len(p), bool)
    level = np.full(len(p), np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)
    order = tested[np.argsort(p[tested], kind="stable")]
    steps = alpha / (m - np.arange(m))  # alpha / m, alpha / (m - 1), ..., alpha
    failed = np.flatnonzero(p[order] > steps)
    first_fail = int(failed[0]) if len(failed) else m
    reject[order[:first_fail]] = True
    level[order] = np.where(np.arange(m) < first_fail, steps, steps[min(first_fail, m - 1)] if m else np.nan)
    return reject, level


def holm_adjusted(p) -> np.ndarray:
    """Holm's step-down adjusted p-values, for reading beside :func:`holm`'s decisions (p_adj
    <= alpha where it rejects): sorted ascending, p_(k) (m - k + 1) (k from 1), made
    non-decreasing, capped at 1; NaN stays NaN and does not count in m."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out[order] = adjusted
    return out


def benjamini_hochberg(p, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg over ``p`` [m] (NaN left out): (reject [m], level [m]) with ``level``
    R alpha / m for every hypothesis, R the number rejected (alpha / m when none is): the
    false-coverage-rate level, at which a t interval excludes 0 exactly where ``reject``."""
    p = np.asarray(p, np.float64)
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)
    reject = np.zeros(len(p), bool)
    level = np.full(len(p), np.nan)
    if m == 0:
        return reject, level
    srt = np.sort(p[tested])
    passing = np.flatnonzero(srt <= alpha * np.arange(1, m + 1) / m)
    r = int(passing[-1]) + 1 if len(passing) else 0
    cut = alpha * max(r, 1) / m
    reject[tested] = p[tested] <= cut if r else False
    level[tested] = cut
    return reject, level


def verdict(estimate: float, reject: bool, expect: str) -> str:
    """ "holds" where the test rejects with the sign ``expect`` (positive or negative) says,
    "reversed" where it rejects with the other sign, else "not distinguished"."""
    if expect not in SIGNS:
        raise ValueError(f"verdict: expect {expect!r}; allowed: {', '.join(SIGNS)}")
    if not reject or np.isnan(estimate) or estimate == 0:
        return "not distinguished"
    return "holds" if np.sign(estimate) == SIGNS[expect] else "reversed"


def bonferroni(m: int, alpha: float = ALPHA) -> float:
    """The level of each of ``m`` simultaneous intervals (Bonferroni): alpha / m; m intervals at
    it all cover with probability at least 1 - alpha (NaN for m = 0)."""
    return alpha / m if m > 0 else float("nan")


def mde(sd, n, alpha_prime, power: float = POWER, *, df) -> np.ndarray:
    """The smallest true effect that a two-sided t test at level alpha' on ``df`` degrees of
    freedom rejects *in its own direction* with probability ``power``: delta sd / sqrt(n), delta
    the noncentrality at which P(T > t_{df, 1 - alpha'/2}) = power for T noncentral t (df, delta).
    The exact power of the one-sample t test of normal pairs with SD ``sd``; the normal
    approximation (z_{1 - alpha'/2} + z_power) sd / sqrt(n) overstates the power on few degrees of
    freedom (0.14 instead of 0.80 at df 2 and alpha' = 0.0125, 0.52 at df 6; tested).  NaN where
    df, sd or n is NaN or df < 1."""
    sd, n, alpha_prime, df = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (sd, n, alpha_prime, df)))
    out = np.full(sd.shape, np.nan)
    for idx in np.ndindex(sd.shape):
        if np.isfinite(sd[idx]) and np.isfinite(n[idx]) and n[idx] > 0 and np.isfinite(df[idx]) and df[idx] >= 1:
            out[idx] = _noncentrality(float(df[idx]), float(alpha_prime[idx]), power) * sd[idx] / np.sqrt(n[idx])
    return out if out.ndim else out[()]


def _noncentrality(df: float, alpha_prime: float, power: float) -> float:
    """The delta with P(noncentral t(df, delta) > t_{df, 1 - alpha'/2}) = power."""
    crit = stats.t.ppf(1 - alpha_prime / 2, df)

    def short(delta: float) -> float:
        return stats.nct.sf(crit, df, delta) - power

    high = crit + stats.norm.ppf(power) + 1.0
    while short(high) < 0:
        high *= 2
    return float(optimize.brentq(short, 0.0, high, xtol=1e-10))

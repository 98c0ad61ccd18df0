"""Multiplicity, verdicts and power for the declared findings (docs/findings.md, "Findings").

A *confirmatory family* (each sentence of the README a claim) is tested with Holm's step-down
procedure, which keeps the familywise error rate at alpha; a *screening list* (heads screened
for an effect) with Benjamini-Hochberg, which keeps the false discovery rate at alpha.  Each
finding also gets an interval that agrees with its verdict, at the level of the step that
decided it (:func:`holm`, :func:`benjamini_hochberg`): it excludes 0 exactly where the procedure
rejects.  For Holm the first step's interval is Bonferroni's simultaneous interval; for BH it is
the false-coverage-rate interval of Benjamini and Yekutieli (2005), at level 1 - R alpha / m for
R selected of m.

The power statement: the minimal detectable effect at 80% power of a two-sided test at level
alpha' is (z_{1 - alpha'/2} + z_{0.8}) SD / sqrt(n); with alpha' = alpha / m (the first step of
Holm, the strictest) it says what a family's pair count can and cannot show.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

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


def mde(sd, n, alpha_prime, power: float = POWER) -> np.ndarray:
    """(z_{1 - alpha'/2} + z_power) sd / sqrt(n): the smallest true effect that a two-sided test
    at level alpha' detects with probability ``power`` (normal approximation)."""
    z = stats.norm.ppf(1 - np.asarray(alpha_prime, np.float64) / 2) + stats.norm.ppf(power)
    with np.errstate(invalid="ignore", divide="ignore"):
        return z * np.asarray(sd, np.float64) / np.sqrt(np.asarray(n, np.float64))

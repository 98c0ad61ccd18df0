"""Is there a T = 100 component beyond the digits?  The nested test, and what it can detect.

helixclock's extension for numbers of several tokens (docs/several-tokens.md, "Numbers of several tokens"),
not the paper's.  The paper takes T = 100 into its helix (section 4.2) from the spectrum of
bare numbers (section 4.1, Fig. 2).  A race between single bases (:func:`.number_bases.winner`)
cannot say whether a representation holds a T = 100 component: one that holds digit features
*and* a T = 100 component loses the race to the digits, because the helix alone lacks the class
step and the tens-digit circle.  Nor can the spectrum within the two-digit class: over 10..99
a trend and a T = 100 circle land in the same lowest bin.  The question is nested: what does a
T = 100 circle (cos, sin 2 pi n / 100) add to a basis that already holds the digits?

* **The increment.**  Held-out R^2 (K folds over numbers, as :func:`.number_bases.
  compare_number_bases`) of "base + cos/sin n T=100" minus that of "base", paired: the same
  numbers, folds and bootstrap resamples (the same seeded multinomial counts as the comparison,
  so an increment here equals the paired difference of ``pairs`` where both bases are there).
  Two bases: the **digit one-hot** (one indicator per nonzero digit at each place, 9 a place,
  :class:`helixclock.fitting.bases.Basis` kind "onehot") with the digit-count classes (the verdict: the
  richest function of each digit alone, with the token count), and the digit circles with the
  classes (the comparison's own "helix + digit circles + classes" - "digit circles + classes").
  T = 100 alone is tested: the periods 2, 5 and 10 are functions of the units digit, and over a
  units one-hot they add exactly nothing (tests/unit/test_nested_t100.py shows it).  What T = 100
  adds over the one-hot is its within-decade interaction of tens and units (cos 2 pi n / 100 is
  not a sum of a function of the tens digit and one of the units digit).
* **The verdict, Holm across layers.**  Each layer's increment gets a one-sided p from its
  bootstrap standard error (P(Z >= increment / SE), normal: the claim is an increment above 0,
  so a layer whose increment lies below 0 is no rejection and does not ease the other layers'
  Holm steps); Holm's step-down (:func:`helixclock.stats.multiplicity.holm`, the findings job's own)
  decides over the layers.  "detected" where Holm rejects at 1 - ``level`` *and* the percentile
  interval lies above 0; otherwise "not detected" (its interval covers 0, or lies below it: a
  useless nested term's held-out increment is slightly negative).  The findings job declares
  this verdict (finding ``t100_beyond_digits``) and reaches the same one from these columns.
* **What it can detect.**  At each layer the paper's helix (its periods, with T = 100) is fitted
  to the numbers by least squares; its own T = 100 part, cos/sin n T=100 times their fitted
  coefficients, is what is planted.  Not on top of the data (their own T = 100 content would be
  counted as the plant's), nor into data with the plane projected out (that leaves each fold's
  training part of the plane anti-correlated with its test part: a held-out increment biased
  low), but into realisations of the test's null (:func:`calibrate`): the data's content in the
  residualised T = 100 plane replaced by their content in a tens-permuted placebo plane (kept
  apart from the circle), rotated into it, the placebo and the folds drawn anew each time.  Each
  layer is calibrated alone (the others as the data are), with the test's own rule (its placebo
  rank, Holm over the layers, the interval above 0).  The smallest planted fraction from which
  every larger one is detected in at least :data:`helixclock.stats.multiplicity.POWER` (0.80) of
  :data:`REALISATIONS` realisations is the layer's detectable amplitude (NaN if not even the
  whole), with the share of the data's variance it is, and the share of it outside the base's
  span (what the test has to find: the page prints it).

Tables take the residual cache's bare numbers ``numbers`` [N, L+1, d] as
:mod:`.number_bases`; ``layer`` = resid_pre[layer].  numpy and pandas only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...fitting.bases import PERIODS, Basis, Combined
from ...fitting.planes import (
    circle,
    frame_coordinates,
    placebo_sigmas,
    residual_frame,
    tens_frame,
    tens_permuted_circle,
)
from ...stats.multiplicity import POWER, holm_adjusted
from ...stats.multiplicity import holm as step_down
from .number_bases import RANK_TOL, _check, _errors, _interval, _numbers, _union, crossed_weights, design, kfold

T100 = 100
VERDICT = "T=100 over digit one-hot + classes"  # the test whose result is the verdict
CIRCLES = "T=100 over digit circles + classes"
FRACTIONS = (0.0625, 0.125, 0.25, 0.5, 1.0)
# tens-permuted circles the T = 100 increment is ranked among (p >= 1 / 1000): every permutation of
# the tens digits but the identity, drawn seeded.  Those near the identity (two digits swapped) are
# near the circle itself; they keep the test honest about a generic tens-by-units interaction,
# which the circle is close to (principal cosine 0.79 for (t - 4.5)(u - 4.5)): against placebos
# chosen far from the circle, such an interaction would rank first and read "T = 100"
PLACEBOS = 999
CHUNK = 128  # placebo planes a pass
# realisations of the calibration (noise plane, folds and bootstrap drawn anew each): a detection
# rate of 0.8 is estimated to +-0.04 (its binomial SE), so the fraction detected with power 0.8
# (fractions a factor 2 apart) can be off by one step only where the rate at a fraction lies
# within about 0.08 of 0.8.  A realisation costs a few products of the numbers' Gram matrix with
# 100 vectors and one with the 1000 planes' weights: 0.25 s on one core for 31 layers of 361
# numbers and 999 placebos, whatever the width (576 or 1152), so 100 take about half a minute
REALISATIONS = 100
# what replaces the data's content in the residualised T = 100 plane (:func:`calibrate`): the
# calibration's null first, then the wrong arms the tests hold it against
NULLS = ("rotated", "rotated, overlapping", "projected", "kept")


def nested_sets(n_digits: int, variable: str = "n") -> dict[str, tuple[Combined, Combined]]:
    """The nested pairs (base, base + cos/sin n T=100) of numbers of up to ``n_digits`` digits:
    :data:`VERDICT` (the digit one-hot of every place with the digit-count classes) and
    :data:`CIRCLES` (the units digit's circles T = 2, 5, 10, the tens, hundreds ... digits'
    circles and the classes: :func:`helixclock.fitting.bases.number_bases`' "digit circles + classes")."""
    if n_digits < 2:
        raise ValueError(f"n_digits {n_digits}: the nested test needs numbers of 2 digits or more")
    v = (variable,)
    higher = tuple(range(1, n_digits))
    onehot = Basis("onehot", variables=v, places=tuple(range(n_digits)))
    classes = Basis("classes", variables=v, places=higher)
    units = Basis("circle", tuple(t for t in PERIODS if 10 % t == 0), variables=v)
    circles = Basis("digits", (10,), variables=v, places=higher)
    t100 = Basis("circle", (T100,), variables=v)
    out = {}
    for name, parts in ((VERDICT, (onehot, classes)), (CIRCLES, (units, circles, classes))):
        out[name] = (Combined(f"{name} (base)", parts), Combined(f"{name} (full)", (*parts, t100)))
    return out


ROUNDING = 1e-12  # an R^2 increment and its SE below this are rounding (two bases of one span)


def upper_p(diff, se) -> np.ndarray:
    """p = P(Z >= diff / se), Z standard normal (one-sided: an increment above 0); 1 where the
    SE is rounding (the two bases span the same functions on these numbers: nothing varies)."""
    diff, se = np.broadcast_arrays(np.asarray(diff, np.float64), np.asarray(se, np.float64))
    real = se > ROUNDING
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(real, diff / np.where(real, se, 1), -np.inf)
    return np.vectorize(lambda x: 0.5 * math.erfc(x / math.sqrt(2)))(z).astype(np.float64)


def increments(
    X: np.ndarray, pairs: Sequence[tuple[Combined, Combined]], folds: int, seed: int, n_boot: int, level: float
) -> list[dict[str, np.ndarray]]:
    """For each (base, full) pair, per layer [L]: held-out ``r2_base``, ``r2_full``, the increment
    ``diff`` = r2_full - r2_base, its percentile interval ``low``, ``high`` and bootstrap ``se``.
    X [N, L, d] raw (centred here); the folds and the bootstrap counts are those of
    :func:`.number_bases.compare_number_bases` with the same ``seed``."""
    n = X.shape[0]
    designs = [design(b, np.arange(n)) for pair in pairs for b in pair]
    _check(X, folds, n_boot, level, max(len(c) for _, c in designs))
    Xc = X - X.mean(0)
    total = (Xc**2).sum(-1)  # [N, L]
    F, index = _union(designs)
    held = _errors(F, index, Xc, kfold(n, folds, seed))  # [N, 2 pairs, L]
    counts = crossed_weights(n, n_boot, seed)  # decades x units digits
    boots = 1 - np.einsum("nkl,bn->klb", held, counts) / (total.T @ counts.T)  # [2 pairs, L, B]
    r2 = 1 - held.sum(0) / total.sum(0)  # [2 pairs, L]
    out = []
    for i in range(len(pairs)):
        base, full = 2 * i, 2 * i + 1
        d = boots[full] - boots[base]
        low, high = _interval(d, level)
        out.append(
            {
                "r2_base": r2[base],
                "r2_full": r2[full],
                "diff": r2[full] - r2[base],
                "low": low,
                "high": high,
                "se": d.std(-1, ddof=1) if n_boot > 1 else np.zeros(len(low)),
            }
        )
    return out


def plane_increments(X: np.ndarray, base: Combined, planes: np.ndarray, fold: np.ndarray) -> np.ndarray:
    """Held-out R^2 increments [K, L] of base + each plane over the base: ``planes`` [N, K, 2]
    (two columns a plane, e.g. :func:`helixclock.fitting.planes.tens_permuted_circle` of K
    permutations), X [N, L, d] raw (centred here), the folds of :func:`.number_bases.kfold`.

    By Frisch-Waugh-Lovell on each fold's training numbers: the data and the plane are
    residualised on the base (minimum-norm, singular values below RANK_TOL dropped, as
    :func:`.number_bases._errors`), the plane's two coefficients fitted to the residual, and a
    held-out number's error is its base residual less the plane's fitted part.  Its squared norm
    per layer is expanded (||r||^2 - 2 b.G + b'S b), so no prediction of d dimensions is formed:
    999 placebo planes cost a few products with the data per fold."""
    X = X - X.mean(0)
    n, L, d = X.shape
    K = planes.shape[1]
    B, _ = design(base, np.arange(n))
    Y = X.reshape(n, L * d)
    total = (X**2).sum((0, 2))
    sse_base, sse = np.zeros(L), np.zeros((K, L))
    flat = planes.reshape(n, 2 * K)
    for f in np.unique(fold):
        test = fold == f
        pinv = np.linalg.pinv(B[~test], rtol=RANK_TOL)
        gy, gp = pinv @ Y[~test], pinv @ flat[~test]
        r_train, r_test = Y[~test] - B[~test] @ gy, Y[test] - B[test] @ gy
        p_train = (flat[~test] - B[~test] @ gp).reshape(-1, K, 2)
        p_test = (flat[test] - B[test] @ gp).reshape(-1, K, 2)
        base_test = (r_test**2).reshape(-1, L, d).sum((0, 2))
        sse_base += base_test
        for k in range(0, K, CHUNK):
            pt, pe = p_train[:, k : k + CHUNK], p_test[:, k : k + CHUNK]
            S = np.einsum("nkj,nki->kji", pt, pt)
            coef = np.linalg.solve(S, np.einsum("nkj,nm->kjm", pt, r_train)).reshape(len(S), 2, L, d)
            G = np.einsum("nkj,nm->kjm", pe, r_test).reshape(len(S), 2, L, d)
            S_test = np.einsum("nkj,nki->kji", pe, pe)
            cross = np.einsum("kjld,kjld->kl", coef, G)
            quad = np.einsum("kji,kjld,kild->kl", S_test, coef, coef)
            sse[k : k + CHUNK] += base_test[None] - 2 * cross + quad
    return (sse_base[None] - sse) / total[None]


def placebo_p(X: np.ndarray, base: Combined, fold: np.ndarray, sigmas: np.ndarray) -> dict[str, np.ndarray]:
    """The T = 100 increment over ``base`` ranked among the increments of the tens-permuted
    circles of ``sigmas`` [K, 10], layer by layer [L]: ``increment_t100`` (the circle's own, by
    :func:`plane_increments`), ``placebo_rank`` (how many placebos add at least as much),
    ``placebo_median``, ``placebo_max`` and ``p`` = (1 + placebo_rank) / (1 + K), one-sided: that
    T = 100 adds more than a tens-by-units interaction of its kind (its rank, not its size)."""
    numbers = np.arange(X.shape[0])
    planes = np.stack([tens_permuted_circle(numbers, s) for s in [np.arange(10), *sigmas]], 1)
    inc = plane_increments(X, base, planes, fold)
    own, placebo = inc[0], inc[1:]
    rank = (placebo >= own[None] - ROUNDING).sum(0)
    return {
        "increment_t100": own,
        "placebo_rank": rank,
        "placebo_median": np.median(placebo, 0),
        "placebo_max": placebo.max(0),
        "p": (1 + rank) / (1 + len(placebo)),
    }


def verdict(low, high, p, level: float) -> dict[str, np.ndarray]:
    """Over layers, from the one-sided ``p`` of each (:func:`placebo_p`): Holm's adjusted p (for
    reading), where the interval lies (``interval``: "above 0", "covers 0", "below 0") and the
    ``verdict`` ("detected" where Holm's step-down rejects at 1 - ``level`` and the interval lies
    above 0, else "not detected")."""
    p = np.asarray(p, np.float64)
    adjusted = holm_adjusted(p)
    reject, _ = step_down(p, 1 - level)
    where = np.where(np.asarray(low) > 0, "above 0", np.where(np.asarray(high) < 0, "below 0", "covers 0"))
    found = reject & (where == "above 0")
    return {"p_holm": adjusted, "interval": where, "verdict": np.where(found, "detected", "not detected")}


def helix_t100_coefficients(X: np.ndarray, periods: Sequence[int] = PERIODS) -> tuple[np.ndarray, np.ndarray]:
    """The paper's helix (``periods`` with T = 100) fitted by least squares to the numbers at
    every layer (X [N, L, d], centred): the circle cos/sin 2 pi n / 100 [N, 2] and its fitted
    coefficients [L, 2, d], whose product is the helix's own T = 100 part."""
    T = tuple(sorted(set(int(t) for t in periods) | {T100}))
    helix = Basis("helix", T, variables=("n",))
    A = helix(np.arange(X.shape[0], dtype=np.float64))
    cols = helix.columns()
    idx = [cols.index(f"cos n T={T100}"), cols.index(f"sin n T={T100}")]
    Xc = (X - X.mean(0)).reshape(X.shape[0], -1)
    C, *_ = np.linalg.lstsq(A, Xc, rcond=None)  # [columns, L d]
    return A[:, idx], C[idx].reshape(2, X.shape[1], X.shape[2]).transpose(1, 0, 2)


def helix_t100_part(X: np.ndarray, periods: Sequence[int] = PERIODS) -> np.ndarray:
    """The helix's own T = 100 part (:func:`helix_t100_coefficients`): cos/sin 2 pi n / 100 times
    their fitted coefficients, [N, L, d]."""
    c, W = helix_t100_coefficients(X, periods)
    return np.einsum("nj,ljd->nld", c, W)


def _rank(basis: Combined, n: int) -> int:
    """The parameters of ``basis`` that the numbers 0..n-1 tell apart (its design's rank, the
    constant not counted)."""
    return int(np.linalg.matrix_rank(design(basis, np.arange(n))[0])) - 1


def _outside(base: Combined, part: np.ndarray) -> np.ndarray:
    """Squared norm of ``part`` [N, L, d] outside the span of ``base`` on the numbers, per layer."""
    A, _ = design(base, np.arange(part.shape[0]))
    flat = part.reshape(part.shape[0], -1)
    coef, *_ = np.linalg.lstsq(A, flat, rcond=None)
    return ((flat - A @ coef) ** 2).reshape(part.shape).sum((0, 2))


def nested_tables(
    numbers,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    level: float = 0.95,
    periods: Sequence[int] = PERIODS,
    fractions: Sequence[float] = FRACTIONS,
    placebos: int = PLACEBOS,
    realisations: int = REALISATIONS,
) -> dict[str, pd.DataFrame]:
    """The nested T = 100 test at every layer and its calibration.

    * ``nested``: one row per layer x test (:data:`VERDICT`, :data:`CIRCLES`): ``layer``,
      ``test``, ``verdict_test`` (True for the one-hot test, the verdict), ``n_numbers`` (the
      numbers fitted and resampled), ``rank_base``,
      ``rank_full`` (the parameters the numbers tell apart, the constant not counted),
      ``r2_base``, ``r2_full`` (held out), ``increment`` with ``low``, ``high`` (its percentile
      interval at ``level``, numbers resampled by decade and units digit) and ``se``;
      ``n_placebos`` tens-permuted circles (:data:`PLACEBOS`), ``placebo_rank`` (how
      many add at least as much), ``placebo_median``, ``placebo_max``, ``p`` = (1 + rank) /
      (1 + n_placebos) (one-sided: T = 100 adds more than an interaction of its kind), ``p_se``
      (the normal p of the increment over its SE, for reading), ``p_holm`` (Holm over the layers,
      within the test), ``interval``, ``verdict``; on the
      verdict's rows also ``detectable_fraction`` (the smallest planted fraction of the helix's
      own T = 100 part from which every larger one is detected with power ``detectable_power``,
      :data:`helixclock.stats.multiplicity.POWER`; NaN if none), ``detectable_share`` (the
      variance share that planted part is of the layer's data), ``detectable_unique_share``
      (the share of its part outside the base's span), ``null_rate`` (the detection rate with
      nothing planted: the test's size at that layer under the calibration's null) and
      ``n_realisations``.
    * ``power``: one row per layer x planted fraction (0, the null, then ``fractions``):
      ``layer``, ``fraction``, ``amplitude`` (RMS over numbers of the planted part's norm),
      ``variance_share`` (its sum of squares over the data's, both about the mean),
      ``unique_share`` (the same for its part outside the base's span: what the test has to
      find), ``n_realisations``, ``increment`` (the median over the realisations of the test's
      increment), ``detected_rate`` (the share of realisations where the test detects it) and
      ``detected`` (that share at least ``POWER``).
    """
    X = _numbers(numbers)
    n, layers = X.shape[:2]
    fr = np.asarray(sorted(float(f) for f in fractions))
    if len(fr) == 0 or (fr <= 0).any():
        raise ValueError(f"fractions {list(fractions)}: give one or more positive fractions of the helix's T=100 part")
    if placebos < 1:
        raise ValueError(f"placebos {placebos}: allowed 1 or more (the test's p is at least 1 / (1 + placebos))")
    if realisations < 1:
        raise ValueError(f"realisations {realisations}: allowed 1 or more (the calibration's detection rate)")
    sets = nested_sets(len(str(n - 1)))
    fold = kfold(n, folds, seed)
    sigmas = placebo_sigmas(placebos, seed)
    rows = []
    for (name, (base, full)), got in zip(sets.items(), increments(X, list(sets.values()), folds, seed, n_boot, level)):
        ranked = placebo_p(X, base, fold, sigmas)
        v = verdict(got["low"], got["high"], ranked["p"], level)
        rows.append(
            pd.DataFrame(
                {
                    "layer": np.arange(layers),
                    "test": name,
                    "verdict_test": name == VERDICT,
                    "n_numbers": n,
                    "rank_base": _rank(base, n),
                    "rank_full": _rank(full, n),
                    "r2_base": got["r2_base"],
                    "r2_full": got["r2_full"],
                    "increment": got["diff"],
                    "low": got["low"],
                    "high": got["high"],
                    "se": got["se"],
                    "n_placebos": placebos,
                    "placebo_rank": ranked["placebo_rank"],
                    "placebo_median": ranked["placebo_median"],
                    "placebo_max": ranked["placebo_max"],
                    "p": ranked["p"],
                    "p_se": upper_p(got["diff"], got["se"]),
                    **v,
                }
            )
        )
    nested = pd.concat(rows, ignore_index=True)
    power = power_table(X, sets[VERDICT], folds, seed, n_boot, level, periods, fr, sigmas, realisations)
    detect = detectable(power)
    nested = nested.merge(detect.assign(test=VERDICT), on=["layer", "test"], how="left")
    return {"nested": nested.sort_values(["layer", "test"], kind="stable", ignore_index=True), "power": power}


def power_table(X, pair, folds, seed, n_boot, level, periods, fractions, sigmas, realisations) -> pd.DataFrame:
    """:func:`nested_tables`' ``power``: per layer and planted fraction (0, the calibration's
    null, first), the detection rate over ``realisations`` of :func:`calibrate`."""
    c, W = helix_t100_coefficients(X, periods)
    part = np.einsum("nj,ljd->nld", c, W)
    spread = ((X - X.mean(0)) ** 2).sum((0, 2))  # [L]
    norm = (part**2).sum((0, 2))
    outside = _outside(pair[0], part)
    fr = np.concatenate([[0.0], fractions])
    got = calibrate(X, pair[0], (c, W), fr, sigmas, realisations, seed, folds, n_boot, level)
    rate = got["detected"].mean(0)  # [F, L]
    rows = []
    for i, f in enumerate(fr):
        rows.append(
            pd.DataFrame(
                {
                    "layer": np.arange(X.shape[1]),
                    "fraction": f,
                    "amplitude": f * np.sqrt(norm / X.shape[0]),
                    "variance_share": f**2 * norm / spread,
                    "unique_share": f**2 * outside / spread,
                    "n_realisations": realisations,
                    "increment": np.median(got["increment"][:, i], 0),
                    "detected_rate": rate[i],
                    "detected": rate[i] >= POWER,
                }
            )
        )
    return pd.concat(rows, ignore_index=True).sort_values(["layer", "fraction"], ignore_index=True)


def detectable(power: pd.DataFrame) -> pd.DataFrame:
    """Per layer, over the planted fractions above 0 (fraction 0 is the calibration's null), the
    smallest from which every larger one is ``detected`` (``detectable_fraction``, NaN if the
    largest is not), its ``detectable_share`` and ``detectable_unique_share``; where the table
    has them, ``null_rate`` (the detection rate at fraction 0) and ``n_realisations``."""
    rows = []
    for layer, g in power.sort_values("fraction").groupby("layer", sort=True):
        null = g[g["fraction"] == 0]
        g = g[g["fraction"] > 0]
        hit = g["detected"].to_numpy(bool)
        # the first fraction of the last run of detections that reaches the largest fraction
        missed = np.flatnonzero(~hit)
        first = 0 if len(missed) == 0 else missed[-1] + 1
        found = first < len(g)
        row = {
            "layer": int(layer),
            "detectable_fraction": float(g["fraction"].iloc[first]) if found else np.nan,
            "detectable_share": float(g["variance_share"].iloc[first]) if found else np.nan,
            "detectable_unique_share": float(g["unique_share"].iloc[first]) if found else np.nan,
        }
        if "detected_rate" in g:
            row["detectable_power"] = POWER
            row["null_rate"] = float(null["detected_rate"].iloc[0]) if len(null) else np.nan
            row["n_realisations"] = int(g["n_realisations"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


# -- the calibration: realisations of the test with the data's T = 100 content replaced -----------
#
# Every quantity of the test (a plane's held-out increment, a number's held-out improvement, the
# totals) is a quadratic form of the data through N-vectors: u^T X_l X_l^T v.  So the data enter
# through their Gram matrix per layer, K_l = X_l X_l^T [N, N], and through it only as K_l times a
# hundred vectors a fold split (the 20 columns of planes.tens_frame, residualised on each fold's
# training numbers: every placebo plane is a combination of them).  Replacing the data's content in
# the residualised T = 100 plane is X -> T X with T = I + Q_c (Q_p - Q_c)^T (a rank-2 change), and
# planting f times the helix's part c W adds f (T X W^T c^T + c W X^T T^T) + f^2 c W W^T c^T to the
# Gram matrix: a realisation costs a few products of K with 100 vectors, whatever d is.


def _holm_rejects(p: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`helixclock.stats.multiplicity.holm`'s rejections along the last axis of ``p``
    [..., m] (no NaN), many families at once: sorted ascending (stable), p_(j) against alpha /
    (m - j), every hypothesis before the first that fails rejected."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    fails = np.take_along_axis(p, order, -1) > alpha / (m - np.arange(m))
    reject = np.empty(p.shape, bool)
    np.put_along_axis(reject, order, ~np.logical_or.accumulate(fails, axis=-1), -1)
    return reject


def _fold_setup(
    B: np.ndarray, D: np.ndarray, rho: np.ndarray, fold: np.ndarray
) -> tuple[np.ndarray, list[dict], np.ndarray]:
    """What a fold split needs that the data do not: G1 [N, 20 folds] (each fold's frame columns
    residualised on its training numbers, 0 at its test numbers); per fold its numbers, the map
    H = B_test B_train^+ (a test number's base prediction), its test columns' back-map g2 and
    the own plane's (rho[0]) test rows; and the weights [K, 420 folds] that turn the folds'
    20 x 20 forms of the data (their upper triangles, :func:`_upper`) into every plane's
    2 cross - quad (:func:`plane_increments`' terms), summed over the folds."""
    n, m = D.shape
    G1 = np.zeros((n, m * len(np.unique(fold))))
    out, weights = [], []
    rt = np.swapaxes(rho, 1, 2)
    ia, ib = np.triu_indices(m)
    upper, double = ia * m + ib, np.where(ia < ib, 2.0, 1.0)  # :func:`_upper`'s entries, flattened
    for j, f in enumerate(np.unique(fold)):
        te, tr = np.flatnonzero(fold == f), np.flatnonzero(fold != f)
        pinv = np.linalg.pinv(B[tr], rtol=RANK_TOL)
        H = B[te] @ pinv
        a = D[tr] - B[tr] @ (pinv @ D[tr])  # the frame residualised on the training numbers
        e = D[te] - H @ D[tr]  # the test numbers' residuals under the training fit
        g2 = np.zeros((n, m))
        g2[te], g2[tr] = e, -H.T @ e
        G1[tr, j * m : (j + 1) * m] = a
        S = rt @ ((a.T @ a) @ rho)  # each plane's training Gram [K, 2, 2]
        Si = np.linalg.inv(S)
        # cross = <Psi12, W1>, W1 = rho S^-1 rho^T; quad = <Psi11, W2>, W2 = rho S^-1 S_test S^-1 rho^T;
        # <Psi, W> = <upper(Psi + Psi^T) / 2, upper(W)> with the off-diagonal weights doubled
        left = rho @ Si  # [K, 20, 2]
        W1 = (left @ rt).reshape(len(rho), -1)[:, upper]
        W2 = (left @ (rt @ ((e.T @ e) @ rho)) @ np.swapaxes(left, 1, 2)).reshape(len(rho), -1)[:, upper]
        weights += [2 * W1 * double, -W2 * double]
        own = (e @ rho[0]) @ Si[0]  # a test number's prediction is own_i . coef
        out.append({"te": te, "tr": tr, "H": H, "a": a, "g2": g2, "own": own})
    return G1, out, np.concatenate(weights, 1)


def _upper(A: np.ndarray) -> np.ndarray:
    """The upper triangle (diagonal included) of each matrix of A [..., m, m], flattened."""
    i, j = np.triu_indices(A.shape[-1])
    return A[..., i, j]


def _evaluate(
    KG: np.ndarray, setup: list[dict], weights: np.ndarray, rho0: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """The test's held-out quantities from K G1 [C, L, N, 20 folds] (C components of a Gram
    matrix that is a polynomial in the planted fraction): every
    plane's increment numerator [K, C, L] (its sum of 2 cross - quad over the folds) and the own
    plane's held-out improvement of each number [C, L, N]."""
    C, L, n, _ = KG.shape
    forms, delta = [], np.zeros((n, C, L))
    KGn = np.moveaxis(KG, 2, 0)  # [N, C, L, 20 folds]: every product below one matrix product
    for j, s in enumerate(setup):
        Kg = KGn[..., j * m : (j + 1) * m].reshape(n, -1)  # [N, (C, L, 20)]
        psi11 = (s["a"].T @ Kg[s["tr"]]).reshape(m, C, L, m).transpose(1, 2, 0, 3)  # a^T K g1
        psi12 = (s["g2"].T @ Kg).reshape(m, C, L, m).transpose(1, 2, 3, 0)  # g1^T K g2
        forms += [_upper(psi12 + np.swapaxes(psi12, -1, -2)).reshape(C * L, -1) / 2, _upper(psi11).reshape(C * L, -1)]
        EKg = (Kg[s["te"]] - s["H"] @ Kg[s["tr"]]).reshape(-1, C, L, m)  # [test, C, L, 20]
        first = ((EKg @ rho0) * s["own"][:, None, None]).sum(-1)
        M = rho0.T @ psi11 @ rho0  # [C, L, 2, 2]: the own plane's form
        second = np.einsum("nj,cljk,nk->ncl", s["own"], M, s["own"])
        delta[s["te"]] = 2 * first - second
    return (weights @ np.concatenate(forms, 1).T).reshape(len(weights), C, L), np.moveaxis(delta, 0, 2)


def _replaced(Qc: np.ndarray, Delta: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """T Y for T = I + Qc Delta^T (the data's plane content replaced), Y [L, N, m]."""
    return Y + np.einsum("nj,ljm->lnm", Qc, np.einsum("nj,lnm->ljm", Delta, Y))


def _draws(realisations: int, seed: int, exclude: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each realisation's fold seed and its noise plane's permutation of the tens digits (seeded
    by ``seed``, a stream apart from the ranking placebos': distinct, never the identity nor one
    of ``exclude``, the placebos the test ranks among)."""
    rng = np.random.default_rng([seed, 54])
    fold_seeds = rng.integers(0, 2**31 - 1, size=realisations)
    seen = {tuple(range(10))} | {tuple(int(x) for x in s) for s in exclude}
    found = []
    while len(found) < realisations:
        s = tuple(int(x) for x in rng.permutation(10))
        if s not in seen:
            seen.add(s)
            found.append(s)
    return fold_seeds, np.array(found, dtype=np.int64).reshape(-1, 10)


def calibrate(
    X: np.ndarray,
    base: Combined,
    plant: tuple[np.ndarray, np.ndarray],
    fractions: Sequence[float],
    sigmas: np.ndarray,
    realisations: int,
    seed: int,
    folds: int,
    n_boot: int,
    level: float,
    null: str = "rotated",
) -> dict[str, np.ndarray]:
    """Realisations of the one-hot test at each layer with the data's T = 100 content replaced by
    noise of its own size and a T = 100 part planted.

    X [N, L, d] raw (centred here); ``plant`` (c [N, 2], W [L, 2, d]): the part planted at fraction
    f is f c W (centred), the helix's own T = 100 part (:func:`helix_t100_coefficients`).  A
    realisation r draws a fold seed and a tens permutation sigma_r (:func:`_draws`).  The null
    (``null``, :data:`NULLS`): "rotated", the calibration: what the data hold in the residualised
    T = 100 plane (the circle residualised on ``base`` over all numbers, frame Q_c,
    :func:`helixclock.fitting.planes.residual_frame`) is replaced by what they hold in sigma_r's
    plane residualised on the base *and the circle* (frame Q_p), carried into it by the
    orthonormal map Q_c Q_p^T: X -> X - Q_c Q_c^T X + Q_c Q_p^T X, the content along the placebo's
    residualised cosine and sine put along the circle's: noise of one plane's size, none of it
    T = 100's.  The wrong arms: "rotated, overlapping" (sigma_r's plane residualised on the base
    alone: it holds its principal cosines' share of the data's own T = 100 component, which comes
    back rotated as "noise"), "projected" (the plane's content removed and nothing put there:
    projected out over all numbers, each fold's training part of the plane is anti-correlated
    with its test part, so the held-out increment is biased low and the test looks weaker than
    it is) and "kept" (the data as they are: the plant lands on top of their own T = 100
    content, which it is credited with; the calibration before issue 54).

    One layer at a time: layer l's test in realisation r is that of the data with layer l
    replaced and planted, every other layer as the data are, all under r's folds and bootstrap
    (crossed_weights of r's seed): its p is its rank among the ``sigmas`` placebos, Holm's
    step-down runs over all layers (layer l's p and the other layers' p of the data as they are),
    and "detected" is the stage's verdict: Holm rejects layer l and its interval lies above 0.

    Returns arrays [R, F, L]: ``detected``, ``increment`` (the circle's held-out increment),
    ``p`` (its placebo p), ``low`` (its interval's lower end); and ``p_data`` [R, L] (the data's
    own p under each realisation's folds)."""
    Xc = X - X.mean(0)
    n, L, _ = Xc.shape
    numbers = np.arange(n)
    B, _ = design(base, numbers)
    D = tens_frame(numbers)
    m = D.shape[1]
    rho = frame_coordinates(np.vstack([np.arange(10), sigmas]))
    Xl = Xc.transpose(1, 0, 2)
    K = Xl @ Xl.transpose(0, 2, 1)  # [L, N, N]
    diagK = np.einsum("lnn->ln", K)
    c_raw, W = plant
    c = c_raw - c_raw.mean(0)
    XW = Xl @ W.transpose(0, 2, 1)  # X W^T [L, N, 2]
    WW = W @ W.transpose(0, 2, 1)  # [L, 2, 2]
    if null not in NULLS:
        raise ValueError(f"null {null!r}: one of {', '.join(NULLS)}")
    fold_seeds, noise = _draws(realisations, seed, sigmas)
    Qc = residual_frame(circle(numbers), B)
    noise_planes = np.stack([tens_permuted_circle(numbers, s) for s in noise])  # [R, N, 2]
    if null == "rotated":
        Delta = residual_frame(noise_planes, np.hstack([B, circle(numbers)])) - Qc  # T = I + Qc Delta^T
    elif null == "rotated, overlapping":
        Delta = residual_frame(noise_planes, B) - Qc
    else:
        Delta = np.broadcast_to(-Qc if null == "projected" else np.zeros_like(Qc), (realisations, n, 2))
    powers = np.asarray(fractions, np.float64)[:, None] ** np.arange(3)  # [F, 3]: 1, f, f^2
    alpha = 1 - level
    out = {k: np.zeros((realisations, len(powers), L)) for k in ("increment", "p", "low")}
    out["p_data"] = np.zeros((realisations, L))
    for r in range(realisations):
        G1, setup, weights = _fold_setup(B, D, rho, kfold(n, folds, int(fold_seeds[r])))
        KG1 = (K.reshape(-1, n) @ G1).reshape(L, n, -1)  # [L, N, 20 folds], one matrix product
        num, _ = _evaluate(KG1[None], setup, weights, rho[0], m)
        own = num[0, 0] / diagK.sum(-1)
        out["p_data"][r] = (1 + (num[1:, 0] / diagK.sum(-1) >= own - ROUNDING).sum(0)) / len(rho)
        KD = K @ Delta[r]  # [L, N, 2]
        comp0 = _replaced(Qc, Delta[r], KG1 + KD @ (Qc.T @ G1))  # T K T^T G1
        TXW = _replaced(Qc, Delta[r], XW)
        DKD = np.einsum("nj,lnk->ljk", Delta[r], KD)
        d0 = diagK + 2 * (Qc * KD).sum(-1) + np.einsum("nj,ljk,nk->ln", Qc, DKD, Qc)
        cG = c.T @ G1  # [2, 20 folds]
        comp1 = TXW @ cG + np.einsum("nj,ljm->lnm", c, np.einsum("lnj,nm->ljm", TXW, G1))
        comp2 = np.einsum("nj,ljk,km->lnm", c, WW, cG)
        d1 = 2 * (TXW * c).sum(-1)
        d2 = np.einsum("nj,ljk,nk->ln", c, WW, c)
        num, delta = _evaluate(np.stack([comp0, comp1, comp2]), setup, weights, rho[0], m)
        diag = np.stack([d0, d1, d2])  # [3, L, N]
        total = np.einsum("fc,cl->fl", powers, diag.sum(-1))
        inc = np.einsum("fc,kcl->kfl", powers, num) / total[None]  # [K, F, L]
        p = (1 + (inc[1:] >= inc[0][None] - ROUNDING).sum(0)) / len(rho)
        counts = crossed_weights(n, n_boot, int(fold_seeds[r]))  # [B, N]
        gain = np.einsum("fc,cln->fln", powers, delta).reshape(-1, n)
        spread = np.einsum("fc,cln->fln", powers, diag).reshape(-1, n)
        low, _ = _interval((gain @ counts.T) / (spread @ counts.T), level)
        out["increment"][r], out["p"][r], out["low"][r] = inc[0], p, low.reshape(len(powers), L)
    # one layer at a time: the family of layer l is the data's p with layer l's replaced
    family = np.broadcast_to(out["p_data"][:, None, None, :], (realisations, len(powers), L, L)).copy()
    eye = np.eye(L, dtype=bool)
    family[:, :, eye] = out["p"]
    held = _holm_rejects(family, alpha)[:, :, eye]  # [R, F, L]
    out["detected"] = held & (out["low"] > 0)
    return out

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
  coefficients, is planted into the data at ``fractions`` of its amplitude (added at every layer
  at once) and the one-hot test rerun with Holm.  The smallest planted fraction from which
  every larger one is detected is the layer's detectable amplitude (NaN if not even the whole),
  with the share of the data's variance it is, and the share of it outside the base's span.

Tables take the residual cache's bare numbers ``numbers`` [N, L+1, d] as
:mod:`.number_bases`; ``layer`` = resid_pre[layer].  numpy and pandas only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...fitting.bases import PERIODS, Basis, Combined
from ...fitting.planes import placebo_sigmas, tens_permuted_circle
from ...stats.multiplicity import holm as step_down
from ...stats.multiplicity import holm_adjusted
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


def helix_t100_part(X: np.ndarray, periods: Sequence[int] = PERIODS) -> np.ndarray:
    """The paper's helix (``periods`` with T = 100) fitted by least squares to the numbers at
    every layer (X [N, L, d], centred), and its own T = 100 part: cos/sin 2 pi n / 100 times
    their fitted coefficients, [N, L, d]."""
    T = tuple(sorted(set(int(t) for t in periods) | {T100}))
    helix = Basis("helix", T, variables=("n",))
    A = helix(np.arange(X.shape[0], dtype=np.float64))
    cols = helix.columns()
    idx = [cols.index(f"cos n T={T100}"), cols.index(f"sin n T={T100}")]
    Xc = (X - X.mean(0)).reshape(X.shape[0], -1)
    C, *_ = np.linalg.lstsq(A, Xc, rcond=None)  # [columns, L d]
    return (A[:, idx] @ C[idx]).reshape(X.shape)


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
      own T = 100 part from which every larger one is detected; NaN if none),
      ``detectable_share`` (the variance share that planted part is of the layer's data) and
      ``detectable_unique_share`` (the share of its part outside the base's span).
    * ``power``: one row per layer x planted fraction: ``layer``, ``fraction``, ``amplitude``
      (RMS over numbers of the planted part's norm), ``variance_share`` (its sum of squares over
      the data's, both about the mean), ``unique_share`` (the same for its part outside the
      base's span: what the test has to find), the test's ``increment``, ``low``, ``high``,
      ``p_holm``, ``detected``.
    """
    X = _numbers(numbers)
    n, layers = X.shape[:2]
    fr = np.asarray(sorted(float(f) for f in fractions))
    if len(fr) == 0 or (fr <= 0).any():
        raise ValueError(f"fractions {list(fractions)}: give one or more positive fractions of the helix's T=100 part")
    if placebos < 1:
        raise ValueError(f"placebos {placebos}: allowed 1 or more (the test's p is at least 1 / (1 + placebos))")
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
    power = power_table(X, sets[VERDICT], folds, seed, n_boot, level, periods, fr, sigmas)
    detect = detectable(power)
    nested = nested.merge(detect.assign(test=VERDICT), on=["layer", "test"], how="left")
    return {"nested": nested.sort_values(["layer", "test"], kind="stable", ignore_index=True), "power": power}


def power_table(X, pair, folds, seed, n_boot, level, periods, fractions, sigmas) -> pd.DataFrame:
    """:func:`nested_tables`' ``power``: the one-hot test rerun with the helix's own T = 100 part
    planted at each fraction of its amplitude (every layer at once, ranked among the same
    placebos, Holm over the layers)."""
    part = helix_t100_part(X, periods)
    spread = ((X - X.mean(0)) ** 2).sum((0, 2))  # [L]
    norm = (part**2).sum((0, 2))
    outside = _outside(pair[0], part)
    rows = []
    for f in fractions:
        got = increments(X + f * part, [pair], folds, seed, n_boot, level)[0]
        ranked = placebo_p(X + f * part, pair[0], kfold(X.shape[0], folds, seed), sigmas)
        v = verdict(got["low"], got["high"], ranked["p"], level)
        rows.append(
            pd.DataFrame(
                {
                    "layer": np.arange(X.shape[1]),
                    "fraction": f,
                    "amplitude": f * np.sqrt(norm / X.shape[0]),
                    "variance_share": f**2 * norm / spread,
                    "unique_share": f**2 * outside / spread,
                    "increment": got["diff"],
                    "low": got["low"],
                    "high": got["high"],
                    "p_holm": v["p_holm"],
                    "detected": v["verdict"] == "detected",
                }
            )
        )
    return pd.concat(rows, ignore_index=True).sort_values(["layer", "fraction"], ignore_index=True)


def detectable(power: pd.DataFrame) -> pd.DataFrame:
    """Per layer, the smallest planted fraction from which every larger one is detected
    (``detectable_fraction``, NaN if the largest is not), its ``detectable_share`` and
    ``detectable_unique_share``."""
    rows = []
    for layer, g in power.sort_values("fraction").groupby("layer", sort=True):
        hit = g["detected"].to_numpy()
        # the first fraction of the last run of detections that reaches the largest fraction
        missed = np.flatnonzero(~hit)
        first = 0 if len(missed) == 0 else missed[-1] + 1
        found = first < len(g)
        rows.append(
            {
                "layer": int(layer),
                "detectable_fraction": float(g["fraction"].iloc[first]) if found else np.nan,
                "detectable_share": float(g["variance_share"].iloc[first]) if found else np.nan,
                "detectable_unique_share": float(g["unique_share"].iloc[first]) if found else np.nan,
            }
        )
    return pd.DataFrame(rows)

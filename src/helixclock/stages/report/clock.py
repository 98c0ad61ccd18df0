"""Fig. 1 from the model's own fits: a, b and a+b on the T = 10 and T = 100 circles.

The paper's Fig. 1 is a hand-drawn schematic of the Clock algorithm: a and b are angles on
circles of period T, and the model "rotates" them to a+b.  helixclock draws it from data
(the docs/outputs.md, "Outputs", fig01_clock): a and b on the circles of Fig. 3's projection (the
a-token helix fit, ``helix/projection.csv``) and a+b on the same periods of the last-token
helix(a+b) fit at the layer where helix(a+b) patches best (Fig. 5, ``clock/last_token.csv``).

helix(a+b) is fitted here exactly as :mod:`helixclock.fitting.fits` fits it (the basis of
:mod:`helixclock.fitting.bases`: a+b / 198, cos and sin of 2 pi (a+b) / T, a constant; PCA to 100
components; least squares; back to the model's space through the PCA), but in numpy so that
the job needs no torch.  A residual's
coordinates in the helix subspace are C^+ (h - mean - c_const) (Fig. 3's projection).  The
prompts sharing a+b are averaged: the table has one row per value of a+b.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...fitting.bases import PERIODS, SUM, Basis
from ...prompts.layout import READINGS
from ...stats.statistics import primary


def sum_basis(s: np.ndarray, periods: Sequence[int] = PERIODS) -> tuple[np.ndarray, list[str]]:
    """helix(a+b) basis [n, 2k + 2]: a+b / 198, cos, sin per period, constant; and its column
    names (the linear one called "linear", as in Fig. 3's projection)."""
    basis = Basis("helix", tuple(periods), variables=(SUM,))
    return basis(np.asarray(s)), ["linear" if c == SUM else c for c in basis.columns()]


@dataclass(frozen=True)
class SumHelix:
    """helix(a+b) fitted to one layer: h ~ mean + B(a+b) C.  mean [d], C [m, d] (last row: the
    constant), columns [m], r2 (in the PCA space, as helixclock.fitting.fits reports it)."""

    mean: np.ndarray
    C: np.ndarray
    columns: list[str]
    r2: float

    def coordinates(self, H: np.ndarray) -> np.ndarray:
        """C^+ (h - mean - c_const) for each row of H [n, d]: [n, m - 1].  A column that is
        zero on the integers (sin 2 pi s / 2) has a zero row in C and coordinate 0."""
        return (np.asarray(H, np.float64) - self.mean - self.C[-1]) @ np.linalg.pinv(self.C[:-1], rcond=1e-8)


def fit_sum_helix(H: np.ndarray, s: np.ndarray, periods: Sequence[int] = PERIODS, n_components: int = 100) -> SumHelix:
    """Least-squares helix(a+b) fit of residuals H [n, d] with sums s [n], via PCA."""
    H = np.asarray(H, dtype=np.float64)
    mean = H.mean(0)
    _, S, Vt = np.linalg.svd(H - mean, full_matrices=False)
    rank = int((S > S[0] * 1e-9).sum()) if len(S) and S[0] > 0 else 1
    V = Vt[: max(1, min(n_components, rank))]  # [p, d]
    P = (H - mean) @ V.T  # [n, p]
    B, names = sum_basis(s, periods)
    live = np.linalg.norm(B, axis=0) > 1e-9 * np.sqrt(len(B))  # sin(2 pi s / 2) = 0 on integers
    coef = np.zeros((B.shape[1], P.shape[1]))
    coef[live] = np.linalg.lstsq(B[:, live], P, rcond=None)[0]  # [m, p]
    ss_res = ((P - B @ coef) ** 2).sum()
    ss_tot = ((P - P.mean(0)) ** 2).sum()
    return SumHelix(mean, coef @ V, names, float(1 - ss_res / ss_tot) if ss_tot > 0 else 1.0)


def best_sum_layer(last_token: pd.DataFrame, fit: str = "helix(a+b)") -> int:
    """The layer where ``fit`` patches best (largest mean LD) in Fig. 5's table
    ``clock/last_token.csv`` (columns layer, fit, ld_mean), read at the last prompt token (the
    reading whose residual the cache holds)."""
    last_token = primary(last_token)
    last_token = last_token[last_token["reading"] == READINGS["last"]]
    part = last_token[last_token["fit"] == fit]
    if part.empty:
        raise KeyError(f"no rows with fit == {fit!r} in the last-token table; fits: {sorted(set(last_token['fit']))}")
    return int(part.loc[part["ld_mean"].idxmax(), "layer"])


def sum_helix_coordinates(
    last: np.ndarray, ab: np.ndarray, layer: int, periods: Sequence[int] = PERIODS, n_components: int = 100
) -> pd.DataFrame:
    """Fig. 1's a+b side: the last-token residuals of correct prompts at ``layer``
    (``last`` [n, L+1, d] or [n, d] of that layer, ``ab`` [n, 2]) fitted with helix(a+b);
    each prompt projected into the helix subspace and averaged over prompts with the same a+b.

    Columns: a+b, n_prompts, linear, cos a+b T=..., sin a+b T=... (each period), layer, r2.
    """
    last = np.asarray(last)
    H = last[:, layer] if last.ndim == 3 else last
    ab = np.asarray(ab)
    s = ab[:, 0] + ab[:, 1]
    fit = fit_sum_helix(H, s, periods, n_components)
    coords = fit.coordinates(H)  # [n, m-1]
    uniq, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
    sums = np.zeros((len(uniq), coords.shape[1]))
    np.add.at(sums, inv, coords)
    out = pd.DataFrame(sums / counts[:, None], columns=fit.columns[:-1])
    out.insert(0, "n_prompts", counts)
    out.insert(0, SUM, uniq)
    out["layer"], out["r2"] = layer, fit.r2
    return out


def angle(cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """The angle of a point on a circle in degrees, in [0, 360)."""
    return np.degrees(np.arctan2(sin, cos)) % 360.0


def available_example(projection: pd.DataFrame, sum_coords: pd.DataFrame, a: int, b: int) -> tuple[int, int]:
    """(a, b) if both are rows of the projection and a+b of the a+b table (the model answered
    some prompt of each correctly), else the available example nearest to it."""
    have_a, have_sum = set(projection["a"].astype(int)), set(sum_coords[SUM].astype(int))
    if a in have_a and b in have_a and a + b in have_sum:
        return a, b
    options = [(abs(x - a) + abs(y - b), x, y) for x in have_a for y in have_a if x + y in have_sum]
    if not options:
        raise KeyError(f"no example a+b with a, b in the projection and a+b in the a+b table (asked {a}+{b})")
    _, x, y = min(options)
    return x, y


def clock_angles(
    projection: pd.DataFrame, sum_coords: pd.DataFrame, a: int, b: int, periods: Sequence[int] = (10, 100)
) -> pd.DataFrame:
    """For the example a+b and each period: the measured angles of a and b (Fig. 3's
    projection) and of a+b (the last-token fit), and the Clock's prediction
    theta(a) + theta(b) mod 360 (an ideal helix puts a at 360 a / T degrees).

    Columns: T, theta_a, theta_b, theta_sum, predicted_sum, ideal_a, ideal_b, ideal_sum, error.
    """
    rows = []
    pa = projection.set_index("a")
    ps = sum_coords.set_index(SUM)
    for T in periods:
        if a not in pa.index or b not in pa.index or a + b not in ps.index:
            raise KeyError(f"example {a}+{b}: a, b must be rows of the projection and a+b of the a+b table")
        th = {
            k: float(angle(src.loc[v, f"cos {var} T={T}"], src.loc[v, f"sin {var} T={T}"]))
            for k, src, v, var in (("a", pa, a, "a"), ("b", pa, b, "a"), ("sum", ps, a + b, SUM))
        }
        pred = (th["a"] + th["b"]) % 360
        err = (th["sum"] - pred + 180) % 360 - 180
        rows.append(
            {
                "T": T,
                "theta_a": th["a"],
                "theta_b": th["b"],
                "theta_sum": th["sum"],
                "predicted_sum": pred,
                "ideal_a": 360 * a / T % 360,
                "ideal_b": 360 * b / T % 360,
                "ideal_sum": 360 * (a + b) / T % 360,
                "error": err,
            }
        )
    return pd.DataFrame(rows)


def clock_coordinates(last_token: pd.DataFrame, cache, periods: Sequence[int] = PERIODS) -> pd.DataFrame:
    """Rule clock_coordinates: Fig. 1's a+b side, the last-token helix(a+b) fit
    (:func:`sum_helix_coordinates`) at the layer where it patches best in Fig. 5's table
    ``last_token`` (:func:`best_sum_layer`); ``cache`` is the residual cache (last, ab)."""
    return sum_helix_coordinates(cache.last, cache.ab, best_sum_layer(last_token), periods)

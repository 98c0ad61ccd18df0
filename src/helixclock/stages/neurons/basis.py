"""The grid and the design of the neuron fit (paper Eq. 5, section 5.4): a, b and a+b over the
100 x 100 grid of N(a, b), the design matrix of :func:`helixclock.stages.neurons.fit.fit_neurons`,
and grids planted from known Eq. 5 parameters (the known answers of the tests and the
benchmark).  Beside Eq. 5, the digit basis of :func:`helixclock.stages.neurons.fit.fit_digit_basis`
(helixclock's extension for models that split numbers into digit tokens): :func:`digit_columns`,
:func:`digit_design`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

PERIODS = (2, 5, 10, 100)
VARIABLES = ("a", "b", "a+b")
LINEAR = ("lin a", "lin b", "lin a+b")
LINEAR_LABEL = {"lin a": "ã", "lin b": "b̃", "lin a+b": "(ã+b̃)"}
DIGITS = ("units", "tens")


def columns(periods: Sequence[int] = PERIODS) -> list[str]:
    """Names of the design's columns, in order: per variable (a, b, a+b), per period, cos and
    sin; then the linear terms (a~, b~, a~+b~) and the constant."""
    cols = [f"{f} {v} T={T}" for v in VARIABLES for T in periods for f in ("cos", "sin")]
    return cols + list(LINEAR) + ["const"]


def grid_values(n_a: int = 100, n_b: int = 100) -> dict[str, np.ndarray]:
    """a, b and a+b over the flattened grid (row-major: point a * n_b + b), each [n_a * n_b]."""
    a, b = np.meshgrid(np.arange(n_a), np.arange(n_b), indexing="ij")
    return {"a": a.ravel(), "b": b.ravel(), "a+b": (a + b).ravel()}


def design(periods: Sequence[int] = PERIODS, n_a: int = 100, n_b: int = 100) -> np.ndarray:
    """The Eq. 5 design matrix X [n_a * n_b, 6 len(periods) + 4] (float64), columns as
    :func:`columns`.  Angles are taken of t mod T (exact on integers) and values below 1e-12
    are set to 0, so sin(pi t) is an exact zero column."""
    _check_periods(periods)
    vals = grid_values(n_a, n_b)
    cols = []
    for v in VARIABLES:
        t = vals[v]
        for T in periods:
            ang = 2 * np.pi * np.mod(t, T) / T
            cols += [np.cos(ang), np.sin(ang)]
    fourier = np.stack(cols, 1)
    fourier[np.abs(fourier) < 1e-12] = 0.0
    at = 2 * vals["a"] / max(n_a - 1, 1) - 1
    bt = 2 * vals["b"] / max(n_b - 1, 1) - 1
    return np.concatenate([fourier, np.stack([at, bt, at + bt, np.ones_like(at)], 1)], 1)


def _check_periods(periods) -> None:
    if len(periods) == 0 or any(not np.isscalar(T) or T <= 0 for T in periods):
        raise ValueError(f"periods={tuple(periods)!r}: need one or more positive periods, e.g. {PERIODS}")


def as_grids(grids) -> torch.Tensor:
    """Grids [n_neurons, n_a, n_b] as a tensor (numpy or torch in)."""
    g = grids if isinstance(grids, torch.Tensor) else torch.as_tensor(np.asarray(grids))
    if g.ndim != 3:
        raise ValueError(f"grids of shape {tuple(g.shape)}: expected [n_neurons, n_a, n_b]")
    return g


def planted_grids(
    amplitude: np.ndarray,
    phase: np.ndarray,
    linear: np.ndarray,
    const: np.ndarray,
    periods: Sequence[int] = PERIODS,
    noise: float = 0.0,
    seed: int = 0,
    n_a: int = 100,
    n_b: int = 100,
) -> np.ndarray:
    """Grids [n, n_a, n_b] built from known Eq. 5 parameters, written out term by term
    (amplitude, phase [n, 3, n_periods]; linear [n, 3]; const [n]) plus Gaussian noise:
    the known answers of the tests and the benchmark's synthetic neurons."""
    vals = grid_values(n_a, n_b)
    at = 2 * vals["a"] / (n_a - 1) - 1
    bt = 2 * vals["b"] / (n_b - 1) - 1
    out = np.asarray(const, dtype=np.float64)[:, None] + np.asarray(linear) @ np.stack([at, bt, at + bt])
    for j, v in enumerate(VARIABLES):
        for k, T in enumerate(periods):
            t = vals[v][None]
            out = out + amplitude[:, j, k, None] * np.cos(2 * np.pi * (t - phase[:, j, k, None]) / T)
    out = out + noise * np.random.default_rng(seed).normal(size=out.shape)
    return out.reshape(len(out), n_a, n_b)


# ----------------------------------------------------------------------------- the digit basis
#
# Neither basis is nested in the other, so comparing their fits says which describes a neuron.
# Shared: cos/sin(2 pi units(a+b) / 10) equal Eq. 5's T=10 a+b terms (units(t) = t mod 10), and
# likewise for a and b.  Only in the digit basis: the tens digits (step functions of t: constant
# over each run of ten), the carry indicator units(a) + units(b) >= 10 and the hundreds digit of
# a+b (the step a+b >= 100).  Only in Eq. 5: its T=2 and T=5 terms (harmonics over the units
# digit, which the digit basis's single T=10 harmonic of units(t) does not contain), its T=100
# terms and its linear terms (t = 10 tens(t) + units(t) is linear in the digits, not in their cos and sin).


def _digits(t: np.ndarray) -> dict[str, np.ndarray]:
    return {"units": np.mod(t, 10), "tens": np.mod(t // 10, 10)}


def digit_columns() -> list[str]:
    """Names of the digit design's columns, in order: per variable (a, b, a+b), per digit
    (units, tens), cos and sin (e.g. "cos units(a)", "sin tens(a+b)"); then "carry",
    "hundreds(a+b)" and "const"."""
    cols = [f"{f} {dig}({v})" for v in VARIABLES for dig in DIGITS for f in ("cos", "sin")]
    return cols + ["carry", "hundreds(a+b)", "const"]


def digit_design(n_a: int = 100, n_b: int = 100) -> np.ndarray:
    """The digit design matrix [n_a * n_b, 15] (float64), columns as :func:`digit_columns`,
    rows as :func:`design` (point a * n_b + b).

    For t in (a, b, a+b), its units digit t mod 10 and tens digit floor(t / 10) mod 10, each
    digit d as cos(2 pi d / 10) and sin(2 pi d / 10) (d is an integer, so the angles are exact;
    values below 1e-12 are set to 0, as in :func:`design`); the carry indicator
    [units(a) + units(b) >= 10]; the hundreds digit of a+b, which for operands below 100 is
    exactly the indicator [a + b >= 100]; and the constant.  Operands have at most two digits:
    n_a, n_b <= 100.  On grids too small for a column to vary (n_a + n_b <= 101: no a+b >= 100)
    the column is constant or zero and the fit's minimum norm handles it."""
    if not (1 <= n_a <= 100 and 1 <= n_b <= 100):
        raise ValueError(f"grid {n_a} x {n_b}: the digit basis is for operands of at most two digits (1..100 each)")
    vals = grid_values(n_a, n_b)
    cols = []
    for v in VARIABLES:
        for d in _digits(vals[v]).values():
            ang = 2 * np.pi * d / 10
            cols += [np.cos(ang), np.sin(ang)]
    carry = np.mod(vals["a"], 10) + np.mod(vals["b"], 10) >= 10
    hundreds = vals["a+b"] >= 100
    X = np.stack(cols + [carry, hundreds, np.ones(len(carry))], 1).astype(np.float64)
    X[np.abs(X) < 1e-12] = 0.0
    return X

"""The grid and the design of the neuron fit (paper Eq. 5, section 5.4): a, b and a+b over the
100 x 100 grid of N(a, b), the design matrix of :func:`helixclock.stages.neurons.fit.fit_neurons`,
and grids planted from known Eq. 5 parameters (the known answers of the tests and the
benchmark).  Beside Eq. 5, the digit basis of :func:`helixclock.stages.neurons.fit.fit_digit_basis`
(helixclock's extension for models that split numbers into digit tokens): :func:`digit_columns`,
:func:`digit_design`, compared at equal capacity with Eq. 5 written in as many columns
(:func:`eq5_side_design`), and the digit one-hot (:func:`onehot_design`), the base of a nested
T = 100 increment (:mod:`helixclock.stages.neurons.capacity`)."""

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
# Neither basis is nested in the other, so comparing their fits says which describes a neuron,
# and they are compared at equal capacity (docs/several-tokens.md, "Numbers of several tokens"): 24 columns
# each, constant included, the rank of Eq. 5's design on the grid.  Shared, the *core*
# (:func:`core_columns`, 16 columns): the constant and the units-digit harmonics T = 10, 5, 2 of
# a, b and a+b (cos/sin 2 pi t / T for T = 10, 5 and cos pi t: functions of t mod 10, equal to
# Eq. 5's T = 10, 5, 2 terms; sin pi t is 0 on the integers).  Only in Eq. 5 (8 columns): the
# linear terms of a and b and cos/sin T = 100 of a, b and a+b (:func:`eq5_side_design`, the
# same span as Eq. 5's own design).  Only in the digit basis (8 columns): cos/sin of the tens
# digits of a, b and a+b (step functions of t: constant over each run of ten), the carry
# indicator units(a) + units(b) >= 10 and the hundreds digit of a+b (the step a+b >= 100).


def _digits(t: np.ndarray) -> dict[str, np.ndarray]:
    return {"units": np.mod(t, 10), "tens": np.mod(t // 10, 10)}


def _exact(cols: list) -> np.ndarray:
    X = np.stack(cols, 1).astype(np.float64)
    X[np.abs(X) < 1e-12] = 0.0
    return X


def core_columns() -> list[str]:
    """The 15 shared harmonic columns: per variable (a, b, a+b) "cos units(t) T=10", "sin ... T=10",
    "cos ... T=5", "sin ... T=5", "cos units(t) T=2" (the constant is added by each side)."""
    return [f"{f} units({v}) T={T}" for v in VARIABLES for T, fs in UNITS_HARMONICS for f in fs]


UNITS_HARMONICS = ((10, ("cos", "sin")), (5, ("cos", "sin")), (2, ("cos",)))


def _core(vals: dict) -> list:
    cols = []
    for v in VARIABLES:
        u = _digits(vals[v])["units"]
        for T, fs in UNITS_HARMONICS:
            ang = 2 * np.pi * np.mod(u, T) / T
            cols += [np.cos(ang) if f == "cos" else np.sin(ang) for f in fs]
    return cols


def digit_columns() -> list[str]:
    """Names of the digit design's 24 columns, in order: the core (:func:`core_columns`), then per
    variable "cos tens(t)", "sin tens(t)", then "carry", "hundreds(a+b)" and "const"."""
    tens = [f"{f} tens({v})" for v in VARIABLES for f in ("cos", "sin")]
    return core_columns() + tens + ["carry", "hundreds(a+b)", "const"]


def _check_grid(n_a: int, n_b: int) -> None:
    if not (1 <= n_a <= 100 and 1 <= n_b <= 100):
        raise ValueError(f"grid {n_a} x {n_b}: the digit basis is for operands of at most two digits (1..100 each)")


def digit_design(n_a: int = 100, n_b: int = 100) -> np.ndarray:
    """The digit design matrix [n_a * n_b, 24] (float64), columns as :func:`digit_columns`,
    rows as :func:`design` (point a * n_b + b).

    The core's units-digit harmonics of a, b and a+b; for each t its tens digit
    floor(t / 10) mod 10 as cos(2 pi d / 10) and sin(2 pi d / 10); the carry indicator
    [units(a) + units(b) >= 10]; the hundreds digit of a+b, which for operands below 100 is
    exactly the indicator [a + b >= 100]; and the constant (digits are integers, so the angles
    are exact; values below 1e-12 are set to 0, as in :func:`design`).  Operands have at most
    two digits: n_a, n_b <= 100.  On grids or cells where a column cannot vary (no a+b >= 100,
    or only a+b >= 100) it is constant or zero and the fit's minimum norm handles it."""
    _check_grid(n_a, n_b)
    vals = grid_values(n_a, n_b)
    tens = []
    for v in VARIABLES:
        ang = 2 * np.pi * _digits(vals[v])["tens"] / 10
        tens += [np.cos(ang), np.sin(ang)]
    carry = np.mod(vals["a"], 10) + np.mod(vals["b"], 10) >= 10
    hundreds = vals["a+b"] >= 100
    return _exact(_core(vals) + tens + [carry, hundreds, np.ones(len(carry))])


def eq5_side_columns() -> list[str]:
    """Names of :func:`eq5_side_design`'s 24 columns: the core, "lin a", "lin b", per variable
    "cos t T=100", "sin t T=100", and "const"."""
    t100 = [f"{f} {v} T=100" for v in VARIABLES for f in ("cos", "sin")]
    return core_columns() + ["lin a", "lin b"] + t100 + ["const"]


def eq5_side_design(n_a: int = 100, n_b: int = 100) -> np.ndarray:
    """Eq. 5 written in 24 columns [n_a * n_b, 24]: the core, the scaled linear terms a~ and b~
    (a~ + b~ is their sum), cos/sin 2 pi t / 100 of a, b and a+b, and the constant: the span of
    :func:`design` for the paper's periods (its 28 columns have rank 24)."""
    vals = grid_values(n_a, n_b)
    lin = [2 * vals["a"] / max(n_a - 1, 1) - 1, 2 * vals["b"] / max(n_b - 1, 1) - 1]
    t100 = []
    for v in VARIABLES:
        ang = 2 * np.pi * np.mod(vals[v], 100) / 100
        t100 += [np.cos(ang), np.sin(ang)]
    return _exact(_core(vals) + lin + t100 + [np.ones(n_a * n_b)])


def onehot_columns() -> list[str]:
    """Names of :func:`onehot_design`'s columns: per variable and digit (units, tens) the
    indicators "units(a)=1" .. "units(a)=9", then "hundreds(a+b)", "carry", "const"."""
    return [f"{dig}({v})={k}" for v in VARIABLES for dig in DIGITS for k in range(1, 10)] + [
        "hundreds(a+b)",
        "carry",
        "const",
    ]


def onehot_design(n_a: int = 100, n_b: int = 100, t100: bool = False) -> np.ndarray:
    """The digit one-hot design [n_a * n_b, 57] (with ``t100``, 63): one indicator per nonzero
    units and tens digit of a, b and a+b (9 a digit; digit 0 is the constant's), the hundreds
    digit of a+b, the carry and the constant; any function of each digit alone, summed.  It
    holds the core, the digit basis and Eq. 5 but for its T = 100 terms (a = 10 tens(a) +
    units(a) is a sum of such functions): the base of the nested T = 100 increment, which
    ``t100`` adds (cos/sin 2 pi t / 100 of a, b and a+b, last before the constant)."""
    _check_grid(n_a, n_b)
    vals = grid_values(n_a, n_b)
    cols = []
    for v in VARIABLES:
        for d in _digits(vals[v]).values():
            cols += [(d == k) for k in range(1, 10)]
    cols += [vals["a+b"] >= 100, np.mod(vals["a"], 10) + np.mod(vals["b"], 10) >= 10]
    if t100:
        for v in VARIABLES:
            ang = 2 * np.pi * np.mod(vals[v], 100) / 100
            cols += [np.cos(ang), np.sin(ang)]
    return _exact(cols + [np.ones(n_a * n_b)])

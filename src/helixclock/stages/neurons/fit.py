"""The helix-inspired fit of neuron preactivations (paper Eq. 5, section 5.4, appendix D.2).

For a top neuron n of layer l, ``N(a, b)`` is its preactivation at the last token of the
prompt a+b, over the full 100 x 100 grid (grids are ``[n_neurons, n_a, n_b]``, row a, column
b).  The paper (Eq. 5) models it as

    N(a, b) = sum_{t in (a, b, a+b)} c_t t + sum_{T in periods} c_{T,t} cos(2 pi (t - d_{T,t}) / T);

helixclock fits

    N^(a, b) = sum_{T in periods} sum_{t in (a, b, a+b)} A_{T,t} cos(2 pi (t - d_{T,t}) / T)
               + w_a a~ + w_b b~ + w_ab (a~ + b~) + c,

with a~ = 2 a / (n_a - 1) - 1 and b~ = 2 b / (n_b - 1) - 1 scaled to [-1, 1].  Two choices
differ from the paper's form (docs/differences.md, "Differences from the authors' code"):

* the constant c: the paper's form has none, so a neuron's mean (a GELU neuron's
  preactivation is mostly negative) would have to be carried by the linear terms, tilting
  them; every cosine sums to ~0 over the grid and cannot carry it.  With c the fit loses
  nothing the paper's form has.
* the scaled linear terms: with c in the model, w a~ = (2 w / (n_a - 1)) a - w is the paper's
  c_a a plus a constant, so the fitted grid, its NRMSE and every Fourier amplitude are the
  same as with raw a, b, a+b; only the linear coefficients are in other units (w = c_a
  (n_a - 1) / 2, the term's half-range over the grid).  Scaled, the paper's SGD (lr 0.1) is
  stable; on raw t up to 198 the curvature along c_{a+b} is ~1e4 and lr 0.1 diverges.

Since
A cos(w (t - d)) = alpha cos(w t) + beta sin(w t) with alpha = A cos(w d), beta = A sin(w d),
the model is *linear* in (alpha, beta, w, c): least squares gives its global optimum, and
because every neuron is fitted on the same grid, one SVD of the shared design matrix and
one matrix product fit all neurons at once.  Amplitudes are sqrt(alpha^2 + beta^2)
and phases d = atan2(beta, alpha) / w (in units of t, in [0, T)).

The design is rank-deficient on purpose (it is the paper's functional form): the column
a~ + b~ is the sum of the a~ and b~ columns, and sin(2 pi t / 2) = sin(pi t) is zero on the
integers (the columns are set to exactly 0).  The answer is the *minimum-norm* least-squares
solution (the pseudo-inverse, from the design's SVD): the sin T=2 coefficients are 0, so the
T=2 phases are 0 or 1 (the sign of the cosine), and a slope along a~ + b~ is shared between
w_a, w_b and w_ab as (1/3, 1/3, 2/3) of it.  Only w_a + w_ab and w_b + w_ab (the slopes along a~ and b~) are
identified; the fitted grid, RMSE and every Fourier amplitude are unaffected.

The paper fitted Eq. 5 by full-batch SGD (lr 0.1, 2,500 epochs, cosine annealing, MSE,
unseeded N(0, 1) init) on the amplitude/phase parametrisation; ``fit_neurons(method="sgd")``
does the same, seeded, for all neurons in one tensor program (see :func:`sgd_fit` for what it
reaches and why it can fall short of the least-squares optimum).

Models that split numbers into digit tokens are studied at each answer position, and there
N(a, b) exists only on part of the grid (at the position that predicts the answer's 2nd token,
only where a+b >= 10): ``fit_neurons(mask=...)`` fits Eq. 5 on those cells only, and
:func:`fit_digit_basis` fits helixclock's digit basis (:func:`.basis.digit_design`, 24 columns:
Eq. 5's capacity, with its units-digit harmonics as a common core) beside it with the same
closed form; :func:`compare_bases` tabulates which fits each neuron better, and
:mod:`.capacity` bootstraps the paired comparison over units.

The basis is in :mod:`.basis`, the SGD in :mod:`.sgd`, Fig. D12's periods in :mod:`.periods`,
tables and files in :mod:`.neuron_files`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd
import torch

from ...project.io import to_numpy
from .basis import LINEAR, LINEAR_LABEL, PERIODS, VARIABLES, as_grids, columns, design, digit_columns, digit_design
from .periods import chunk_periods, sums_index
from .sgd import sgd_fit

METHODS = ("lstsq", "sgd")


# ----------------------------------------------------------------------------- the fits


@dataclass
class NeuronFits:
    """Eq. 5 fits of n neurons.

    coef [n, m]: coefficients of the design's columns (:func:`columns`): (alpha, beta) per
    (variable, period), the linear weights (w_a, w_b, w_ab) and the constant.
    rmse, nrmse, value_range [n]: fit error, RMSE / (max N - min N), and max N - min N.
    dominant: the dominant period of N over a, b and a+b per neuron (:func:`.periods.grid_periods`).
    layer, neuron [n]: the neurons' ids (-1 where unknown).
    info: the SGD's hyperparameters; for a masked fit (``fit_neurons(mask=...)``) "cells" and
    "n_params" (kept in ``info`` so that the HDF5 files of :mod:`.neuron_files` carry them).
    """

    periods: tuple[int, ...]
    coef: np.ndarray
    rmse: np.ndarray
    nrmse: np.ndarray
    value_range: np.ndarray
    dominant: dict[str, np.ndarray]
    layer: np.ndarray
    neuron: np.ndarray
    method: str = "lstsq"
    grid_shape: tuple[int, int] = (100, 100)
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.coef)

    @property
    def columns(self) -> list[str]:
        return columns(self.periods)

    @property
    def cells(self) -> int | None:
        """The number of grid cells fitted; None for the whole grid (``mask=None``)."""
        return self.info.get("cells")

    @property
    def n_params(self) -> int:
        """The number of parameters the fit identifies: the rank of the Eq. 5 design (of its
        rows in the mask, for a masked fit), e.g. 24 of the 28 columns on the 100 x 100 grid."""
        if "n_params" in self.info:
            return int(self.info["n_params"])
        return design_rank(self.periods, *self.grid_shape)

    @property
    def _pairs(self) -> np.ndarray:
        """[n, 3 variables, n_periods, 2] the (alpha, beta) coefficients."""
        k = 6 * len(self.periods)
        return self.coef[:, :k].reshape(len(self), len(VARIABLES), len(self.periods), 2)

    @property
    def alpha(self) -> np.ndarray:
        """[n, 3, n_periods] coefficients of cos(2 pi t / T), t in (a, b, a+b)."""
        return self._pairs[..., 0]

    @property
    def beta(self) -> np.ndarray:
        """[n, 3, n_periods] coefficients of sin(2 pi t / T)."""
        return self._pairs[..., 1]

    @property
    def amplitude(self) -> np.ndarray:
        """[n, 3, n_periods] A_{T,t} = sqrt(alpha^2 + beta^2)."""
        return np.hypot(self.alpha, self.beta)

    @property
    def phase(self) -> np.ndarray:
        """[n, 3, n_periods] d_{T,t} in units of t, in [0, T): A cos(2 pi (t - d) / T)."""
        T = np.asarray(self.periods, dtype=np.float64)
        d = np.mod(np.arctan2(self.beta, self.alpha) * T / (2 * np.pi), T)
        return np.where(d > T * (1 - 1e-12), 0.0, d)  # -0.0 wraps to T: call it 0

    @property
    def linear(self) -> np.ndarray:
        """[n, 3] the (minimum-norm) weights w_a, w_b, w_ab of a~, b~, a~+b~."""
        k = 6 * len(self.periods)
        return self.coef[:, k : k + 3]

    @property
    def const(self) -> np.ndarray:
        return self.coef[:, -1]

    @property
    def ab_fraction(self) -> np.ndarray:
        """[n] the paper's "fraction of their fit that helix(a+b) explains" (section 5.4: "the
        magnitude of c_{T,a+b} terms" over "the total magnitude of c_{Tt} terms"):
        sum_T A_{T,a+b} / sum_T sum_t A_{T,t} (amplitudes, linear terms excluded; NaN if no
        Fourier term at all)."""
        A = self.amplitude
        total = A.sum((1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, A[:, 2].sum(1) / np.where(total > 0, total, 1), np.nan)

    def predict(self, index=None) -> np.ndarray:
        """Fitted grids N^(a, b) [k, n_a, n_b] of the neurons ``index`` (default all; mind
        the memory: 80 kB per neuron)."""
        coef = self.coef if index is None else self.coef[np.atleast_1d(index)]
        X = design(self.periods, *self.grid_shape)
        return (coef @ X.T).reshape(len(coef), *self.grid_shape)

    def terms(self, linear: bool = True) -> list[list[tuple[float, str]]]:
        """Per neuron, its terms as (size, text), largest first.  The size of a cosine is its
        amplitude A; of a linear term w x~ it is |w| (x~ spans [-1, 1], so both are the
        term's half-range)."""
        A, d = self.amplitude, self.phase
        out = []
        for i in range(len(self)):
            items = [
                (A[i, j, k], _cos_text(A[i, j, k], T, v, d[i, j, k]))
                for j, v in enumerate(VARIABLES)
                for k, T in enumerate(self.periods)
            ]
            if linear:
                items += [(abs(w), f"{w:.2f} {LINEAR_LABEL[name]}") for w, name in zip(self.linear[i], LINEAR)]
            out.append(sorted(items, key=lambda x: -x[0]))
        return out

    def leading_terms(self, k: int = 3, linear: bool = True) -> list[str]:
        """Per neuron, its k largest terms joined by " + ", e.g.
        "1.23 cos(2π/10 (a+b − 3.4)) + 0.80 cos(2π/2 (a − 1.0))"."""
        return [" + ".join(text for _, text in items[:k]) for items in self.terms(linear)]

    def top_term(self) -> pd.DataFrame:
        """Per neuron, the largest Fourier term: variable, period, amplitude; and the period
        of the largest a+b term (figF4 groups neurons by it)."""
        A = self.amplitude
        n, nv, nt = A.shape
        flat = A.reshape(n, -1).argmax(1)
        j, k = np.unravel_index(flat, (nv, nt))
        T = np.asarray(self.periods)
        return pd.DataFrame(
            {
                "top_variable": np.asarray(VARIABLES)[j],
                "top_period": T[k],
                "top_amplitude": A[np.arange(n), j, k],
                "top_ab_period": T[A[:, 2].argmax(1)],
            }
        )


def _cos_text(A: float, T, var: str, d: float) -> str:
    return f"{A:.2f} cos(2π/{T:g} ({var} − {d:.1f}))"


def fit_neurons(
    grids,
    periods: Sequence[int] = PERIODS,
    method: str = "lstsq",
    layer=None,
    neuron=None,
    chunk_size: int = 1024,
    mask=None,
    **sgd,
) -> NeuronFits:
    """Fit Eq. 5 to every neuron's grid at once.

    grids: [n, n_a, n_b] preactivations N(a, b) (torch tensor on any device, or numpy);
    work is float64 on the grids' device, ``chunk_size`` neurons at a time (memory only).
    method: "lstsq" (closed form, the global optimum; minimum-norm where the design is
    collinear) or "sgd" (the paper's optimiser; keywords of :func:`sgd_fit`).
    layer, neuron: ids [n] carried into the tables.
    mask: None (every cell) or a boolean array [n_a, n_b] of the cells where N(a, b) exists,
    shared by all neurons (e.g. a+b >= 10 at the answer position that predicts a digit-tokenised
    answer's 2nd token).  The fit, rmse (sqrt(SSE / number of masked cells)), nrmse and
    value_range (max - min over the masked cells) use the masked cells only; cells outside
    the mask may hold NaN and reach no output.  The figD12 periods need a whole grid: they
    are taken from each neuron's grid with the cells outside the mask set to that neuron's
    mean over its masked cells.  Only with method "lstsq".

    How: the thin SVD of the shared design, X = U S V' (rank r), gives the minimum-norm
    solution theta* = V S^-1 U'y and, with U orthonormal and the constant in span(X), the
    residual sum of squares ||y - X theta*||^2 = ||y - mean y||^2 - ||U'(y - mean y)||^2.  Per
    chunk that is one float64 pass over the grids and one product with U [P, r]; no residual
    grid is formed.  Any other theta (the SGD's) has SSE = SSE* + (theta - theta*)' X'X
    (theta - theta*) (the residual of theta* is orthogonal to span(X)).  The figD12 periods
    are taken from the same float64 chunk.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r}; allowed: {', '.join(METHODS)}")
    if sgd and method != "sgd":
        raise ValueError(f"SGD options {sorted(sgd)} given with method={method!r}")
    if mask is not None and method != "lstsq":
        raise ValueError(f"mask given with method={method!r}: a mask is allowed only with method='lstsq'")
    periods = tuple(int(T) if float(T).is_integer() else float(T) for T in periods)
    g = as_grids(grids)
    n, n_a, n_b = g.shape
    mask = _as_mask(mask, n_a, n_b)
    X = torch.as_tensor(design(periods, n_a, n_b), device=g.device)  # [P, m]
    coef, sse, vrange, dominant, rank = _least_squares(g, X, chunk_size, mask)
    info = {} if mask is None else {"cells": int(mask.sum()), "n_params": rank}
    if method == "sgd":
        theta, info = sgd_fit(g.reshape(n, -1), X, periods, **sgd)
        # the same fitted grid, written as its minimum-norm coefficients (drops what the SGD
        # put on the zero sin T=2 columns and along the collinear linear terms)
        theta = theta @ (torch.linalg.pinv(X, rtol=RTOL) @ X).T
        delta = theta - coef
        sse = sse + (delta @ (X.T @ X) * delta).sum(1)
        coef = theta
    rmse, nrmse, vrange = _errors(sse, vrange, X.shape[0] if mask is None else int(mask.sum()))
    ids = np.full(n, -1, dtype=np.int64)
    return NeuronFits(
        periods,
        to_numpy(coef),
        rmse,
        nrmse,
        vrange,
        dominant,
        _ids(layer, ids),
        _ids(neuron, ids),
        method,
        (n_a, n_b),
        info,
    )


RTOL = 1e-10  # singular values below RTOL * the largest are the design's exact collinearities


def _least_squares(g: torch.Tensor, X: torch.Tensor, chunk_size: int, mask=None, dominant: bool = True):
    """Minimum-norm coefficients [n, m], residual sums of squares [n], max - min [n], the
    figD12 periods (None unless ``dominant``) and the rank r of the design X [P, m] (rows in
    the mask), for grids g [n, n_a, n_b]; with ``mask`` [n_a, n_b] (numpy bool) the fit uses the
    masked cells only (:func:`fit_neurons`).  The one solver of :func:`fit_neurons` and
    :func:`fit_digit_basis`."""
    n, n_a, n_b = g.shape
    rows = None if mask is None else torch.as_tensor(np.flatnonzero(mask), device=g.device)
    if rows is not None:
        X = X[rows]  # the constant column stays in span(X): the SSE identity below holds
        keep = torch.as_tensor(mask, device=g.device)
    U, S, Vh = torch.linalg.svd(X, full_matrices=False)
    r = int((S > RTOL * S[0]).sum())
    U, W = U[:, :r], (Vh[:r].T / S[:r]).T  # [P, r], [r, m]: theta* = (y U) W
    u1 = U.sum(0)  # U' 1
    s, counts = sums_index(n_a, n_b, g.device)
    coef, sse, vrange, periods = [], [], [], {v: [] for v in ("a+b", "a", "b")}
    for i in range(0, n, chunk_size):
        x = g[i : i + chunk_size].double()  # [k, n_a, n_b]
        y = x.reshape(len(x), -1)
        if rows is not None:
            y = y[:, rows]  # drops the cells outside the mask (NaN allowed there)
        z = y @ U  # [k, r]
        var, mean = torch.var_mean(y, 1, correction=0)
        zc = z - mean[:, None] * u1  # U'(y - mean)
        sse.append((X.shape[0] * var - zc.pow(2).sum(1)).clamp_min(0))
        coef.append(z @ W)
        lo, hi = torch.aminmax(y, dim=1)
        vrange.append(hi - lo)
        if dominant:
            if rows is not None:
                x = torch.where(keep, x, mean[:, None, None])  # outside the mask: the masked mean
            for v, p in chunk_periods(x, s, counts).items():
                periods[v].append(p)
    found = {v: np.concatenate(p) for v, p in periods.items()} if dominant else None
    return torch.cat(coef), torch.cat(sse), torch.cat(vrange), found, r


def _errors(sse: torch.Tensor, vrange: torch.Tensor, cells: int):
    """rmse = sqrt(SSE / cells), nrmse = rmse / value_range (NaN where the range is 0) and
    value_range, as numpy [n]."""
    rmse = to_numpy((sse / cells).sqrt())
    vrange = to_numpy(vrange)
    with np.errstate(invalid="ignore", divide="ignore"):
        nrmse = np.where(vrange > 0, rmse / np.where(vrange > 0, vrange, 1), np.nan)
    return rmse, nrmse, vrange


def _as_mask(mask, n_a: int, n_b: int) -> np.ndarray | None:
    """None, or the mask as a numpy bool array [n_a, n_b] with at least one cell."""
    if mask is None:
        return None
    m = to_numpy(mask) if isinstance(mask, torch.Tensor) else np.asarray(mask)
    if m.dtype != np.bool_ or m.shape != (n_a, n_b):
        raise ValueError(f"mask of dtype {m.dtype} and shape {m.shape}: expected a boolean array {(n_a, n_b)}")
    if not m.any():
        raise ValueError("mask selects no cell: N(a, b) must exist somewhere on the grid")
    return m


def design_rank(periods: Sequence[int] = PERIODS, n_a: int = 100, n_b: int = 100) -> int:
    """The rank of the Eq. 5 design (:func:`.basis.design`) on the whole grid, by the rule of
    the fit (singular values above RTOL times the largest): the number of parameters Eq. 5
    identifies (24 of 28 columns for the paper's periods on 100 x 100: three sin(pi t) columns
    are zero and a~ + b~ is collinear)."""
    return _design_rank(tuple(periods), int(n_a), int(n_b))


@lru_cache(maxsize=16)
def _design_rank(periods: tuple, n_a: int, n_b: int) -> int:
    S = np.linalg.svd(design(periods, n_a, n_b), compute_uv=False)
    return int((S > RTOL * S[0]).sum())


# ----------------------------------------------------------------------------- the digit basis


@dataclass
class DigitFits:
    """Fits of the digit basis (:func:`.basis.digit_design`) to n neurons.

    coef [n, m]: coefficients of :func:`.basis.digit_columns` (minimum-norm).
    rmse, nrmse, value_range [n]: as :class:`NeuronFits` (over the masked cells for a masked fit).
    layer, neuron [n]: the neurons' ids (-1 where unknown).
    n_params: the rank of the (masked) digit design.  cells: cells fitted, None for the whole grid.
    """

    coef: np.ndarray
    rmse: np.ndarray
    nrmse: np.ndarray
    value_range: np.ndarray
    layer: np.ndarray
    neuron: np.ndarray
    n_params: int
    grid_shape: tuple[int, int] = (100, 100)
    cells: int | None = None

    def __len__(self) -> int:
        return len(self.coef)

    @property
    def columns(self) -> list[str]:
        return digit_columns()

    def predict(self, index=None) -> np.ndarray:
        """Fitted grids [k, n_a, n_b] of the neurons ``index`` (default all), on every cell."""
        coef = self.coef if index is None else self.coef[np.atleast_1d(index)]
        return (coef @ digit_design(*self.grid_shape).T).reshape(len(coef), *self.grid_shape)


def fit_digit_basis(grids, mask=None, layer=None, neuron=None, chunk_size: int = 1024) -> DigitFits:
    """Fit the digit basis (:func:`.basis.digit_design`: the units-digit harmonics T = 10, 5, 2
    and cos/sin of the tens digit of a, b, a+b, the carry, a+b's hundreds digit and a constant;
    24 columns, the rank of Eq. 5's design) to every neuron's grid at once,
    by the closed-form least squares of :func:`fit_neurons` (same arguments; same meaning of
    ``mask``, rmse, nrmse, value_range).  helixclock's extension beside Eq. 5 (section 5.4)
    for models that split numbers into digit tokens; :func:`compare_bases` puts the two side
    by side."""
    g = as_grids(grids)
    n, n_a, n_b = g.shape
    mask = _as_mask(mask, n_a, n_b)
    X = torch.as_tensor(digit_design(n_a, n_b), device=g.device)
    coef, sse, vrange, _, rank = _least_squares(g, X, chunk_size, mask, dominant=False)
    cells = X.shape[0] if mask is None else int(mask.sum())
    rmse, nrmse, vrange = _errors(sse, vrange, cells)
    ids = np.full(n, -1, dtype=np.int64)
    return DigitFits(
        to_numpy(coef),
        rmse,
        nrmse,
        vrange,
        _ids(layer, ids),
        _ids(neuron, ids),
        rank,
        (n_a, n_b),
        None if mask is None else cells,
    )


def compare_bases(eq5: NeuronFits, digits: DigitFits) -> pd.DataFrame:
    """One row per neuron: layer, neuron, nrmse_eq5, nrmse_digits, n_params_eq5,
    n_params_digits (both 24 on the whole grid: a comparison at equal capacity; 23 for the
    digits at the hundreds place, where a+b's hundreds digit is constant) and ``better``:
    "digits" where the digit basis's NRMSE is lower, else
    "Eq. 5" (ties, and NaN NRMSEs of constant grids, go to Eq. 5).  The two fits must be of
    the same neurons (ids) on the same cells."""
    if len(eq5) != len(digits) or not (
        np.array_equal(eq5.layer, digits.layer) and np.array_equal(eq5.neuron, digits.neuron)
    ):
        raise ValueError("compare_bases: the Eq. 5 and digit fits are of different neurons (layer, neuron ids)")
    if eq5.grid_shape != digits.grid_shape or eq5.cells != digits.cells:
        raise ValueError(
            f"compare_bases: fits on different cells (Eq. 5: {eq5.grid_shape}, {eq5.cells} cells; "
            f"digits: {digits.grid_shape}, {digits.cells} cells; None = the whole grid)"
        )
    return pd.DataFrame(
        {
            "layer": eq5.layer,
            "neuron": eq5.neuron,
            "nrmse_eq5": eq5.nrmse,
            "nrmse_digits": digits.nrmse,
            "n_params_eq5": eq5.n_params,
            "n_params_digits": digits.n_params,
            "better": np.where(digits.nrmse < eq5.nrmse, "digits", "Eq. 5"),
        }
    )


def _ids(x, default):
    if x is None:
        return default.copy()
    x = np.asarray(x.cpu() if isinstance(x, torch.Tensor) else x, dtype=np.int64)
    if x.shape != default.shape:
        raise ValueError(f"ids of shape {x.shape}: expected one per neuron, {default.shape}")
    return x

"""The helix-inspired fit of neuron preactivations (paper Eq. 5, section 5.4, appendix D.2).

For a top neuron n of layer l, ``N(a, b)`` is its preactivation at the last token of the
prompt a+b, over the full 100 x 100 grid (grids are ``[n_neurons, n_a, n_b]``, row a, column
b).  The paper (Eq. 5) models it as

    N(a, b) = sum_{t in (a, b, a+b)} c_t t + sum_{T in periods} c_{T,t} cos(2 pi (t - d_{T,t}) / T);

helixclock fits

    N^(a, b) = sum_{T in periods} sum_{t in (a, b, a+b)} A_{T,t} cos(2 pi (t - d_{T,t}) / T)
               + w_a a~ + w_b b~ + w_ab (a~ + b~) + c,

with a~ = 2 a / (n_a - 1) - 1 and b~ = 2 b / (n_b - 1) - 1 scaled to [-1, 1].  Two choices
differ from the paper's form (README, "Differences from the authors' code"):

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

Also here: the dominant-period estimator of figD12 (:func:`dominant_periods`), tidy tables
for the pipeline (:func:`neuron_table`, :func:`term_table`) and HDF5 save/load of fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ... import fourier
from ...io import to_numpy

PERIODS = (2, 5, 10, 100)
VARIABLES = ("a", "b", "a+b")
LINEAR = ("lin a", "lin b", "lin a+b")
LINEAR_LABEL = {"lin a": "ã", "lin b": "b̃", "lin a+b": "(ã+b̃)"}
METHODS = ("lstsq", "sgd")


# ----------------------------------------------------------------------------- the basis

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


# ----------------------------------------------------------------------------- the fits

@dataclass
class NeuronFits:
    """Eq. 5 fits of n neurons.

    coef [n, m]: coefficients of the design's columns (:func:`columns`): (alpha, beta) per
    (variable, period), the linear weights (w_a, w_b, w_ab) and the constant.
    rmse, nrmse, value_range [n]: fit error, RMSE / (max N - min N), and max N - min N.
    dominant: the dominant period of N over a, b and a+b per neuron (:func:`dominant_periods`).
    layer, neuron [n]: the neurons' ids (-1 where unknown).
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
        return self.coef[:, k:k + 3]

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
            items = [(A[i, j, k], _cos_text(A[i, j, k], T, v, d[i, j, k]))
                     for j, v in enumerate(VARIABLES) for k, T in enumerate(self.periods)]
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
        return pd.DataFrame({"top_variable": np.asarray(VARIABLES)[j], "top_period": T[k],
                             "top_amplitude": A[np.arange(n), j, k],
                             "top_ab_period": T[A[:, 2].argmax(1)]})


def _cos_text(A: float, T, var: str, d: float) -> str:
    return f"{A:.2f} cos(2π/{T:g} ({var} − {d:.1f}))"


def _as_tensor(grids) -> torch.Tensor:
    g = grids if isinstance(grids, torch.Tensor) else torch.as_tensor(np.asarray(grids))
    if g.ndim != 3:
        raise ValueError(f"grids of shape {tuple(g.shape)}: expected [n_neurons, n_a, n_b]")
    return g


def fit_neurons(grids, periods: Sequence[int] = PERIODS, method: str = "lstsq",
                layer=None, neuron=None, chunk_size: int = 1024, **sgd) -> NeuronFits:
    """Fit Eq. 5 to every neuron's grid at once.

    grids: [n, n_a, n_b] preactivations N(a, b) (torch tensor on any device, or numpy);
    work is float64 on the grids' device, ``chunk_size`` neurons at a time (memory only).
    method: "lstsq" (closed form, the global optimum; minimum-norm where the design is
    collinear) or "sgd" (the paper's optimiser; keywords of :func:`sgd_fit`).
    layer, neuron: ids [n] carried into the tables.

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
    periods = tuple(int(T) if float(T).is_integer() else float(T) for T in periods)
    g = _as_tensor(grids)
    n, n_a, n_b = g.shape
    X = torch.as_tensor(design(periods, n_a, n_b), device=g.device)  # [P, m]
    coef, sse, vrange, dominant = _least_squares(g, X, chunk_size)
    info = {}
    if method == "sgd":
        theta, info = sgd_fit(g.reshape(n, -1), X, periods, **sgd)
        # the same fitted grid, written as its minimum-norm coefficients (drops what the SGD
        # put on the zero sin T=2 columns and along the collinear linear terms)
        theta = theta @ (torch.linalg.pinv(X, rtol=RTOL) @ X).T
        delta = theta - coef
        sse = sse + (delta @ (X.T @ X) * delta).sum(1)
        coef = theta
    rmse = to_numpy((sse / X.shape[0]).sqrt())
    vrange = to_numpy(vrange)
    ids = np.full(n, -1, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        nrmse = np.where(vrange > 0, rmse / np.where(vrange > 0, vrange, 1), np.nan)
    return NeuronFits(periods, to_numpy(coef), rmse, nrmse, vrange, dominant,
                      _ids(layer, ids), _ids(neuron, ids), method, (n_a, n_b), info)


RTOL = 1e-10  # singular values below RTOL * the largest are the design's exact collinearities


def _least_squares(g: torch.Tensor, X: torch.Tensor, chunk_size: int):
    """Minimum-norm coefficients [n, m], residual sums of squares [n], max - min [n] and the
    figD12 periods of grids g [n, n_a, n_b] against the design X [P, m]."""
    n, n_a, n_b = g.shape
    U, S, Vh = torch.linalg.svd(X, full_matrices=False)
    r = int((S > RTOL * S[0]).sum())
    U, W = U[:, :r], (Vh[:r].T / S[:r]).T  # [P, r], [r, m]: theta* = (y U) W
    u1 = U.sum(0)  # U' 1
    s, counts = _sums_index(n_a, n_b, g.device)
    coef, sse, vrange, periods = [], [], [], {v: [] for v in ("a+b", "a", "b")}
    for i in range(0, n, chunk_size):
        x = g[i:i + chunk_size].double()  # [k, n_a, n_b]
        y = x.reshape(len(x), -1)
        z = y @ U  # [k, r]
        var, mean = torch.var_mean(y, 1, correction=0)
        zc = z - mean[:, None] * u1  # U'(y - mean)
        sse.append((X.shape[0] * var - zc.pow(2).sum(1)).clamp_min(0))
        coef.append(z @ W)
        lo, hi = torch.aminmax(y, dim=1)
        vrange.append(hi - lo)
        for v, p in _chunk_periods(x, s, counts).items():
            periods[v].append(p)
    dominant = {v: np.concatenate(p) for v, p in periods.items()}
    return torch.cat(coef), torch.cat(sse), torch.cat(vrange), dominant


def _ids(x, default):
    if x is None:
        return default.copy()
    x = np.asarray(x.cpu() if isinstance(x, torch.Tensor) else x, dtype=np.int64)
    if x.shape != default.shape:
        raise ValueError(f"ids of shape {x.shape}: expected one per neuron, {default.shape}")
    return x


# ----------------------------------------------------------------------------- the paper's SGD

def sgd_fit(Y: torch.Tensor, X: torch.Tensor, periods: Sequence[int], lr: float = 0.1,
            epochs: int = 2500, seed: int = 0, schedule: str = "cosine", phase_units: str = "t",
            gram: bool = True, record_every: int = 0) -> tuple[torch.Tensor, dict]:
    """The paper's fit: full-batch gradient descent (torch SGD, no momentum) on the MSE of
    A cos(2 pi (t - d) / T) + linear terms + constant, lr ``lr`` with cosine annealing to 0
    over ``epochs`` epochs, every parameter initialised N(0, 1).  The authors' init was
    unseeded; here it is drawn from a generator seeded with ``seed``.

    All neurons are one tensor program: parameters are [n, ...] tensors and the loss is the
    *sum* over neurons of each neuron's MSE, so each neuron's gradient is that of its own MSE.
    With ``gram`` (default) the MSE is evaluated from sufficient statistics,
    MSE = (theta' G theta - 2 theta' X'y + y'y) / P with G = X'X [m, m], theta = (alpha, beta,
    w, c) as a differentiable function of (A, d, w, c): the same loss and the same gradient
    as the sum over the P grid points, at O(m^2) instead of O(m P) per neuron and epoch
    (``gram=False`` evaluates the points; a test checks both give the same iterates).

    phase_units: "t" (the paper: d in units of t, as written in Eq. 5) or "angle"
    (phi = 2 pi d / T in radians; same model, other parametrisation).  Why it matters: the
    curvature of the MSE along d is A^2 (2 pi / T)^2 near the optimum, 250 times smaller at
    T=100 than along phi, while at T=2 (a cosine alone) it reaches 2 pi^2 A^2.  With lr 0.1
    and a cosine schedule the summed step size over 2,500 epochs is 125, so a T=100 phase of
    amplitude A relaxes only by a factor ~exp(-0.5 A^2) (a phase off by ~T/4 barely moves
    unless A is several units), and a large-amplitude T=2 phase is unstable (lr 2 pi^2 A^2 > 2)
    until the schedule has annealed lr.  "angle" removes the 1/T from the phase's gradient.

    Measured (``benchmarks/neuron_fit.py --sgd-study``: one planted term A cos(2 pi (t - d)
    / T) per neuron, random d, every other parameter planted 0, noise 0.1, seed 0; final MSE
    / least-squares MSE, worst of 4 phases):

        d in units of t (paper)  A = 0.25   0.5    1     2     4     8
        T = 2   (a, b, a+b)          1.00  1.00  1.00  1.00  1.01   ~150
        T = 5                        1.00  1.00  1.00  1.00  1.00   1.00
        T = 10                      <=2.0  1.00  1.00  1.00  1.00   1.00
        T = 100                    2.2-4  3.8-12 17-34 6-73  2-8    1.00
        phase in radians: <= 1.01 everywhere except A = 8 at T = 5, 10, 100 (1.01-1.08)
        and b at A = 0.25, T = 100 (1.25).

    So with the paper's values, T = 100 terms of amplitude 0.25-4 (units of N) keep their
    phases near the init and the fit's MSE ends several times above the optimum; T = 2
    amplitudes ~8 stay chaotic (lr 2 pi^2 A^2 >> 2) until the last ~10% of the schedule and
    end short.  The default stays the paper's; least squares is exact.

    record_every: if > 0, info["loss_history"] holds the per-neuron MSE [records, n] every
    that many epochs (and info["history_epochs"] the epochs).

    Returns theta [n, m] in the design's column order and an info dict (hyperparameters).
    """
    if schedule not in ("cosine", "constant"):
        raise ValueError(f"schedule={schedule!r}; allowed: cosine, constant")
    if phase_units not in ("t", "angle"):
        raise ValueError(f"phase_units={phase_units!r}; allowed: t, angle")
    n, P = Y.shape
    nT = len(periods)
    dev = Y.device
    gen = torch.Generator().manual_seed(seed)
    draw = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64).to(dev).requires_grad_()  # noqa: E731
    A, d, w, c = draw(n, len(VARIABLES), nT), draw(n, len(VARIABLES), nT), draw(n, 3), draw(n, 1)
    omega = 2 * torch.pi / torch.as_tensor(periods, dtype=torch.float64, device=dev)  # [nT]
    scale = omega if phase_units == "t" else torch.ones_like(omega)

    def theta() -> torch.Tensor:  # [n, m]
        ang = d * scale
        pairs = torch.stack([A * torch.cos(ang), A * torch.sin(ang)], -1)  # [n, 3, nT, 2]
        return torch.cat([pairs.reshape(n, -1), w, c], 1)

    Yd = Y.double()
    if gram:
        G = X.T @ X  # [m, m]
        r = Yd @ X  # [n, m]
        yy = Yd.pow(2).sum(1)  # [n]
        mse = lambda th: ((th @ G * th).sum(1) - 2 * (th * r).sum(1) + yy) / P  # noqa: E731
    else:
        mse = lambda th: (th @ X.T - Yd).pow(2).mean(1)  # noqa: E731
    opt = torch.optim.SGD([A, d, w, c], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs) if schedule == "cosine" else None
    history, at = [], []
    for epoch in range(epochs):
        opt.zero_grad(set_to_none=True)
        loss = mse(theta())
        if record_every and epoch % record_every == 0:
            history.append(to_numpy(loss))
            at.append(epoch)
        loss.sum().backward()
        opt.step()
        if sched is not None:
            sched.step()
    info = {"lr": lr, "epochs": epochs, "seed": seed, "schedule": schedule, "phase_units": phase_units,
            "init": "normal(0, 1)"}
    if record_every:
        info["loss_history"] = np.stack(history)
        info["history_epochs"] = np.asarray(at)
    with torch.no_grad():
        return theta().detach(), info


# ----------------------------------------------------------------------------- figD12's periods

def dominant_periods(grids, chunk_size: int = 4096, detrend: bool = False) -> dict[str, np.ndarray]:
    """The dominant period of each neuron's N over a+b, a and b (figD12; the methods'
    Decision): the mean of N over each s = a+b (s = 0..n_a+n_b-2), over b for each a, and
    over a for each b; centred; rFFT; the period L / k of the largest |FFT| with k >= 1
    (DC excluded).  Returns {"a+b": [n], "a": [n], "b": [n]} (periods in units of t).

    Periods are L / k: over a+b (L = 199) T = 100, 10, 5, 2 show up as 99.5, 9.95, 4.975 and
    2.01 (figD12 counts periods within 5% of T).  A linear trend peaks at k = 1 (T = L);
    ``detrend`` removes each series' least-squares line first (not the Decision's estimator:
    an option to see what the trend hides)."""
    g = _as_tensor(grids)
    n, n_a, n_b = g.shape
    s, counts = _sums_index(n_a, n_b, g.device)
    out = {"a+b": [], "a": [], "b": []}
    for i in range(0, n, chunk_size):
        for v, p in _chunk_periods(g[i:i + chunk_size].double(), s, counts, detrend).items():
            out[v].append(p)
    return {v: np.concatenate(p) for v, p in out.items()}


def _sums_index(n_a: int, n_b: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """s = a+b of each flattened grid point [P] and the number of points per s [n_a+n_b-1]."""
    s = torch.as_tensor(grid_values(n_a, n_b)["a+b"], device=device)
    return s, torch.bincount(s).double()


def _chunk_periods(x: torch.Tensor, s: torch.Tensor, counts: torch.Tensor, detrend: bool = False) -> dict:
    """Dominant periods over a+b, a, b of a float64 chunk x [k, n_a, n_b]; [k] each."""
    k = len(x)
    over_s = torch.zeros(k, len(counts), dtype=x.dtype, device=x.device)
    over_s.index_add_(1, s, x.reshape(k, -1))
    means = {"a+b": over_s / counts, "a": x.mean(2), "b": x.mean(1)}
    return {v: _top_period(_detrended(m) if detrend else m) for v, m in means.items()}


def _detrended(m: torch.Tensor) -> torch.Tensor:
    """[k, L] series minus their least-squares lines."""
    x = torch.arange(m.shape[1], dtype=m.dtype, device=m.device)
    x = x - x.mean()
    slope = (m * x).sum(1, keepdim=True) / (x * x).sum()
    return m - slope * x


def _top_period(m: torch.Tensor) -> np.ndarray:
    """[k, L] series -> [k] period L / argmax_{f >= 1} |rFFT(m)| (the one estimator,
    :func:`helixclock.fourier.dominant_periods`)."""
    return fourier.dominant_periods(to_numpy(m))["period"]


# ----------------------------------------------------------------------------- tables and files

def neuron_table(fits: NeuronFits, k_terms: int = 3) -> pd.DataFrame:
    """One row per neuron: layer, neuron, nrmse, rmse, value_range, ab_fraction, top_terms
    (the k largest terms, :meth:`NeuronFits.leading_terms`), top_variable, top_period,
    top_amplitude, top_ab_period, w_a, w_b, w_ab, const, and the dominant periods
    dominant_period_a, dominant_period_b, dominant_period_ab."""
    lin = fits.linear
    df = pd.DataFrame({"layer": fits.layer, "neuron": fits.neuron, "nrmse": fits.nrmse, "rmse": fits.rmse,
                       "value_range": fits.value_range, "ab_fraction": fits.ab_fraction,
                       "top_terms": fits.leading_terms(k_terms)})
    df = pd.concat([df, fits.top_term()], axis=1)
    df = df.assign(w_a=lin[:, 0], w_b=lin[:, 1], w_ab=lin[:, 2], const=fits.const)
    for v, key in (("a", "a"), ("b", "b"), ("a+b", "ab")):
        df[f"dominant_period_{key}"] = fits.dominant[v]
    return df


def term_table(fits: NeuronFits) -> pd.DataFrame:
    """One row per (neuron, variable, period): layer, neuron, variable (a, b, a+b), period,
    amplitude, phase (units of t, [0, T)), alpha, beta."""
    n, nv, nt = fits.amplitude.shape
    rep = nv * nt
    return pd.DataFrame({"layer": np.repeat(fits.layer, rep), "neuron": np.repeat(fits.neuron, rep),
                         "variable": np.tile(np.repeat(VARIABLES, nt), n),
                         "period": np.tile(np.asarray(fits.periods), n * nv),
                         "amplitude": fits.amplitude.ravel(), "phase": fits.phase.ravel(),
                         "alpha": fits.alpha.ravel(), "beta": fits.beta.ravel()})


def save_fits(path, fits: NeuronFits, up: NeuronFits | None = None) -> None:
    """HDF5: datasets coef [n, m], rmse, nrmse, value_range, layer, neuron, dominant_{a,b,ab};
    attrs periods, columns, method, grid_shape and the method's hyperparameters.  ``up``: the
    fits of a gated MLP's up projection (when gate and up are both fitted), in group "up"."""
    import h5py

    with h5py.File(path, "w") as f:
        _write_fits(f, fits)
        if up is not None:
            _write_fits(f.create_group("up"), up)


def _write_fits(f, fits: NeuronFits) -> None:
    f.create_dataset("coef", data=fits.coef)
    for name in ("rmse", "nrmse", "value_range", "layer", "neuron"):
        f.create_dataset(name, data=getattr(fits, name))
    for v, key in (("a", "a"), ("b", "b"), ("a+b", "ab")):
        f.create_dataset(f"dominant_{key}", data=fits.dominant[v])
    f.attrs["periods"] = np.asarray(fits.periods, dtype=np.float64)
    f.attrs["columns"] = fits.columns
    f.attrs["method"] = fits.method
    f.attrs["grid_shape"] = np.asarray(fits.grid_shape)
    for k, v in fits.info.items():
        if np.isscalar(v):
            f.attrs[f"info_{k}"] = v
        else:
            f.create_dataset(f"info/{k}", data=np.asarray(v))


def has_up_fits(path) -> bool:
    """Whether a fits file holds a gated MLP's up-projection fits beside the gate's."""
    import h5py

    with h5py.File(path, "r") as f:
        return "up" in f


def load_fits(path, group: str | None = None) -> NeuronFits:
    """Inverse of :func:`save_fits` (``group="up"``: the up projection's fits); checks that
    the stored columns match the periods."""
    import h5py

    with h5py.File(path, "r") as h5:
        f = h5[group] if group else h5
        periods = tuple(int(T) if float(T).is_integer() else float(T) for T in f.attrs["periods"])
        stored = [str(c) for c in f.attrs["columns"]]
        if stored != columns(periods):
            raise ValueError(f"{path}: columns {stored} do not match periods {periods} ({columns(periods)})")
        info = {k[5:]: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items() if k.startswith("info_")}
        if "info" in f:
            info.update({k: f["info"][k][()] for k in f["info"]})
        dom = {v: f[f"dominant_{key}"][()] for v, key in (("a", "a"), ("b", "b"), ("a+b", "ab"))}
        return NeuronFits(periods, f["coef"][()], f["rmse"][()], f["nrmse"][()], f["value_range"][()], dom,
                          f["layer"][()], f["neuron"][()], str(f.attrs["method"]),
                          tuple(int(x) for x in f.attrs["grid_shape"]), info)


def planted_grids(amplitude: np.ndarray, phase: np.ndarray, linear: np.ndarray, const: np.ndarray,
                  periods: Sequence[int] = PERIODS, noise: float = 0.0, seed: int = 0,
                  n_a: int = 100, n_b: int = 100) -> np.ndarray:
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

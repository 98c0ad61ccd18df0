"""The paper's optimiser for the neuron fit (Eq. 5): full-batch SGD with a cosine schedule, for
every neuron at once (section 5.4; ``fit_neurons(method="sgd")``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from ...project.io import to_numpy
from .basis import VARIABLES


def sgd_fit(
    Y: torch.Tensor,
    X: torch.Tensor,
    periods: Sequence[int],
    lr: float = 0.1,
    epochs: int = 2500,
    seed: int = 0,
    schedule: str = "cosine",
    phase_units: str = "t",
    gram: bool = True,
    record_every: int = 0,
) -> tuple[torch.Tensor, dict]:
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
    _check_options(schedule, phase_units)
    n = Y.shape[0]
    A, d, w, c = _initial_parameters(n, len(periods), seed, Y.device)
    scale = _phase_scale(periods, phase_units, Y.device)
    mse = _mse_function(Y, X, gram)
    history, at = _descend([A, d, w, c], lambda: mse(_theta(A, d, w, c, scale)), lr, epochs, schedule, record_every)
    info = {
        "lr": lr,
        "epochs": epochs,
        "seed": seed,
        "schedule": schedule,
        "phase_units": phase_units,
        "init": "normal(0, 1)",
    }
    if record_every:
        info["loss_history"] = np.stack(history)
        info["history_epochs"] = np.asarray(at)
    with torch.no_grad():
        return _theta(A, d, w, c, scale).detach(), info


def _check_options(schedule: str, phase_units: str) -> None:
    """The schedule and the phase's units must be among those :func:`sgd_fit` knows."""
    if schedule not in ("cosine", "constant"):
        raise ValueError(f"schedule={schedule!r}; allowed: cosine, constant")
    if phase_units not in ("t", "angle"):
        raise ValueError(f"phase_units={phase_units!r}; allowed: t, angle")


def _initial_parameters(n: int, n_periods: int, seed: int, device) -> tuple[torch.Tensor, ...]:
    """Eq. 5's parameters of ``n`` neurons, every one drawn N(0, 1) (float64) from a generator
    seeded with ``seed``, in the order A [n, 3, nT], d [n, 3, nT], w [n, 3], c [n, 1]
    (section 5.4: the authors' init, which was unseeded)."""
    gen = torch.Generator().manual_seed(seed)
    shapes = ((n, len(VARIABLES), n_periods), (n, len(VARIABLES), n_periods), (n, 3), (n, 1))
    return tuple(
        torch.randn(*shape, generator=gen, dtype=torch.float64).to(device).requires_grad_() for shape in shapes
    )


def _phase_scale(periods: Sequence[int], phase_units: str, device) -> torch.Tensor:
    """[nT] the factor that turns the phase parameter into an angle: 2 pi / T for a phase d in
    units of t (Eq. 5 as written), 1 for a phase in radians."""
    omega = 2 * torch.pi / torch.as_tensor(periods, dtype=torch.float64, device=device)  # [nT]
    return omega if phase_units == "t" else torch.ones_like(omega)


def _theta(A: torch.Tensor, d: torch.Tensor, w: torch.Tensor, c: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """[n, m] the linear coefficients of Eq. 5 in the design's column order: per variable and
    period (A cos(angle), A sin(angle)) with angle = d * scale, then the linear terms w and the
    constant c; a differentiable function of (A, d, w, c)."""
    n = A.shape[0]
    ang = d * scale
    pairs = torch.stack([A * torch.cos(ang), A * torch.sin(ang)], -1)  # [n, 3, nT, 2]
    return torch.cat([pairs.reshape(n, -1), w, c], 1)


def _mse_function(Y: torch.Tensor, X: torch.Tensor, gram: bool) -> Callable[[torch.Tensor], torch.Tensor]:
    """theta [n, m] -> [n] each neuron's MSE over the P grid points of Y [n, P] under the design
    X [P, m]: from the sufficient statistics G = X'X, X'y, y'y (``gram``) or point by point."""
    P = Y.shape[1]
    Yd = Y.double()
    if gram:
        G = X.T @ X  # [m, m]
        r = Yd @ X  # [n, m]
        yy = Yd.pow(2).sum(1)  # [n]
        return lambda th: ((th @ G * th).sum(1) - 2 * (th * r).sum(1) + yy) / P
    return lambda th: (th @ X.T - Yd).pow(2).mean(1)


def _descend(
    params: list[torch.Tensor],
    loss_of: Callable[[], torch.Tensor],
    lr: float,
    epochs: int,
    schedule: str,
    record_every: int,
) -> tuple[list[np.ndarray], list[int]]:
    """The paper's optimiser (section 5.4): full-batch SGD without momentum on the sum over
    neurons of ``loss_of()`` [n], lr ``lr`` annealed to 0 by a cosine over ``epochs`` (or
    constant); returns the per-neuron losses and their epochs every ``record_every`` epochs."""
    opt = torch.optim.SGD(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs) if schedule == "cosine" else None
    history, at = [], []
    for epoch in range(epochs):
        opt.zero_grad(set_to_none=True)
        loss = loss_of()
        if record_every and epoch % record_every == 0:
            history.append(to_numpy(loss))
            at.append(epoch)
        loss.sum().backward()
        opt.step()
        if sched is not None:
            sched.step()
    return history, at

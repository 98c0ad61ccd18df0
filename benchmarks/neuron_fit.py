"""Neuron fit (Eq. 5): the batched least-squares fit of all top neurons against a per-neuron loop.

Workload: 4,587 neurons (GPT-J's top 1%) x 10,000 points (the full 100 x 100 grid of a+b),
random grids (float32) with some Eq. 5 structure; the fit does not care what is in them.

* batched: :func:`fit_neurons` - one pseudo-inverse of the shared design, one matrix product
  per chunk of neurons, residuals, RMSE/NRMSE and the figD12 dominant periods of every neuron.
* loop: what the paper's per-neuron fit looks like with a closed-form solver instead of SGD -
  ``numpy.linalg.lstsq`` of the design against each neuron's grid, then its RMSE.  Timed on an
  evenly spaced subset of neurons and scaled to all of them (printed as such).
* also, as information: ``torch.linalg.lstsq`` per neuron (same subset, scaled), and the
  paper's SGD (2,500 epochs) for all neurons at once on the sufficient statistics, and its
  cost per epoch on the 10,000 points (a few epochs, scaled).

``--sgd-study`` instead prints the table in :func:`sgd_fit`'s docstring: how close the
paper's SGD (and the same with phases in radians) gets to the least-squares loss on neurons
with one planted term, per variable, period and amplitude.

``--threads N`` pins torch's and numpy's BLAS to N threads on both sides (the machine this
was written on has 2 shared cores; unpinned BLAS threads fight over them and slow the
per-neuron loop's many small calls more than the batched product).

Cases: the CPU; a GPU when present.  The last line is JSON with ``speedup_vs_loop`` (loop
time / batched time, CPU case) and the other timings.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch
from common import emit, timed
from threadpoolctl import threadpool_limits

from helixclock.stages.neurons.basis import PERIODS, VARIABLES, design, planted_grids
from helixclock.stages.neurons.fit import fit_neurons
from helixclock.stages.neurons.sgd import sgd_fit

TOP_NEURONS = 4587


def grids(n: int, device: torch.device, seed: int = 0) -> torch.Tensor:
    """[n, 100, 100] float32: random Eq. 5 coefficients on the design, plus noise."""
    g = torch.Generator().manual_seed(seed)
    X = torch.as_tensor(design(), dtype=torch.float32)
    coef = torch.randn(n, X.shape[1], generator=g)
    return (coef @ X.T + 0.3 * torch.randn(n, X.shape[0], generator=g)).reshape(n, 100, 100).to(device)


def loop_numpy(Y: np.ndarray, X: np.ndarray) -> np.ndarray:
    rmse = np.empty(len(Y))
    for i, y in enumerate(Y):
        coef = np.linalg.lstsq(X, y, rcond=None)[0]
        rmse[i] = np.sqrt(np.mean((y - X @ coef) ** 2))
    return rmse


def loop_torch(Y: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    out = []
    for y in Y:
        coef = torch.linalg.lstsq(X, y[:, None], driver="gelsd" if X.device.type == "cpu" else None).solution
        out.append((y - (X @ coef)[:, 0]).pow(2).mean().sqrt())
    return torch.stack(out)


def run_case(device: torch.device, n: int, subset: int, sgd_epochs: int) -> dict:
    G = grids(n, device)
    t_batched = timed(lambda: fit_neurons(G), device, repeats=3)
    idx = np.linspace(0, n - 1, subset).round().astype(int)
    Ysub = G.reshape(n, -1)[idx].double()
    Xd = torch.as_tensor(design(), device=device)
    t_np = timed(lambda: loop_numpy(Ysub.cpu().numpy(), Xd.cpu().numpy()), torch.device("cpu"), repeats=1) * n / subset
    t_torch = timed(lambda: loop_torch(Ysub, Xd), device, repeats=1) * n / subset
    # the batched fit agrees with the loop on the subset
    fits = fit_neurons(G)
    max_diff = float(np.abs(fits.rmse[idx] - loop_numpy(Ysub.cpu().numpy(), Xd.cpu().numpy())).max())
    Y = G.reshape(n, -1)
    t0 = time.perf_counter()
    sgd_fit(Y, Xd, PERIODS, epochs=sgd_epochs)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t_sgd = (time.perf_counter() - t0) * 2500 / sgd_epochs
    few = 5
    t0 = time.perf_counter()
    sgd_fit(Y, Xd, PERIODS, epochs=few, gram=False)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t_points = (time.perf_counter() - t0) / few
    return {
        "device": str(device),
        "neurons": n,
        "points": int(Y.shape[1]),
        "columns": int(Xd.shape[1]),
        "batched_s": round(t_batched, 3),
        "loop_numpy_s": round(t_np, 2),
        "loop_torch_s": round(t_torch, 2),
        "loop_subset": subset,
        "loop_scaled_from_subset": True,
        "speedup_vs_loop": round(t_np / t_batched, 1),
        "speedup_vs_torch_loop": round(t_torch / t_batched, 1),
        "max_rmse_diff_vs_loop": max_diff,
        "sgd_2500_epochs_s": round(t_sgd, 2),
        "sgd_epochs_timed": sgd_epochs,
        "sgd_points_s_per_epoch": round(t_points, 3),
        "sgd_points_2500_epochs_s_estimated": round(t_points * 2500, 1),
    }


def sgd_study(reps: int = 4, amplitudes=(0.25, 0.5, 1, 2, 4, 8), noise: float = 0.1) -> pd.DataFrame:
    """Final MSE / least-squares MSE (worst of ``reps`` random phases) for one planted term
    A cos(2 pi (t - d) / T) per neuron, every other parameter 0, under both phase units."""
    rng = np.random.default_rng(1)
    cases = [(j, k, A) for j in range(3) for k in range(len(PERIODS)) for A in amplitudes]
    n = len(cases) * reps
    amp, phase = np.zeros((n, 3, len(PERIODS))), np.zeros((n, 3, len(PERIODS)))
    for i, (j, k, A) in enumerate(c for c in cases for _ in range(reps)):
        amp[i, j, k] = A
        phase[i, j, k] = rng.uniform(0, PERIODS[k]) if PERIODS[k] != 2 else rng.integers(0, 2)
    G = planted_grids(amp, phase, np.zeros((n, 3)), np.zeros(n), noise=noise)
    ls = fit_neurons(G)
    rows = []
    for units in ("t", "angle"):
        sgd = fit_neurons(G, method="sgd", phase_units=units)
        ratio = (sgd.rmse**2 / ls.rmse**2).reshape(len(cases), reps).max(1)
        rows += [
            {"phase_units": units, "variable": VARIABLES[j], "T": PERIODS[k], "A": A, "worst_ratio": r}
            for (j, k, A), r in zip(cases, ratio)
        ]
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--neurons", type=int, default=TOP_NEURONS)
    parser.add_argument("--subset", type=int, default=200, help="neurons the per-neuron loop is timed on")
    parser.add_argument("--sgd-epochs", type=int, default=2500, help="SGD epochs timed (scaled to 2,500)")
    parser.add_argument("--threads", type=int, default=0, help="BLAS/torch threads on both sides (0: leave)")
    parser.add_argument("--sgd-study", action="store_true", help="print the SGD-vs-least-squares table only")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        threadpool_limits(args.threads)
    if args.sgd_study:
        table = sgd_study()
        print(
            table.pivot_table(index=["phase_units", "variable", "T"], columns="A", values="worst_ratio")
            .round(3)
            .to_string()
        )
        return
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    results = {}
    for device in devices:
        r = run_case(device, args.neurons, args.subset, args.sgd_epochs)
        print(
            f"{device}: batched {r['batched_s']} s for {r['neurons']} neurons; per-neuron loop (numpy lstsq, "
            f"{r['loop_subset']} neurons timed, scaled) {r['loop_numpy_s']} s -> speedup {r['speedup_vs_loop']}x; "
            f"torch loop {r['loop_torch_s']} s; paper SGD {r['sgd_2500_epochs_s']} s (sufficient statistics), "
            f"~{r['sgd_points_2500_epochs_s_estimated']} s on the points",
            flush=True,
        )
        results[device.type] = r
    main_case = results["cpu"]
    emit(
        {
            "benchmark": "neuron_fit",
            "main_case": "cpu",
            "speedup_vs_loop": main_case["speedup_vs_loop"],
            **{
                f"{k}_{m}": v[m]
                for k, v in results.items()
                for m in ("speedup_vs_loop", "batched_s", "loop_numpy_s", "sgd_2500_epochs_s")
            },
            "threads": args.threads or torch.get_num_threads(),
            "cases": results,
        }
    )


if __name__ == "__main__":
    main()

"""Fig. D12's estimator: the dominant Fourier period of each top neuron's N(a, b) over a+b, a
and b (paper section 5.4, appendix D.2)."""

from __future__ import annotations

import numpy as np
import torch

from ...fitting import fourier
from ...project.io import to_numpy
from .basis import as_grids, grid_values


def grid_periods(grids, chunk_size: int = 4096, detrend: bool = False) -> dict[str, np.ndarray]:
    """The dominant period of each neuron's N over a+b, a and b (figD12; helixclock's
    estimator, docs/differences.md "Differences from the authors' code"): the mean of N over each
    s = a+b (s = 0..n_a+n_b-2), over b for each a, and over a for each b; centred; rFFT;
    the period L / k of the largest |FFT| with k >= 1 (DC excluded).  Returns {"a+b": [n],
    "a": [n], "b": [n]} (periods in units of t).

    Periods are L / k: over a+b (L = 199) T = 100, 10, 5, 2 show up as 99.5, 9.95, 4.975 and
    2.01 (figD12 counts periods within 5% of T).  A linear trend peaks at k = 1 (T = L);
    ``detrend`` removes each series' least-squares line first (not Fig. D12's estimator:
    an option to see what the trend hides)."""
    g = as_grids(grids)
    n, n_a, n_b = g.shape
    s, counts = sums_index(n_a, n_b, g.device)
    out = {"a+b": [], "a": [], "b": []}
    for i in range(0, n, chunk_size):
        for v, p in chunk_periods(g[i : i + chunk_size].double(), s, counts, detrend).items():
            out[v].append(p)
    return {v: np.concatenate(p) for v, p in out.items()}


def sums_index(n_a: int, n_b: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """s = a+b of each flattened grid point [P] and the number of points per s [n_a+n_b-1]."""
    s = torch.as_tensor(grid_values(n_a, n_b)["a+b"], device=device)
    return s, torch.bincount(s).double()


def chunk_periods(x: torch.Tensor, s: torch.Tensor, counts: torch.Tensor, detrend: bool = False) -> dict:
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
    :func:`helixclock.fitting.fourier.dominant_periods`)."""
    return fourier.dominant_periods(to_numpy(m))["period"]

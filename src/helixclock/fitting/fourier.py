"""Fourier spectra along the number axis (shared by the structure, neuron and error stages).

Functions take values over consecutive numbers, shaped [n_numbers, ...], row i holding the
number i (the structure of numbers uses the residual stream of bare number tokens at one
layer, [n_numbers, d_model]).
"""

from __future__ import annotations

import numpy as np


def fourier_spectrum(X: np.ndarray, compat: str = "corrected") -> tuple[np.ndarray, np.ndarray]:
    """Centre over numbers, FFT along the number axis, average |FFT| over model dims.

    Returns (periods, magnitude) for frequencies k = 1..n//2 (period n / k).  With
    ``compat="authors"`` the authors' estimator: no centring, power |FFT|^2, and for an even
    count the Nyquist bin k = n/2 (period exactly 2) dropped - which is what makes T = 2
    appear or vanish with the parity of the count (Fig. B1), a binning artefact.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if compat == "authors":
        power = (np.abs(np.fft.rfft(X, axis=0)) ** 2).mean(1)[1:]
        if n % 2 == 0:
            power = power[:-1]
        k = np.arange(1, len(power) + 1)
        return n / k, power
    F = np.fft.rfft(X - X.mean(0, keepdims=True), axis=0)
    mag = np.abs(F).mean(1)[1:]  # drop k = 0 (zero after centring)
    k = np.arange(1, len(mag) + 1)
    return n / k, mag


def spectrum_peaks(periods: np.ndarray, magnitude: np.ndarray, k: int = 10) -> list[dict]:
    """Local maxima of the spectrum, strongest first, with their rank and relative size."""
    m = magnitude
    is_peak = np.ones_like(m, dtype=bool)
    is_peak[1:] &= m[1:] >= m[:-1]
    is_peak[:-1] &= m[:-1] >= m[1:]
    idx = np.flatnonzero(is_peak)
    idx = idx[np.argsort(-m[idx])][:k]
    med = float(np.median(m))
    return [
        {
            "rank": r + 1,
            "period": float(periods[i]),
            "frequency": int(i + 1),
            "magnitude": float(m[i]),
            "relative_to_median": float(m[i] / med) if med > 0 else np.inf,
        }
        for r, i in enumerate(idx)
    ]


def dominant_periods(Y: np.ndarray) -> dict[str, np.ndarray]:
    """The strongest non-constant Fourier component of each row of Y [n, m]: one rFFT along
    the last axis, the DC term (k = 0) dropped explicitly.  The one dominant-period estimator
    of helixclock: the logit lens and final logits (App. F) and the neurons' N over a+b, a
    and b (Fig. D12) all use it.

    Returns frequency k [n] (1..m//2), period m / k [n], magnitude |F_k| [n] and its share of
    the total non-DC magnitude [n].
    """
    Y = np.asarray(Y, dtype=np.float64)
    mag = np.abs(np.fft.rfft(Y, axis=-1))[:, 1:]  # [n, m//2], DC dropped
    k = mag.argmax(1) + 1
    top = mag[np.arange(len(mag)), k - 1]
    total = mag.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, top / total, np.nan)
    return {"frequency": k, "period": Y.shape[1] / k, "magnitude": top, "share": share}

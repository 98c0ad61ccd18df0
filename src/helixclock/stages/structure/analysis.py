"""Structure of numbers (paper section 4.1, appendix B): bare number tokens at one layer.

All functions take the residual stream of bare number tokens at one layer, shaped
[n_numbers, d_model], row i holding the number i.  The paper analyses the output of
layer 0, i.e. ``resid_pre[1]``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...fitting.fourier import fourier_spectrum, spectrum_peaks


def pca_first_component(X: np.ndarray) -> tuple[np.ndarray, float]:
    """Projection of each row on the first principal component of the standardised data
    (every dimension z-scored, as the authors do; constant dimensions are left at 0), its
    sign making it increase with the row index on average, and that component's
    explained-variance ratio."""
    X = np.asarray(X, dtype=np.float64)
    std = X.std(0, keepdims=True)
    Xc = (X - X.mean(0, keepdims=True)) / np.where(std > 0, std, 1.0)
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    pc1 = Xc @ Vt[0]
    if np.corrcoef(np.arange(len(pc1)), pc1)[0, 1] < 0:
        pc1 = -pc1
    return pc1, float(S[0] ** 2 / np.sum(S**2))


def line_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least-squares line y = slope * x + intercept, and its R^2."""
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    r2 = 1 - resid.var() / y.var() if y.var() > 0 else 1.0
    return float(slope), float(intercept), float(r2)


def distance_and_cosine(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean distance and cosine similarity between all pairs of rows."""
    X = np.asarray(X, dtype=np.float64)
    sq = (X**2).sum(1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None] - 2 * X @ X.T, 0))
    unit = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    return dist, unit @ unit.T


def delta_n_distance(X: np.ndarray, a_max: int, dn_max: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean distance between a and a + dn over a in [0, a_max], for dn = 1..dn_max (rows
    beyond the data are skipped)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    dn_max = dn_max or n - 1 - a_max
    dns = np.arange(1, dn_max + 1)
    means = []
    for dn in dns:
        a = np.arange(0, min(a_max, n - 1 - dn) + 1)
        means.append(np.linalg.norm(X[a + dn] - X[a], axis=1).mean() if len(a) else np.nan)
    return dns, np.array(means)


def spectrum_tables(
    X: np.ndarray, layer: int, n_fourier: int, n_small: int, n_peaks: int, compat: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 2 (top) and Fig. B1: the Fourier spectra of numbers 0..n_fourier-1, 0..n_fourier and
    0..n_small-1 of X [N, d] at ``layer``, and their strongest peaks.  ``main`` marks Fig. 2's
    spectrum: n_fourier numbers, or with ``compat="authors"`` the authors' estimator on
    n_fourier + 1 numbers (0..360), as their code does."""
    main = n_fourier + 1 if compat == "authors" else n_fourier
    spectra, peaks = [], []
    for n in (n_fourier, n_fourier + 1, n_small):
        periods, mag = fourier_spectrum(X[:n], compat)
        spectra.append(
            pd.DataFrame(
                {
                    "n_numbers": n,
                    "layer": layer,
                    "frequency": np.arange(1, len(mag) + 1),
                    "period": periods,
                    "magnitude": mag,
                    "main": n == main,
                    "compat": compat,
                }
            )
        )
        if n in (main, n_small):
            peaks += [{"n_numbers": n, "layer": layer, **p} for p in spectrum_peaks(periods, mag, n_peaks)]
    return pd.concat(spectra), pd.DataFrame(peaks)


def pc1_table(X: np.ndarray, n_small: int) -> pd.DataFrame:
    """Fig. 2 (bottom) and Fig. B4: PC1 against a for 0..n_small-1 (with its line fit) and for
    every number of X [N, d]."""
    pc_small, ratio_small = pca_first_component(X[:n_small])
    pc_all, ratio_all = pca_first_component(X)
    a_small = np.arange(n_small)
    slope, intercept, r2 = line_fit(a_small, pc_small)
    small = {"range": f"0-{n_small - 1}", "a": a_small, "pc1": pc_small, "line": slope * a_small + intercept}
    every = {"range": f"0-{len(X) - 1}", "a": np.arange(len(X)), "pc1": pc_all, "line": np.nan}
    return pd.concat(
        [
            pd.DataFrame({**small, "line_r2": r2, "explained_variance": ratio_small}),
            pd.DataFrame({**every, "line_r2": np.nan, "explained_variance": ratio_all}),
        ]
    )


def similarity_table(X: np.ndarray, n_small: int) -> pd.DataFrame:
    """Fig. B2: distance and cosine similarity between all pairs of numbers 0..n_small-1."""
    dist, cos = distance_and_cosine(X[:n_small])
    a1, a2 = np.meshgrid(np.arange(n_small), np.arange(n_small), indexing="ij")
    return pd.DataFrame({"a1": a1.ravel(), "a2": a2.ravel(), "distance": dist.ravel(), "cosine": cos.ravel()})


def delta_n_table(X: np.ndarray, n_small: int) -> pd.DataFrame:
    """Fig. B3: mean distance between a and a+dn, for a in [0, 9] and a in [0, n_small-1]."""
    rows = []
    for a_max in (9, n_small - 1):
        dns, means = delta_n_distance(X[:n_small], a_max=a_max, dn_max=n_small - 1)
        rows.append(pd.DataFrame({"a_range": f"0-{a_max}", "delta_n": dns, "mean_distance": means}))
    return pd.concat(rows).dropna()


def structure_tables(
    numbers: np.ndarray,
    layer: int,
    n_fourier: int = 360,
    n_small: int = 100,
    n_peaks: int = 10,
    compat: str = "corrected",
) -> dict:
    """Every table behind Fig. 2 and Figs. B1-B4, from bare-number residuals [N, L+1, d] at
    ``layer``: spectrum and peaks (:func:`spectrum_tables`), pc1, similarity, delta_n."""
    X = np.asarray(numbers[:, layer], dtype=np.float64)
    n_fourier = min(n_fourier, X.shape[0] - 1)
    spectrum, peaks = spectrum_tables(X, layer, n_fourier, n_small, n_peaks, compat)
    return {
        "spectrum": spectrum,
        "peaks": peaks,
        "pc1": pc1_table(X, n_small),
        "similarity": similarity_table(X, n_small),
        "delta_n": delta_n_table(X, n_small),
    }


def number_structure(numbers: np.ndarray, layer: int, n_fourier: int, compat: str) -> dict[str, pd.DataFrame]:
    """Rule number_structure: the tables of Fig. 2 and Figs. B1-B4 at ``layer``
    (:func:`structure_tables`) and the strongest periods at every layer (:func:`peaks_by_layer`)."""
    return {
        **structure_tables(numbers, layer, n_fourier=n_fourier, compat=compat),
        "peaks_by_layer": peaks_by_layer(numbers, n_fourier, compat=compat),
    }


def peaks_by_layer(numbers: np.ndarray, n_fourier: int = 360, n_peaks: int = 10, compat: str = "corrected"):
    """The strongest periods of the spectrum of numbers 0..n_fourier-1 at every cached layer
    (Fig. 2's estimator, one layer at a time): where the circles of T = 10, 100 ... appear and
    fade along the depth.  One row per (layer, rank), with ``layer`` = resid_pre[layer]."""
    n = min(n_fourier, numbers.shape[0] - 1)
    rows = []
    for layer in range(numbers.shape[1]):
        periods, mag = fourier_spectrum(np.asarray(numbers[:n, layer], dtype=np.float64), compat)
        rows += [{"n_numbers": n, "layer": layer, **p} for p in spectrum_peaks(periods, mag, n_peaks)]
    return pd.DataFrame(rows)

"""The helix fitted to the a token's residuals (section 4.3, Fig. 3, Figs. C1-C3): tables
from the cache alone."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ...fitting.bases import PERIODS, Basis, FitSettings, standard_bases
from ...fitting.fits import Fits, column_cosine, fit_bases, fit_token, projection, unique_rows
from ...project.cache import ResidualCache
from ...project.io import to_numpy

CONTINUITY_PERIOD, HELD_OUT_DIGIT = 100, 3  # Fig. C3: a T = 100 helix without the a ending in 3


def a_residuals(cache: ResidualCache) -> Tensor:
    """The a token's residuals of the cached correct prompts, [layers, rows, d]."""
    return torch.from_numpy(cache.a).transpose(0, 1)


def helix_fits(cache: ResidualCache, fit: FitSettings) -> Fits:
    """Rule helix_fits: helix, circle and polynomial fits (every subset of the periods, section
    4.3) of the a token's residuals at every layer, solved in the first ``fit.pca_components``
    principal components."""
    return fit_token(
        a_residuals(cache), cache.ab[:, 0], standard_bases(fit.periods, compat=fit.compat), fit.pca_components
    )


def helix_figure_tables(
    cache: ResidualCache, fits: Fits, layer: int, periods: Sequence[int] = PERIODS
) -> dict[str, pd.DataFrame]:
    """Rule helix_figure_tables: the tables of Fig. 3 and Figs. C1-C3 at ``layer``, one row per
    distinct a of the cache."""
    values, H, _ = unique_rows(cache.ab[:, 0], a_residuals(cache))
    return figure_tables(fits, H, values, layer, periods)


def figure_tables(
    fits: Fits, H: Tensor, values: np.ndarray, layer: int, periods: Sequence[int] = PERIODS
) -> dict[str, pd.DataFrame]:
    """Tables behind Fig. 3 and Figs. C1-C3 for one layer.

    H [L, rows, d] holds one row per distinct value in ``values``.
    projection: each a's coordinates in the full helix subspace (Fig. 3)
    magnitudes: norm of each column of C (Fig. C1); cosine: cosine similarity between them (C2)
    continuity: a T=[CONTINUITY_PERIOD] helix fitted to every a whose units digit is not
    HELD_OUT_DIGIT, with all a projected into it (Fig. C3)
    """
    basis = Basis("helix", tuple(periods))
    cols = ["linear" if c == "a" else c for c in basis.columns()[:-1]]
    proj = pd.DataFrame(to_numpy(projection(fits, basis, layer, H[layer])), columns=cols)
    proj.insert(0, "a", values)
    C = fits.coefficients(basis)[layer, :-1]
    mags = pd.DataFrame({"column": cols, "norm": to_numpy(C.norm(dim=-1)), "layer": layer})
    cos = to_numpy(column_cosine(C))
    cosine = pd.DataFrame(
        [
            {"column_1": cols[i], "column_2": cols[j], "cosine": float(cos[i, j])}
            for i in range(len(cols))
            for j in range(len(cols))
        ]
    )
    keep = np.asarray(values) % 10 != HELD_OUT_DIGIT
    one_period = Basis("helix", (CONTINUITY_PERIOD,))
    cont_fits = fit_bases(
        H[layer : layer + 1, torch.as_tensor(np.flatnonzero(keep))],
        np.asarray(values)[keep],
        [one_period],
        n_components=H.shape[1],
    )
    c_coords = to_numpy(projection(cont_fits, one_period, 0, H[layer]))
    continuity = pd.DataFrame(c_coords, columns=["linear" if c == "a" else c for c in one_period.columns()[:-1]])
    continuity.insert(0, "a", values)
    continuity["held_out"] = ~keep
    continuity["layer"] = layer
    proj["layer"] = layer
    return {"projection": proj, "magnitudes": mags, "cosine": cosine, "continuity": continuity}


def r2_table(fits: Fits) -> pd.DataFrame:
    """R² of every basis at every layer."""
    rows = []
    for s, b in enumerate(fits.bases):
        for layer, r2 in enumerate(to_numpy(fits.r2[s])):
            rows.append(
                {
                    "basis": b.name,
                    "kind": b.kind,
                    "periods": ",".join(map(str, b.periods)),
                    "degree": b.degree,
                    "n_params": b.n_params,
                    "layer": layer,
                    "r2": float(r2),
                }
            )
    return pd.DataFrame(rows)

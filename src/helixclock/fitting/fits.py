"""Helix, circle, polynomial and PCA fits to residuals, shared by every stage (paper
sections 4.2-5.3); the bases themselves are :mod:`helixclock.fitting.bases`.

*PCA* (the baseline of section 4.3) keeps the first 2k+1 principal components of h itself.
Fitting follows the paper: per layer, project h to its first 100 principal components
(fewer where there are fewer distinct rows), solve least squares for C_PCA, and map back
through the PCA to C.  Every layer and every basis is solved at once: the pseudo-inverses
of all bases are stacked and contracted against all layers' projections in one einsum.
Shapes follow the convention ``C: [layers, m, d]`` (rows = basis columns), so
``h_fit = mean + B(a) @ C``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from ..project.io import to_numpy
from .bases import Basis


@dataclass
class PCA:
    """Per-layer PCA: mean [L, d], components [L, p, d] (orthonormal rows), variance [L, p]."""

    mean: Tensor
    components: Tensor
    variance: Tensor

    def project(self, H: Tensor, n: int | None = None) -> Tensor:
        """[L, rows, d] -> [L, rows, n] coordinates on the first n components."""
        comps = self.components if n is None else self.components[:, :n]
        return torch.einsum("lrd,lpd->lrp", H - self.mean[:, None], comps)


def fit_pca(H: Tensor, n_components: int = 100, weights: Tensor | None = None) -> PCA:
    """PCA of each layer of H [L, rows, d] (float64), rows weighted by ``weights`` [rows]
    (a row with weight w counts as w identical rows).  Layers share one number of
    components: ``n_components``, or fewer where no layer has that many distinct rows (the
    largest rank over layers)."""
    H = H.double()
    w = _weights(weights, H)
    mean = (w[None, :, None] * H).sum(1) / w.sum()
    X = (H - mean[:, None]) * w.sqrt()[None, :, None]
    _, S, Vh = torch.linalg.svd(X, full_matrices=False)
    rank = int((S > S[:, :1].clamp_min(1e-300) * 1e-9).sum(1).max()) if S.numel() else 1
    p = int(min(n_components, S.shape[1], max(1, rank)))
    return PCA(mean, Vh[:, :p], (S[:, :p] ** 2) / max(1.0, float(w.sum()) - 1))


def _weights(weights: Tensor | None, H: Tensor) -> Tensor:
    if weights is None:
        return torch.ones(H.shape[1], dtype=torch.float64, device=H.device)
    return torch.as_tensor(weights, dtype=torch.float64, device=H.device)


def unique_rows(values: np.ndarray, H: Tensor) -> tuple[np.ndarray, Tensor, Tensor]:
    """Collapse rows that share a value (the a token's residual depends on a alone):
    one row per distinct value, with its count as weight."""
    uniq, first, counts = np.unique(np.asarray(values), return_index=True, return_counts=True)
    return uniq, H[:, torch.as_tensor(first)], torch.as_tensor(counts, dtype=torch.float64)


@dataclass
class Fits:
    """Fits of several bases to all layers: C [S, L, m_max, d] (rows past a basis' m are zero)."""

    bases: list[Basis]
    C: Tensor
    coef_pca: Tensor  # [S, L, m_max, p]
    r2: Tensor  # [S, L]
    pca: PCA
    attrs: dict = field(default_factory=dict)

    def index(self, basis: Basis) -> int:
        return self.bases.index(basis)

    def coefficients(self, basis: Basis) -> Tensor:
        """C of one basis, [L, m, d]."""
        s = self.index(basis)
        return self.C[s, :, : len(basis.columns())]

    def predict(self, basis: Basis, values, layers: Sequence[int] | None = None) -> Tensor:
        """h_fit for the given variable values, [L, rows, d] (float32, C's device)."""
        B = torch.as_tensor(basis(values), dtype=self.C.dtype, device=self.C.device)
        C = self.coefficients(basis)
        mean = self.pca.mean
        if layers is not None:
            C, mean = C[list(layers)], mean[list(layers)]
        return (mean[:, None].to(C.dtype) + torch.einsum("rm,lmd->lrd", B, C)).float()


def fit_bases(
    H: Tensor,
    values: Mapping[str, np.ndarray] | np.ndarray,
    bases: Sequence[Basis],
    n_components: int = 100,
    pca: PCA | None = None,
    weights: Tensor | None = None,
) -> Fits:
    """Least-squares fits of every basis to every layer of H [L, rows, d], via PCA.

    Rows may carry weights (weighted least squares, as if repeated).  R^2 is measured
    in the PCA space: 1 - |P - B C_PCA|^2 / |P - mean(P)|^2 per layer (weighted).
    """
    pca = pca or fit_pca(H, n_components, weights)
    device = H.device
    sw = _weights(weights, H).sqrt()
    P = pca.project(H.double()) * sw[None, :, None]  # [L, rows, p], rows scaled by sqrt(w)
    m_max = max(len(b.columns()) for b in bases)
    rows = P.shape[1]
    pinvs = torch.zeros(len(bases), m_max, rows, dtype=torch.float64, device=device)
    Bs = torch.zeros(len(bases), rows, m_max, dtype=torch.float64, device=device)
    for s, basis in enumerate(bases):
        B = torch.as_tensor(basis(values), dtype=torch.float64, device=device) * sw[:, None]
        m = B.shape[1]
        Bs[s, :, :m] = B
        pinvs[s, :m] = torch.linalg.pinv(B)
    coef = torch.einsum("smr,lrp->slmp", pinvs, P)  # [S, L, m, p]
    for s, basis in enumerate(bases):
        if not basis.scaled:  # the authors' solver, whatever directions it keeps
            coef[s, :, : len(basis.columns())] = authors_least_squares(Bs[s, :, : len(basis.columns())], P)
    pred = torch.einsum("srm,slmp->slrp", Bs, coef)
    ss_res = ((P[None] - pred) ** 2).sum((2, 3))
    # P is already centred (weighted) by the PCA mean
    ss_tot = (P**2).sum((1, 2))
    r2 = 1 - ss_res / ss_tot.clamp_min(1e-30)[None]
    C = torch.einsum("slmp,lpd->slmd", coef, pca.components)
    return Fits(list(bases), C.float(), coef, r2.float(), pca)


def authors_least_squares(B: Tensor, P: Tensor) -> Tensor:
    """scikit-learn's LinearRegression(fit_intercept=False) of every layer's P [L, rows, p] on
    B [rows, m], as the authors solved their polynomial: [L, m, p].  scikit-learn before 1.9
    (the authors') solved with scipy's default cutoff for small singular values, machine
    epsilon relative to the largest; 1.9 made the cutoff its ``tol`` (1e-6), so the cutoff is
    set explicitly to keep the directions their fit kept."""
    # deferred: scikit-learn (about a second) only for config key compat: authors
    from sklearn.linear_model import LinearRegression

    X = to_numpy(B)
    eps = float(np.finfo(X.dtype).eps)
    out = [LinearRegression(fit_intercept=False, tol=eps).fit(X, Y).coef_.T for Y in to_numpy(P)]
    return torch.as_tensor(np.stack(out), dtype=P.dtype, device=P.device)


def helix_projection(C: Tensor, H: Tensor) -> Tensor:
    """Coordinates of h in the basis' subspace: C^+ applied to h.  C [m, d], H [rows, d]
    -> [rows, m]; for a good fit the coordinates reproduce B(a) (cos, sin, a/scale, 1)."""
    return H.double() @ torch.linalg.pinv(C.double())


def column_cosine(C: Tensor) -> Tensor:
    """Cosine similarity between the columns of the paper's C (rows of ours): [m, m]."""
    unit = C / C.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return unit @ unit.T


def subspace_projector(C: Tensor, drop_const: bool = True) -> Tensor:
    """Orthogonal projector [d, d] onto the span of the basis directions (C's rows)."""
    rows = (C[:-1] if drop_const else C).double()
    U, S, _ = torch.linalg.svd(rows.T, full_matrices=False)
    U = U[:, S > S.max() * 1e-6]  # an unidentifiable column (sin 2 pi a / 2 = 0) spans nothing
    return (U @ U.T).to(C.dtype)


def projection(fits: Fits, basis: Basis, layer: int, H: Tensor) -> Tensor:
    """Coordinates of residuals H [rows, d] of one layer in a basis' subspace: the x that
    best solves h - mean - c_const = x C (C without its constant row), i.e. C^+ h."""
    C = fits.coefficients(basis)[layer].double()
    centred = H.double() - fits.pca.mean[layer].double() - C[-1]
    return helix_projection(C[:-1], centred)


def fit_token(
    H: Tensor, values, bases: Sequence[Basis], n_components: int = 100, dedupe: bool = True, max_elements: int = 2**27
) -> Fits:
    """Fit ``bases`` to residuals H [L, rows, d] of one token.

    With ``dedupe`` rows sharing a value are collapsed, weighted by their counts (the a
    token's residual depends on a alone).  Layers are fitted in chunks of at most
    ``max_elements`` residual entries, so a 6B model's b-token fit stays in memory.
    """
    weights = None
    if dedupe:
        values, H, weights = unique_rows(values, H)
        weights = weights.to(H.device)
    per_layer = H.shape[1] * H.shape[2]
    step = max(1, max_elements // max(1, per_layer))
    parts = [
        fit_bases(H[i : i + step], values, bases, n_components, weights=weights) for i in range(0, H.shape[0], step)
    ]
    return parts[0] if len(parts) == 1 else concat_fits(parts)


def concat_fits(parts: Sequence[Fits]) -> Fits:
    """Fits of consecutive layer chunks as one (PCA components padded to a common size)."""
    p = max(f.pca.components.shape[1] for f in parts)

    def pad(x: Tensor, dim: int) -> Tensor:
        extra = p - x.shape[dim]
        if extra == 0:
            return x
        shape = list(x.shape)
        shape[dim] = extra
        return torch.cat([x, x.new_zeros(shape)], dim)

    pca = PCA(
        torch.cat([f.pca.mean for f in parts]),
        torch.cat([pad(f.pca.components, 1) for f in parts]),
        torch.cat([pad(f.pca.variance, 1) for f in parts]),
    )
    return Fits(
        parts[0].bases,
        torch.cat([f.C for f in parts], 1),
        torch.cat([pad(f.coef_pca, 3) for f in parts], 1),
        torch.cat([f.r2 for f in parts], 1),
        pca,
    )


def to_device(fits: Fits, device) -> Fits:
    """The fits with their coefficients and PCA on ``device``."""
    pca = PCA(fits.pca.mean.to(device), fits.pca.components.to(device), fits.pca.variance.to(device))
    return Fits(fits.bases, fits.C.to(device), fits.coef_pca.to(device), fits.r2.to(device), pca, fits.attrs)

"""Causal tests of the helix fits (paper sections 4.4-4.5, appendix C).

Following Engels et al., a fit is tested by patching it in: on the corrupted prompt
a'+b, the residual at the a token of layer l is replaced by the fit evaluated at the
clean a, and LD measures how much of the clean answer comes back.  Baselines: the
clean residual itself (layer patch), its first 2k+1 principal components (PCA), a
circle (no linear term) and a polynomial of degree 2k+1.  Every fit of every layer is
one variant of a single batched engine run.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from .helix import PCA, PERIODS, Basis, Fits, best_subsets, fit_bases, standard_bases, subspace_projector, unique_rows
from .patching import Pairs, Patch, PatchingEngine, Point, bootstrap_ci

METHOD_ORDER = ("layer", "pca", "helix", "circle", "poly")


def fit_token(H: Tensor, values: np.ndarray, bases: Sequence[Basis], n_components: int = 100,
              dedupe: bool = True) -> Fits:
    """Fit ``bases`` to residuals H [L, rows, d] of one token; rows with the same value
    are collapsed with their counts as weights when ``dedupe`` (a token: h depends on a only)."""
    if dedupe:
        vals, H_u, w = unique_rows(values, H)
        return fit_bases(H_u, vals, bases, n_components, weights=w.to(H.device))
    return fit_bases(H, values, bases, n_components)


def _pca_fn(pca: PCA, layer: int, n: int) -> Callable[[Tensor, Tensor], Tensor]:
    mean = pca.mean[layer].float()
    comps = pca.components[layer, :n].float()

    def fn(clean: Tensor, corrupted: Tensor) -> Tensor:
        c = clean.float() - mean
        return mean + (c @ comps.T) @ comps

    return fn


def fit_variants(fits: Fits, layers: Sequence[int], position: int, clean_values,
                 bases: Sequence[Basis] | None = None, pca_ks: Sequence[int] = (1, 2, 3, 4),
                 layer_patch: bool = True) -> tuple[list[list[Patch]], list[dict]]:
    """One variant per (layer, method): the layer patch, PCA with 2k+1 components, and
    each basis evaluated at the clean values of the pairs."""
    bases = list(bases if bases is not None else fits.bases)
    device = fits.C.device
    variants: list[list[Patch]] = []
    labels: list[dict] = []
    preds = {b: fits.predict(b, clean_values, layers) for b in bases}  # [len(layers), n, d]
    for li, layer in enumerate(layers):
        point = Point("resid_pre", layer, (position,))
        if layer_patch:
            variants.append([Patch(point, "clean")])
            labels.append({"layer": layer, "method": "layer", "periods": "", "k": np.nan, "n_params": np.nan})
        for k in pca_ks:
            n = 2 * k + 1
            variants.append([Patch(point, _pca_fn(fits.pca, layer, n))])
            labels.append({"layer": layer, "method": "pca", "periods": "", "k": k, "n_params": n})
        for b in bases:
            variants.append([Patch(point, preds[b][li][:, None].to(device))])
            labels.append({"layer": layer, "method": b.kind, "periods": ",".join(map(str, b.periods)),
                           "k": b.k, "n_params": b.n_params, "basis": b.name})
    return variants, labels


def summarise(ld: Tensor, labels: list[dict], n_boot: int = 1000, seed: int = 0, **extra) -> pd.DataFrame:
    """Mean LD per variant with a bootstrap 95% interval over pairs."""
    mean, lo, hi = bootstrap_ci(ld, n_boot=n_boot, seed=seed)
    df = pd.DataFrame(labels)
    df["ld_mean"], df["ld_low"], df["ld_high"] = (x.cpu().numpy() for x in (mean, lo, hi))
    df["n_pairs"] = ld.shape[1]
    for k, v in extra.items():
        df[k] = v
    return df


def patch_sweep(engine: PatchingEngine, pairs: Pairs, fits: Fits, layers: Sequence[int], position: int,
                clean_values, bases=None, pca_ks=(1, 2, 3, 4), n_boot: int = 1000, seed: int = 0,
                desc: str = "helix patching", **extra) -> pd.DataFrame:
    variants, labels = fit_variants(fits, layers, position, clean_values, bases, pca_ks)
    result = engine.run(pairs, variants, desc=desc)
    return summarise(result.metric, labels, n_boot, seed, **extra)


def best_subset_table(df: pd.DataFrame) -> pd.DataFrame:
    """For helix and circle and each k, the subset of periods with the largest mean LD
    over layers (every subset compared)."""
    fits = df[df["method"].isin(["helix", "circle"])]
    means = fits.groupby(["method", "periods"])["ld_mean"].mean()
    table = {(m, tuple(int(t) for t in p.split(","))): v for (m, p), v in means.items()}
    best = best_subsets(table)
    rows = [{"method": m, "k": k, "periods": ",".join(map(str, per)), "mean_ld_over_layers": table[(m, per)]}
            for (m, k), per in sorted(best.items())]
    return pd.DataFrame(rows)


def fig04_curves(df: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """The curves of Fig. 4: layer patch, PCA, best helix and circle per k, polynomial."""
    keep = df["method"].isin(["layer", "pca", "poly"])
    for row in best.itertuples():
        keep |= (df["method"] == row.method) & (df["periods"] == row.periods)
    return df[keep].reset_index(drop=True)


def split_values(values: np.ndarray, frac_test: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One seeded split of distinct values into (train, test)."""
    uniq = np.unique(values)
    rng = np.random.default_rng(seed)
    test = np.sort(rng.choice(uniq, size=max(1, int(round(frac_test * len(uniq)))), replace=False))
    return np.setdiff1d(uniq, test), test


def ablation_sweep(engine: PatchingEngine, pairs: Pairs, fits: Fits, basis: Basis, layers: Sequence[int],
                   position: int, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Mean-ablate the helix subspace (span of C's directions) of h_a at each layer, versus
    mean-ablating h_a entirely; ``pairs`` must have corrupted == clean, so LD is the change
    of the clean answer's logit."""
    C = fits.coefficients(basis)  # [L, m, d]
    variants, labels = [], []
    for layer in layers:
        mean = fits.pca.mean[layer].float()
        P = subspace_projector(C[layer].float())

        def helix_ablate(clean, cur, mean=mean, P=P):
            return cur - (cur - mean) @ P

        def full_ablate(clean, cur, mean=mean):
            return mean.expand_as(cur)

        point = Point("resid_pre", layer, (position,))
        variants += [[Patch(point, helix_ablate)], [Patch(point, full_ablate)]]
        labels += [{"layer": layer, "method": "helix subspace", "basis": basis.name},
                   {"layer": layer, "method": "entire h_a", "basis": basis.name}]
    result = engine.run(pairs, variants, desc="ablation")
    return summarise(result.metric, labels, n_boot, seed)


def other_task_curves(engine: PatchingEngine, task: str, H: Tensor, values: np.ndarray, pairs: Pairs,
                      layers: Sequence[int], position: int, periods: Sequence[int] = PERIODS,
                      n_components: int = 100, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Full helix/circle/poly and PCA with as many parameters, for one task (Table 1)."""
    k = len(periods)
    bases = [Basis("helix", tuple(periods)), Basis("circle", tuple(periods)), Basis("poly", degree=2 * k + 1)]
    fits = fit_token(H, values, bases, n_components)
    return patch_sweep(engine, pairs, fits, layers, position, pairs.meta["clean_a"], bases, pca_ks=(k,),
                       n_boot=n_boot, seed=seed, desc=f"patching {task}", task=task)


def other_tasks_table(curves: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """tab01: max over layers of mean LD, per task and method."""
    names = {"layer": "Full", "pca": "PCA", "helix": "Helix", "circle": "Circle", "poly": "Poly"}
    best = curves.groupby(["task", "method"])["ld_mean"].max().unstack("method")
    best = best.rename(columns=names)[["Full", "PCA", "Helix", "Circle", "Poly"]]
    best = best.loc[[t for t in labels if t in best.index]]
    best.index = [labels[t] for t in best.index]
    return best.reset_index(names="task")


def default_bases(periods: Sequence[int] = PERIODS) -> list[Basis]:
    return standard_bases(periods)

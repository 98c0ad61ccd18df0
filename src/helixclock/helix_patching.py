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
from .patching import Pairs, Patch, PatchingEngine, Point, bootstrap_ci, draw_pairs

METHOD_ORDER = ("layer", "pca", "helix", "circle", "poly")


def fit_token(H: Tensor, values, bases: Sequence[Basis], n_components: int = 100,
              dedupe: bool = True, max_elements: int = 2 ** 27) -> Fits:
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
    parts = [fit_bases(H[i:i + step], values, bases, n_components, weights=weights)
             for i in range(0, H.shape[0], step)]
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

    pca = PCA(torch.cat([f.pca.mean for f in parts]), torch.cat([pad(f.pca.components, 1) for f in parts]),
              torch.cat([pad(f.pca.variance, 1) for f in parts]))
    return Fits(parts[0].bases, torch.cat([f.C for f in parts], 1), torch.cat([pad(f.coef_pca, 3) for f in parts], 1),
                torch.cat([f.r2 for f in parts], 1), pca)


def _pca_fn(pca: PCA, layer: int, n: int) -> Callable[[Tensor, Tensor], Tensor]:
    mean = pca.mean[layer].float()
    comps = pca.components[layer, :n].float()

    def fn(clean: Tensor, corrupted: Tensor) -> Tensor:
        c = clean.float() - mean
        return mean + (c @ comps.T) @ comps

    return fn


def fit_variants(fits: Fits, layers: Sequence[int], position: int, clean_values,
                 bases: Sequence[Basis] | None = None, pca_ks: Sequence[int] = (1, 2, 3, 4),
                 layer_patch: bool = True, pca_ns: Sequence[int] = ()) -> tuple[list[list[Patch]], list[dict]]:
    """One variant per (layer, method): the layer patch, PCA with 2k+1 components for each
    k in ``pca_ks`` (and n components for each n in ``pca_ns``), and each basis evaluated at
    the clean values of the pairs."""
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
        for k, n in [(k, 2 * k + 1) for k in pca_ks] + [(np.nan, n) for n in pca_ns]:
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
                desc: str = "helix patching", layer_patch: bool = True, pca_ns: Sequence[int] = (),
                **extra) -> pd.DataFrame:
    variants, labels = fit_variants(fits, layers, position, clean_values, bases, pca_ks, layer_patch, pca_ns)
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


def default_bases(periods: Sequence[int] = PERIODS) -> list[Basis]:
    return standard_bases(periods)


def full_bases(periods: Sequence[int] = PERIODS, variable: str = "a") -> list[Basis]:
    """Helix and circle with every period, polynomial with as many parameters as the helix."""
    v = (variable,)
    return [Basis("helix", tuple(periods), variables=v), Basis("circle", tuple(periods), variables=v),
            Basis("poly", degree=2 * len(periods) + 1, variables=v)]


def helix_stage(engine: PatchingEngine, correct: pd.DataFrame, cache, fits: Fits, template: str,
                n_pairs: int = 100, seed: int = 0, n_boot: int = 1000, periods: Sequence[int] = PERIODS,
                test_fraction: float = 0.2, n_components: int = 100) -> dict[str, pd.DataFrame]:
    """Everything of section 4.4 and appendix C that runs the model, for a+b.

    sweep: every fit of every layer patched at the a token (Fig. 4 picks from it)
    best: the best period subset per kind and k
    controls: (1) one seeded split of a values, fitted on 80% and patched with the held-out
    20%; (2) a helix fitted to shuffled a; (3) helix(b) at the b token with pairs a+b' -> a+b
    ablation: the helix subspace mean-ablated from h_a vs h_a mean-ablated entirely
    """
    model = engine.model
    tok, device = model.tokenizer, model.device
    L = int(cache.attrs["n_layers"])
    layers = list(range(L))
    pos_a, pos_b = int(cache.attrs["position_a"]), int(cache.attrs["position_b"])
    H_a = torch.from_numpy(cache.a).transpose(0, 1).to(device)  # [L+1, n, d]
    a_vals, b_vals = cache.ab[:, 0], cache.ab[:, 1]
    pairs = draw_pairs(correct, n_pairs, seed, tok, template, ("a",), device=device)
    sweep = patch_sweep(engine, pairs, fits, layers, pos_a, pairs.meta["clean_a"], n_boot=n_boot, seed=seed)
    best = best_subset_table(sweep)
    bases = full_bases(periods)
    helix = bases[0]

    train_a, test_a = split_values(a_vals, test_fraction, seed)
    rows = np.isin(a_vals, train_a)
    fits_train = fit_token(H_a[:, torch.as_tensor(np.flatnonzero(rows), device=device)], a_vals[rows],
                           bases, n_components)
    pairs_test = draw_pairs(correct, n_pairs, seed, tok, template, ("a",), clean_a=test_a, device=device)
    split = patch_sweep(engine, pairs_test, fits_train, layers, pos_a, pairs_test.meta["clean_a"], bases,
                        pca_ks=(len(periods),), n_boot=n_boot, seed=seed, desc="train/test control",
                        control="train/test split", test_a=" ".join(map(str, test_a)))

    perm = np.random.default_rng(seed + 1).permutation(int(a_vals.max()) + 1)
    fits_shuf = fit_token(H_a, perm[a_vals], [helix], n_components)
    shuffled = patch_sweep(engine, pairs, fits_shuf, layers, pos_a, perm[pairs.meta["clean_a"]], [helix],
                           pca_ks=(), layer_patch=False, n_boot=n_boot, seed=seed, desc="shuffled control",
                           control="shuffled a")
    shuffled["method"] = "helix (shuffled a)"
    reference = sweep[(sweep["method"].isin(["layer", "helix"])) &
                      ((sweep["method"] == "layer") | (sweep["periods"] == ",".join(map(str, periods))))].copy()
    reference["control"] = "shuffled a"

    H_b = torch.from_numpy(cache.b).transpose(0, 1).to(device)
    bases_b = full_bases(periods, "b")
    fits_b = fit_token(H_b, {"b": b_vals}, bases_b, n_components, dedupe=False)
    pairs_b = draw_pairs(correct, n_pairs, seed, tok, template, ("b",), device=device)
    b_token = patch_sweep(engine, pairs_b, fits_b, layers, pos_b, {"b": pairs_b.meta["clean_b"]}, bases_b,
                          pca_ks=(len(periods),), n_boot=n_boot, seed=seed, desc="b-token control",
                          control="b token")

    same = Pairs(pairs.clean, pairs.clean, pairs.clean_answer, pairs.clean_answer, dict(pairs.meta))
    ablation = ablation_sweep(engine, same, fits, helix, layers, pos_a, n_boot, seed)
    controls = pd.concat([split, reference, shuffled, b_token], ignore_index=True)
    return {"sweep": sweep, "best": best, "controls": controls, "ablation": ablation}


def other_tasks_stage(engine: PatchingEngine, frames: dict[str, pd.DataFrame], prompts: dict[str, str],
                      n_pairs: int = 100, seed: int = 0, n_boot: int = 1000, periods: Sequence[int] = PERIODS,
                      n_components: int = 100) -> pd.DataFrame:
    """Table 1: full helix, circle, polynomial and PCA fits patched at the a token, per task."""
    from .tasks import check_task_tokens, get_task

    model = engine.model
    layers = list(range(model.adapter.n_layers))
    out = []
    for task, acc in frames.items():
        correct = acc[acc["correct"]]
        if correct["answer"].nunique() < 2:
            raise ValueError(f"task {task!r}: fewer than two distinct correct answers; cannot draw pairs")
        found = check_task_tokens(model.tokenizer, model.name, get_task(task), prompts[task], answers=False)
        pos = found.positions.a
        ids = torch.tensor(model.tokenizer([prompts[task].replace("{a}", str(int(a))).replace("{b}", str(int(b)))
                                            for a, b in zip(correct["a"], correct["b"])])["input_ids"])
        points = [Point("resid_pre", l, (pos,)) for l in layers]
        values, _ = engine.collect(ids, points, logits=False, desc=f"a-token residuals {task}")
        H = torch.stack([values[p][:, 0] for p in points])  # [L, n, d]
        pairs = draw_pairs(correct, n_pairs, seed, model.tokenizer, prompts[task], ("a",), device=model.device)
        out.append(other_task_curves(engine, task, H, correct["a"].to_numpy(), pairs, layers, pos, periods,
                                     n_components, n_boot, seed))
    return pd.concat(out, ignore_index=True)

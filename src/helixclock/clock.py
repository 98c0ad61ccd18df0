"""The Clock algorithm at the last token (paper section 5.1, appendix D).

To compute a+b the model must build helix(a+b) on the last token.  Its last-token residual
is fitted with helix(a, b, a+b) (27 parameters with T = [2, 5, 10, 100]), helix(a+b) and
helix(a, b), compared with a 27-component PCA and the layer patch (Fig. 5).  Per layer,
the total effect (TE, activation patching) and direct effect (DE, path patching to the
logits) of each attention and MLP output say where the computation happens (Fig. 6).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import torch

from .helix import PERIODS, Basis
from .helix_patching import fit_token, patch_sweep, summarise
from .patching import Pairs, Patch, PatchingEngine, Point, draw_pairs

SUM = "a+b"


def sum_values(a, b) -> dict[str, np.ndarray]:
    a, b = np.asarray(a), np.asarray(b)
    return {"a": a, "b": b, SUM: a + b}


def last_token_bases(periods: Sequence[int] = PERIODS) -> list[Basis]:
    """helix(a, b, a+b), helix(a+b) and helix(a, b)."""
    T = tuple(periods)
    return [Basis("helix", T, variables=("a", "b", SUM)), Basis("helix", T, variables=(SUM,)),
            Basis("helix", T, variables=("a", "b"))]


def clock_pairs(engine: PatchingEngine, correct: pd.DataFrame, template: str, n_pairs: int, seed: int,
                vary: Sequence[str] = ("a", "b")) -> Pairs:
    """Clean a+b and corrupted prompts (a'+b' by default) for the last-token experiments."""
    model = engine.model
    return draw_pairs(correct, n_pairs, seed, model.tokenizer, template, tuple(vary), device=model.device)


def last_token_curves(engine: PatchingEngine, pairs: Pairs, cache, periods: Sequence[int] = PERIODS,
                      n_components: int = 100, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Fig. 5: fits of the last-token residual patched at every layer (incl. the final one)."""
    L = int(cache.attrs["n_layers"])
    last = int(cache.attrs["position_last"])
    bases = last_token_bases(periods)
    H = torch.from_numpy(cache.last).transpose(0, 1).to(pairs.clean.device)  # [L+1, n, d]
    values = sum_values(cache.ab[:, 0], cache.ab[:, 1])
    fits = fit_token(H, values, bases, n_components, dedupe=False)
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    n_pca = bases[0].n_params
    df = patch_sweep(engine, pairs, fits, list(range(L + 1)), last, clean, bases, pca_ks=(),
                     pca_ns=(min(n_pca, fits.pca.components.shape[1]),), n_boot=n_boot, seed=seed,
                     desc="last-token fits")
    df["fit"] = df.apply(lambda r: _fit_label(r), axis=1)
    return df


def _fit_label(row) -> str:
    if row["method"] == "layer":
        return "layer patch"
    if row["method"] == "pca":
        return f"PCA ({int(row['n_params'])} comps)"
    return row["basis"].split("[")[0]


def component_points(adapter, last: int, kinds=("attn_out", "mlp_out")) -> list[Point]:
    return [Point(k, l, (last,)) for l in range(adapter.n_layers) for k in kinds]


def total_and_direct(engine: PatchingEngine, pairs: Pairs, points: Sequence[Point], n_boot: int = 1000,
                     seed: int = 0, desc: str = "total effects") -> tuple[pd.DataFrame, torch.Tensor, torch.Tensor]:
    """TE (activation patching) and DE (path patching to the logits) of each point."""
    te = engine.run(pairs, [[Patch(p)] for p in points], desc=desc).metric
    de = engine.direct_effects(pairs, points)
    labels = [{"layer": p.layer, "component": _component(p), "head": p.head if p.head is not None else -1}
              for p in points]
    df_te = summarise(te, labels, n_boot, seed)
    df_de = summarise(de, labels, n_boot, seed)
    df = df_te.rename(columns={"ld_mean": "te", "ld_low": "te_low", "ld_high": "te_high"})
    for col in ("mean", "low", "high"):
        df[f"de{'' if col == 'mean' else '_' + col}"] = df_de[f"ld_{col}"].to_numpy()
    return df, te, de


def _component(p: Point) -> str:
    return {"attn_out": "attention", "mlp_out": "MLP", "head_out": "head"}[p.kind]


def topk_curve(engine: PatchingEngine, pairs: Pairs, ordered: Sequence[Point], ks: Sequence[int] | None = None,
               n_boot: int = 1000, seed: int = 0, desc: str = "top-k") -> pd.DataFrame:
    """Patch the first k of ``ordered`` together, for each k, against patching all of them:
    the fraction of the all-components effect that k of them restore."""
    ks = list(ks) if ks is not None else list(range(1, len(ordered) + 1))
    variants = [[Patch(p) for p in ordered[:k]] for k in ks] + [[Patch(p) for p in ordered]]
    ld = engine.run(pairs, variants, desc=desc).metric
    full = ld[-1].mean()
    df = summarise(ld[:-1], [{"k": k} for k in ks], n_boot, seed)
    df["all_effect"] = float(full)
    df["fraction"] = df["ld_mean"] / float(full) if float(full) != 0 else np.nan
    return df


def smallest_k(curve: pd.DataFrame, threshold: float) -> int:
    """The smallest k whose fraction reaches ``threshold`` (the largest k if none does)."""
    hit = curve[curve["fraction"] >= threshold]
    return int(hit["k"].min()) if len(hit) else int(curve["k"].max())


def fit_prompt_ids(model, correct: pd.DataFrame, template: str, n: int, seed: int):
    """A seeded sample of at most n correct prompts: (token ids, a, b)."""
    from .tasks import render

    rows = correct.sample(n=min(n, len(correct)), random_state=seed) if len(correct) > n else correct
    ids = torch.tensor(model.tokenizer([render(template, int(a), int(b)) for a, b in zip(rows["a"], rows["b"])])
                       ["input_ids"])
    return ids, rows["a"].to_numpy(), rows["b"].to_numpy()

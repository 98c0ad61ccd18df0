"""Attention heads (paper section 5.2, appendix D.1).

Heads are activation- and path-patched at the last token and ranked by total effect (TE).
The top heads are modelled with helix fits of their outputs and sorted into
*a,b heads* (move the a and b helices to the last token: mostly indirect effect, well
modelled by helix(a, b)) and *a+b heads* (write helix(a+b) to the logits: mostly direct
effect), with the paper's confidences

    c_ab  = (1 - DE/TE) * helix(a,b) / helix(a,b,a+b)
    c_a+b = (DE/TE)     * helix(a+b) / helix(a,b,a+b)

where helix(.) is the LD recovered when the head's output is replaced by that fit.  The
m least confident heads may be *mixed* (kept as they are); a,b heads are restricted to
helix(a, b), a+b heads to helix(a+b) written only to the logits (Fig. D5).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import torch

from .clock import SUM, last_token_bases, smallest_k, sum_values, topk_curve, total_and_direct
from .helix import PERIODS, Basis, Fits
from .helix_patching import fit_token, summarise
from .patching import Pairs, Patch, PatchingEngine, Point

CATEGORIES = ("a,b", "a+b", "mixed")
MIN_EFFECT = 0.02


def head_points(adapter, last: int) -> list[Point]:
    return [Point("head_out", l, (last,), head=h) for l in range(adapter.n_layers) for h in range(adapter.n_heads)]


def head_label(p: Point) -> str:
    return f"L{p.layer}H{p.head}"


def fit_heads(engine: PatchingEngine, prompt_ids: torch.Tensor, a: np.ndarray, b: np.ndarray, last: int,
              periods: Sequence[int] = PERIODS, n_components: int = 100) -> Fits:
    """helix(a,b,a+b), helix(a+b) and helix(a,b) fitted to every head's output at the last
    token; heads are stacked along the fit's layer axis (index layer * n_heads + head)."""
    ad = engine.adapter
    points = [Point("head_out", l, (last,)) for l in range(ad.n_layers)]
    values, _ = engine.collect(prompt_ids, points, logits=False, desc="head outputs")
    H = torch.stack([values[p][:, 0] for p in points], 1)  # [n, L, H, dh]
    H = H.reshape(H.shape[0], -1, ad.d_head).transpose(0, 1)  # [L*H, n, dh]
    return fit_token(H.float(), sum_values(a, b), last_token_bases(periods), n_components, dedupe=False)


def fitted_output(fits: Fits, basis: Basis, point: Point, n_heads: int, clean: dict) -> torch.Tensor:
    """A head's fitted output at the clean values, [n, 1, d_head]."""
    return fits.predict(basis, clean, layers=[point.layer * n_heads + point.head])[0][:, None]


def fit_effects(engine: PatchingEngine, pairs: Pairs, points: Sequence[Point], fits: Fits,
                bases: Sequence[Basis], n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """LD when each head's output is replaced by each fit (evaluated at the clean a, b)."""
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    H = engine.adapter.n_heads
    variants, labels = [], []
    for p in points:
        for b in bases:
            variants.append([Patch(p, fitted_output(fits, b, p, H, clean))])
            labels.append({"layer": p.layer, "head": p.head, "fit": b.name.split("[")[0]})
    ld = engine.run(pairs, variants, desc="head fits").metric
    return summarise(ld, labels, n_boot, seed)


def categorise(heads: pd.DataFrame) -> pd.DataFrame:
    """Add c_ab, c_a+b, c = max of both, and the category a,b or a+b; sort by c (descending).

    ``heads`` has columns te, de and the fit LDs fit_ab = helix(a,b), fit_sum = helix(a+b),
    fit_all = helix(a,b,a+b).  DE/TE and the fit ratios are clipped to [0, 1].
    """
    df = heads.copy()
    # the formulas read DE/TE and fit/helix(a,b,a+b) as fractions: clip noise outside [0, 1]
    ratio = (df["de"] / df["te"]).clip(0, 1)
    df["c_ab"] = (1 - ratio) * (df["fit_ab"] / df["fit_all"]).clip(0, 1)
    df["c_a+b"] = ratio * (df["fit_sum"] / df["fit_all"]).clip(0, 1)
    df["c"] = df[["c_ab", "c_a+b"]].max(axis=1)
    df["category"] = np.where(df["c_ab"] >= df["c_a+b"], "a,b", "a+b")
    return df.sort_values("c", ascending=False, kind="stable").reset_index(drop=True)


def with_mixed(categorised: pd.DataFrame, m: int) -> pd.Series:
    """Categories when the m least confident heads (lowest c) are mixed."""
    cats = categorised["category"].copy()
    if m > 0:
        cats.iloc[len(cats) - m:] = "mixed"
    return cats


def mixed_sweep(engine: PatchingEngine, pairs: Pairs, categorised: pd.DataFrame, fits: Fits, last: int,
                n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Fig. D5: effect of the top heads under the categorisation with m mixed heads, as a
    fraction of patching all of them with their actual clean outputs, for m = 0..k."""
    ad = engine.adapter
    L, H = ad.n_layers, ad.n_heads
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    helix_ab, helix_sum = last_token_bases()[2], last_token_bases()[1]
    points = [Point("head_out", int(r.layer), (last,), head=int(r.head)) for r in categorised.itertuples()]
    corr = engine.corrupted_values(pairs, points)
    final = Point("resid_pre", L, (last,))
    variants = []
    for m in range(len(points) + 1):
        cats = with_mixed(categorised, m)
        patches = []
        for p, cat in zip(points, cats):
            if cat == "mixed":
                patches.append(Patch(p, "clean"))
            elif cat == "a,b":
                patches.append(Patch(p, fitted_output(fits, helix_ab, p, H, clean)))
            else:  # a+b: helix(a+b) written only to the logits
                delta = engine.contribution(p, fitted_output(fits, helix_sum, p, H, clean)) - \
                    engine.contribution(p, corr[p])
                patches.append(Patch(final, delta, add=True))
        variants.append(patches)
    variants.append([Patch(p, "clean") for p in points])
    ld = engine.run(pairs, variants, desc="mixed heads").metric
    df = summarise(ld[:-1], [{"m": m} for m in range(len(points) + 1)], n_boot, seed)
    full = float(ld[-1].mean())
    df["all_effect"] = full
    df["fraction"] = df["ld_mean"] / full if full != 0 else np.nan
    return df


def attention_to(model, ids: torch.Tensor, query: int, keys: dict[str, int], batch_size: int = 256) -> pd.DataFrame:
    """Mean attention of every head from the query position to the given key positions."""
    hf = model.hf
    previous = hf.config._attn_implementation
    hf.set_attn_implementation("eager")  # attention weights are only materialised by eager
    sums = None
    try:
        with torch.no_grad():
            for i in range(0, ids.shape[0], batch_size):
                out = hf(ids[i:i + batch_size].to(model.device), output_attentions=True)
                att = torch.stack(out.attentions)[:, :, :, query]  # [L, B, H, S]
                part = torch.stack([att[..., k].sum(1) for k in keys.values()], -1)  # [L, H, K]
                sums = part if sums is None else sums + part
    finally:
        hf.set_attn_implementation(previous)
    mean = (sums / ids.shape[0]).cpu().numpy()
    L, H, _ = mean.shape
    rows = [{"layer": l, "head": h, **{f"attn_{k}": float(mean[l, h, j]) for j, k in enumerate(keys)}}
            for l in range(L) for h in range(H)]
    return pd.DataFrame(rows)


def _downstream(adapter, p: Point, last: int) -> list[Point]:
    """Components that read a head's write at the last token."""
    same_layer_mlp = [] if adapter.parallel else [Point("mlp_out", p.layer, (last,))]
    later = [Point("mlp_out", l, (last,)) for l in range(p.layer + 1, adapter.n_layers)]
    heads = [Point("head_out", l, (last,), head=h) for l in range(p.layer + 1, adapter.n_layers)
             for h in range(adapter.n_heads)]
    return same_layer_mlp + later + heads


def _upstream(adapter, p: Point, last: int) -> list[Point]:
    """Components whose write at the last token a head reads."""
    mlps = [Point("mlp_out", l, (last,)) for l in range(p.layer)]
    heads = [Point("head_out", l, (last,), head=h) for l in range(p.layer) for h in range(adapter.n_heads)]
    return mlps + heads


def _name(p: Point) -> str:
    return head_label(p) if p.kind == "head_out" else f"MLP{p.layer}"


def path_analysis(engine: PatchingEngine, pairs: Pairs, senders: dict[str, Point], receivers: dict[str, Point],
                  last: int, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Fig. D7: each sender's effect through each downstream component, and each
    receiver's dependence on each upstream component (path patching)."""
    rows, paths = [], []
    for role, p in senders.items():
        for q in _downstream(engine.adapter, p, last):
            paths.append((p, q))
            rows.append({"analysis": "sender", "role": role, "head": head_label(p), "other": _name(q),
                         "other_kind": "MLP" if q.kind == "mlp_out" else "head", "other_layer": q.layer})
    for role, p in receivers.items():
        for q in _upstream(engine.adapter, p, last):
            paths.append((q, p))
            rows.append({"analysis": "receiver", "role": role, "head": head_label(p), "other": _name(q),
                         "other_kind": "MLP" if q.kind == "mlp_out" else "head", "other_layer": q.layer})
    if not paths:
        return pd.DataFrame(columns=["analysis", "role", "head", "other", "other_kind", "other_layer", "ld_mean"])
    ld = engine.path_patch(pairs, paths, desc="head paths")
    return summarise(ld, rows, n_boot, seed)


def head_stage(engine: PatchingEngine, pairs: Pairs, fit_ids: torch.Tensor, fit_a: np.ndarray,
               fit_b: np.ndarray, positions: dict[str, int], top_heads: int = 20, threshold: float = 0.8,
               periods: Sequence[int] = PERIODS, n_components: int = 100, n_boot: int = 1000,
               seed: int = 0) -> dict[str, pd.DataFrame]:
    """Everything of section 5.2: effects, top-k, fits, categories, mixed sweep, properties, paths."""
    ad = engine.adapter
    last = positions["last"]
    points = head_points(ad, last)
    effects, _, _ = total_and_direct(engine, pairs, points, n_boot, seed, desc="head effects")
    effects["name"] = [head_label(p) for p in points]
    order = np.argsort(-effects["te"].to_numpy(), kind="stable")
    ordered = [points[i] for i in order]
    topk = topk_curve(engine, pairs, ordered, n_boot=n_boot, seed=seed, desc="top-k heads")

    fits = fit_heads(engine, fit_ids, fit_a, fit_b, last, periods, n_components)
    bases = last_token_bases(periods)
    all_fit = fit_effects(engine, pairs, points, fits, bases[:1], n_boot, seed)
    effects["fit_all"] = all_fit["ld_mean"].to_numpy()
    effects["fit_fraction"] = effects["fit_all"] / effects["te"]

    # the top heads by TE; heads without a measurable effect (< MIN_EFFECT of the largest)
    # are not categorised: their ratios are noise
    te_sorted = effects["te"].to_numpy()[order]
    k = int(min(top_heads, len(points), max(1, (te_sorted > MIN_EFFECT * te_sorted[0]).sum())))
    top = ordered[:k]
    fit_top = fit_effects(engine, pairs, top, fits, bases, n_boot, seed)
    piv = fit_top.pivot_table(index=["layer", "head"], columns="fit", values="ld_mean").reset_index()
    names = {f"helix({','.join(b.variables)})": key for b, key in zip(bases, ("fit_all", "fit_sum", "fit_ab"))}
    piv = piv.rename(columns=names)
    table = effects.merge(piv.drop(columns=["fit_all"]), on=["layer", "head"])
    table = table[["name", "layer", "head", "te", "de", "fit_all", "fit_sum", "fit_ab"]]
    cats = categorise(table)
    mixed = mixed_sweep(engine, pairs, cats, fits, last, n_boot, seed)
    m_star = int(mixed.loc[mixed["fraction"] >= threshold, "m"].min()) if (mixed["fraction"] >= threshold).any() \
        else len(cats)
    cats["category_without_mixed"] = cats["category"]
    cats["category"] = with_mixed(cats, m_star).to_numpy()
    cats["m"] = m_star

    attn = attention_to(engine.model, fit_ids[: min(len(fit_ids), 512)], last,
                        {"a": positions["a"], "b": positions["b"], "last": last})
    props = cats.merge(attn, on=["layer", "head"])

    def most_confident(column: str, category: str, score: str, usable, exclude=None) -> Point | None:
        ok = cats.apply(usable, axis=1)
        if exclude is not None:
            ok &= ~((cats["layer"] == exclude.layer) & (cats["head"] == exclude.head))
        rows = cats[(cats[column] == category) & ok].sort_values(score, ascending=False)
        if not len(rows):
            return None
        r = rows.iloc[0]
        return Point("head_out", int(r["layer"]), (last,), head=int(r["head"]))

    # senders need something downstream, receivers something upstream
    has_downstream = lambda r: r["layer"] < ad.n_layers - 1 or not ad.parallel  # noqa: E731
    has_upstream = lambda r: r["layer"] > 0  # noqa: E731
    ab = most_confident("category", "a,b", "c_ab", has_downstream) or \
        most_confident("category_without_mixed", "a,b", "c_ab", has_downstream)
    senders = {"a,b head": ab, "mixed head": most_confident("category", "mixed", "c", has_downstream, ab)}
    receivers = {"a+b head": most_confident("category", "a+b", "c_a+b", has_upstream),
                 "mixed head": most_confident("category", "mixed", "c", has_upstream)}
    senders = {k: v for k, v in senders.items() if v is not None}
    receivers = {k: v for k, v in receivers.items() if v is not None}
    paths = path_analysis(engine, pairs, senders, receivers, last, n_boot, seed)
    topk["threshold"] = threshold
    topk["smallest_k"] = smallest_k(topk, threshold)
    return {"effects": effects, "topk": topk, "categories": cats, "mixed": mixed, "properties": props,
            "paths": paths}


def category_table(cats: pd.DataFrame) -> pd.DataFrame:
    """tabD1: the top heads with TE, DE, c_ab, c_a+b and category."""
    cols = ["name", "layer", "head", "te", "de", "fit_all", "fit_ab", "fit_sum", "c_ab", "c_a+b", "category",
            "category_without_mixed"]
    return cats[cols].rename(columns={"fit_all": "helix(a,b,a+b)", "fit_ab": "helix(a,b)", "fit_sum": "helix(a+b)"})

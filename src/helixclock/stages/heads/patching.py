"""Attention heads at the last token (section 5.2, appendix D.1): the model job.

Heads are activation- and path-patched at the last token and ranked by total effect (TE).
The top heads' outputs are modelled with helix fits and categorised (see
:mod:`helixclock.stages.heads.tables`); the categorisation is tested by patching the top
heads as their categories say (Fig. D5), and the most confident heads of each kind are
path-patched as senders and receivers (Fig. D7).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...bases import PERIODS, Basis, clock_bases, sum_values
from ...experiments import topk_sweep, total_and_direct
from ...fits import Fits, fit_token
from ...io import to_numpy
from ...patching import Pairs, Patch, PatchingEngine, Point, contribution, path_patch
from ...statistics import pair_values, raw_table
from .tables import categorise, mean_effects, with_mixed

MIN_EFFECT = 0.02  # heads whose TE is below this share of the largest are not categorised


@dataclass(frozen=True)
class HeadSettings:
    """How many heads are categorised, how many of them are mixed (the authors' m = 4, chosen
    by hand), and the fits' periods and PCA."""

    top_heads: int = 20
    mixed_heads: int = 4
    periods: tuple[int, ...] = PERIODS
    pca_components: int = 100


def head_points(adapter, last: int) -> list[Point]:
    return [
        Point("head_out", layer, (last,), index=h) for layer in range(adapter.n_layers) for h in range(adapter.n_heads)
    ]


def fit_heads(
    engine: PatchingEngine,
    prompt_ids: torch.Tensor,
    a: np.ndarray,
    b: np.ndarray,
    last: int,
    periods: Sequence[int] = PERIODS,
    n_components: int = 100,
) -> Fits:
    """helix(a,b,a+b), helix(a+b) and helix(a,b) fitted to every head's output at the last
    token; heads are stacked along the fit's layer axis (index layer * n_heads + head)."""
    ad = engine.adapter
    points = [Point("head_out", layer, (last,)) for layer in range(ad.n_layers)]
    values, _ = engine.collect(prompt_ids, points, logits=False, desc="head outputs")
    H = torch.stack([values[p][:, 0] for p in points], 1)  # [n, L, H, dh]
    H = H.reshape(H.shape[0], -1, ad.d_head).transpose(0, 1)  # [L*H, n, dh]
    return fit_token(H.float(), sum_values(a, b), clock_bases(periods), n_components, dedupe=False)


def fitted_output(fits: Fits, basis: Basis, point: Point, n_heads: int, clean: dict) -> torch.Tensor:
    """A head's fitted output at the clean values, [n, 1, d_head]."""
    return fits.predict(basis, clean, layers=[point.layer * n_heads + point.index])[0][:, None]


def fit_effects(engine: PatchingEngine, pairs: Pairs, jobs: Sequence[tuple[Point, Basis]], fits: Fits) -> pd.DataFrame:
    """LD when a head's output is replaced by a fit (evaluated at the clean a, b), per (head,
    basis) in ``jobs``: raw table with columns layer, head, fit."""
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    H = engine.adapter.n_heads
    variants = [[Patch(p, fitted_output(fits, b, p, H, clean))] for p, b in jobs]
    labels = [{"layer": p.layer, "head": p.index, "fit": b.name.split("[")[0]} for p, b in jobs]
    return raw_table(engine.run(pairs, variants, desc="head fits").metric, labels)


def ab_head_patches(
    engine: PatchingEngine, point: Point, fitted: torch.Tensor, corrupted: torch.Tensor, final: Point
) -> list[Patch]:
    """An a,b head as the authors patch it: its output replaced by its helix(a, b) fit, and
    the change of its write taken back out of the final residual (original - patched), so it
    acts only through later components."""
    undo = contribution(engine, point, corrupted) - contribution(engine, point, fitted)
    return [Patch(point, fitted), Patch(final, undo, add=True)]


def mixed_sweep(
    engine: PatchingEngine,
    pairs: Pairs,
    categorised: pd.DataFrame,
    fits: Fits,
    last: int,
    periods: Sequence[int] = PERIODS,
) -> pd.DataFrame:
    """Fig. D5, as the authors do it: the top heads patched as their categories say with m
    mixed heads, for m = 0..k, and all of them with their actual clean outputs (m = -1, the
    reference): raw table.  a,b heads get their helix(a, b) fit with their direct path
    removed, a+b heads write their helix(a+b) fit only to the logits, mixed heads get their
    helix(a, b, a+b) fit."""
    H = engine.adapter.n_heads
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    helix_all, helix_sum, helix_ab = clock_bases(periods)
    points = [Point("head_out", int(r.layer), (last,), index=int(r.head)) for r in categorised.itertuples()]
    corr = engine.corrupted_values(pairs, points)
    final = Point("resid_pre", engine.adapter.n_layers, (last,))
    fitted = {(p, b): fitted_output(fits, b, p, H, clean) for p in points for b in (helix_all, helix_sum, helix_ab)}
    variants = []
    for m in range(len(points) + 1):
        patches = []
        for p, cat in zip(points, with_mixed(categorised, m)):
            if cat == "mixed":
                patches.append(Patch(p, fitted[p, helix_all]))
            elif cat == "a,b":
                patches += ab_head_patches(engine, p, fitted[p, helix_ab], corr[p], final)
            else:  # a+b: helix(a+b) written only to the logits
                delta = contribution(engine, p, fitted[p, helix_sum]) - contribution(engine, p, corr[p])
                patches.append(Patch(final, delta, add=True))
        variants.append(patches)
    variants.append([Patch(p, "clean") for p in points])
    ld = engine.run(pairs, variants, desc="mixed heads").metric
    return raw_table(ld, [{"m": m} for m in range(len(points) + 1)] + [{"m": -1}])


def attention_to(model, ids: torch.Tensor, query: int, keys: dict[str, int], batch_size: int = 256) -> pd.DataFrame:
    """Mean attention of every head from the query position to the given key positions."""
    hf = model.hf
    hf.set_attn_implementation("eager")  # attention weights are only materialised by eager
    sums = None
    try:
        with torch.no_grad():
            for i in range(0, ids.shape[0], batch_size):
                out = hf(ids[i : i + batch_size].to(model.device), output_attentions=True)
                att = torch.stack(out.attentions)[:, :, :, query]  # [L, B, H, S]
                part = torch.stack([att[..., k].float().sum(1) for k in keys.values()], -1)  # [L, H, K]
                sums = part if sums is None else sums + part
    finally:
        hf.set_attn_implementation(model.attn_implementation)
    mean = to_numpy(sums / ids.shape[0])
    L, H, _ = mean.shape
    rows = [
        {"layer": layer, "head": h, **{f"attn_{k}": float(mean[layer, h, j]) for j, k in enumerate(keys)}}
        for layer in range(L)
        for h in range(H)
    ]
    return pd.DataFrame(rows)


def _downstream(adapter, p: Point, last: int) -> list[Point]:
    """Components that read a head's write at the last token."""
    same_layer_mlp = [] if adapter.parallel else [Point("mlp_out", p.layer, (last,))]
    later = [Point("mlp_out", layer, (last,)) for layer in range(p.layer + 1, adapter.n_layers)]
    heads = [
        Point("head_out", layer, (last,), index=h)
        for layer in range(p.layer + 1, adapter.n_layers)
        for h in range(adapter.n_heads)
    ]
    return same_layer_mlp + later + heads


def _upstream(adapter, p: Point, last: int) -> list[Point]:
    """Components whose write at the last token a head reads."""
    mlps = [Point("mlp_out", layer, (last,)) for layer in range(p.layer)]
    heads = [Point("head_out", layer, (last,), index=h) for layer in range(p.layer) for h in range(adapter.n_heads)]
    return mlps + heads


def path_analysis(
    engine: PatchingEngine, pairs: Pairs, senders: dict[str, Point], receivers: dict[str, Point], last: int
) -> pd.DataFrame:
    """Fig. D7: each sender's effect through each downstream component, and each receiver's
    dependence on each upstream component (path patching); raw table."""
    rows, paths = [], []
    for analysis, heads, others in (("sender", senders, _downstream), ("receiver", receivers, _upstream)):
        for role, p in heads.items():
            for q in others(engine.adapter, p, last):
                paths.append((p, q) if analysis == "sender" else (q, p))
                rows.append(
                    {
                        "analysis": analysis,
                        "role": role,
                        "head": p.name,
                        "other": q.name,
                        "other_kind": "MLP" if q.kind == "mlp_out" else "head",
                        "other_layer": q.layer,
                    }
                )
    if not paths:
        return pd.DataFrame(columns=["analysis", "role", "head", "other", "other_kind", "other_layer"])
    return raw_table(path_patch(engine, pairs, paths, desc="head paths"), rows)


def _most_confident(
    cats: pd.DataFrame, column: str, category: str, score: str, usable, last: int, exclude: Point | None = None
) -> Point | None:
    ok = cats.apply(usable, axis=1)
    if exclude is not None:
        ok &= ~((cats["layer"] == exclude.layer) & (cats["head"] == exclude.index))
    rows = cats[(cats[column] == category) & ok].sort_values(score, ascending=False)
    if not len(rows):
        return None
    return Point("head_out", int(rows.iloc[0]["layer"]), (last,), index=int(rows.iloc[0]["head"]))


def head_patching(
    engine: PatchingEngine,
    pairs: Pairs,
    fit_ids: torch.Tensor,
    fit_a: np.ndarray,
    fit_b: np.ndarray,
    positions: dict[str, int],
    settings: HeadSettings = HeadSettings(),
) -> dict[str, pd.DataFrame]:
    """Everything of section 5.2 that runs the model: raw tables (effects, fits, topk, mixed,
    paths) and the categorised top heads and the heads' attention (plain tables).  The steps,
    in the order they run the model: every head's TE and DE, the top-k sweep by TE, the helix
    fits of every head's output, the fits patched in, the mixed-heads sweep (Fig. D5), the
    attention to a, b and the last token, the path analysis (Fig. D7)."""
    last = positions["last"]
    points = head_points(engine.adapter, last)
    effects = total_and_direct(engine, pairs, points, desc="head effects")
    ordered, te_sorted = rank_by_te(effects, points)
    topk = topk_sweep(engine, pairs, ordered, desc="top-k heads")
    fits = fit_heads(engine, fit_ids, fit_a, fit_b, last, settings.periods, settings.pca_components)
    top = ordered[: measurable_count(te_sorted, settings.top_heads)]
    fit_raw = fit_effects(engine, pairs, fit_jobs(points, top, settings.periods), fits)
    cats = categorise_top(effects, fit_raw, top)
    mixed = mixed_sweep(engine, pairs, cats, fits, last, settings.periods)
    _mark_mixed(cats, settings.mixed_heads)
    attention = attention_to(
        engine.model, fit_ids[: min(len(fit_ids), 512)], last, {"a": positions["a"], "b": positions["b"], "last": last}
    )
    senders, receivers = path_heads(cats, engine.adapter, last)
    paths = path_analysis(engine, pairs, senders, receivers, last)
    return {
        "effects": effects,
        "fits": fit_raw,
        "topk": topk,
        "mixed": mixed,
        "paths": paths,
        "categories": cats,
        "attention": attention,
    }


def rank_by_te(effects: pd.DataFrame, points: Sequence[Point]) -> tuple[list[Point], np.ndarray]:
    """Heads ordered by their mean total effect over the pairs, largest first (ties in the
    order of ``points``; section 5.2), and their TEs in that order."""
    te = pair_values(effects[effects["effect"] == "te"]).mean(1)
    order = np.argsort(-te, kind="stable")
    return [points[i] for i in order], te[order]


def measurable_count(te_sorted: np.ndarray, top_heads: int) -> int:
    """How many of the heads (TE sorted, largest first) are categorised: at most ``top_heads``,
    at least one, and none whose TE is below :data:`MIN_EFFECT` of the largest (their ratios
    are noise)."""
    return int(min(top_heads, len(te_sorted), max(1, (te_sorted > MIN_EFFECT * te_sorted[0]).sum())))


def fit_jobs(points: Sequence[Point], top: Sequence[Point], periods: Sequence[int]) -> list[tuple[Point, Basis]]:
    """The fits patched in (section 5.2, App. D.1): helix(a,b,a+b) for every head (Fig. D4),
    helix(a+b) and helix(a,b) for the top heads (their categories)."""
    helix_all, helix_sum, helix_ab = clock_bases(periods)
    return [(p, helix_all) for p in points] + [(p, b) for p in top for b in (helix_sum, helix_ab)]


def categorise_top(effects: pd.DataFrame, fit_raw: pd.DataFrame, top: Sequence[Point]) -> pd.DataFrame:
    """The top heads, in ``top``'s order, categorised a,b or a+b from their mean TE, DE and fit
    LDs (App. D.1, :func:`.tables.categorise`; sorted by confidence c)."""
    means = mean_effects(effects, fit_raw)
    table = means[means["name"].isin({p.name for p in top})]
    table = table.set_index("name").loc[[p.name for p in top]].reset_index()
    return categorise(table[["name", "layer", "head", "te", "de", "fit_all", "fit_sum", "fit_ab"]])


def _mark_mixed(cats: pd.DataFrame, mixed_heads: int) -> None:
    """In place: the m = min(``mixed_heads``, heads) least confident heads become mixed
    (App. D.1, the authors' m chosen by hand); the category before is kept in
    ``category_without_mixed`` and m in ``m``."""
    m = min(mixed_heads, len(cats))
    cats["category_without_mixed"] = cats["category"]
    cats["category"] = with_mixed(cats, m).to_numpy()
    cats["m"] = m


def path_heads(cats: pd.DataFrame, adapter, last: int) -> tuple[dict[str, Point], dict[str, Point]]:
    """Fig. D7's heads: the most confident a,b and mixed heads as senders (each with something
    downstream), the most confident a+b and mixed heads as receivers (each with something
    upstream); kinds without such a head are left out.  The a,b sender falls back to the
    categories without mixed heads; the mixed sender is another head than the a,b one."""
    has_downstream = lambda r: r["layer"] < adapter.n_layers - 1 or not adapter.parallel  # noqa: E731
    has_upstream = lambda r: r["layer"] > 0  # noqa: E731
    ab = _most_confident(cats, "category", "a,b", "c_ab", has_downstream, last) or _most_confident(
        cats, "category_without_mixed", "a,b", "c_ab", has_downstream, last
    )
    senders = {"a,b head": ab, "mixed head": _most_confident(cats, "category", "mixed", "c", has_downstream, last, ab)}
    receivers = {
        "a+b head": _most_confident(cats, "category", "a+b", "c_a+b", has_upstream, last),
        "mixed head": _most_confident(cats, "category", "mixed", "c", has_upstream, last),
    }
    return (
        {k: v for k, v in senders.items() if v is not None},
        {k: v for k, v in receivers.items() if v is not None},
    )

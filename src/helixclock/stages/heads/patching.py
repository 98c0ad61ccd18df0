"""Attention heads at one reading (section 5.2, appendix D.1): the model job's experiments,
which :func:`.readings.head_readings` runs at each reading of the model's token layout (rule
head_patching's entry point: :mod:`.jobs`).

Heads are activation- and path-patched at the reading's positions (the paper's: the last token)
and ranked by total effect (TE).
The top heads' outputs are modelled with helix fits and categorised (see
:mod:`helixclock.stages.heads.tables`); the categorisation is tested by patching the top
heads as their categories say (Fig. D5), and the most confident heads of each kind are
path-patched as senders and receivers (Fig. D7).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from ...causal.experiments import (
    layer_grid,
    ld_table,
    pad_answer_positions,
    topk_sweep,
    total_and_direct,
    total_effects,
)
from ...causal.pairs import SelectionDraw
from ...fitting.bases import PERIODS, Basis, clock_bases, sum_values
from ...fitting.fits import Fits
from ...patching import Pairs, Patch, PatchingEngine, Point, attribute, logit_difference, path_patch, write_change
from ...stats.multiplicity import ALPHA
from ...stats.statistics import pair_values, primary, raw_table
from .tables import categorise, mean_effects, with_mixed

MIN_EFFECT = 0.02  # heads whose TE is below this share of the largest are not categorised
ATTENTION_PROMPTS = 512  # Fig. D6's attention: a mean over at most this many of the fitted prompts
ATTENTION_SEED = 0  # the seed of that sample where there are more


@dataclass(frozen=True)
class HeadSettings:
    """How many heads are categorised, how many of them are mixed (the authors' m = 4, chosen
    by hand), the fits' periods and PCA, the screen, and where numbers take several tokens the
    false discovery rate of the screen at the first differing token
    (:func:`.readings.first_difference_screen`; the findings' alpha, config/findings.yaml)."""

    top_heads: int = 20
    mixed_heads: int = 4
    periods: tuple[int, ...] = PERIODS
    pca_components: int = 100
    head_screen: int = 0  # 0: every head activation-patched (the paper's); n: the n of largest attribution
    layer_step: int = 1  # with a screen, the MLPs Fig. D7 pairs heads with (registry layer_step)
    screen_alpha: float = ALPHA  # the FDR of the screen at the first differing token (Benjamini-Hochberg)


class FittedHeads:
    """Heads' outputs as their fits predict them at the pairs' clean a, b and a+b: called with a
    basis and a head, [n_pairs, n_positions, d_head].  ``fits`` holds one fit per position the
    heads are patched at (one: the last token; answers of several tokens: one per answer
    position, :func:`~helixclock.causal.experiments.answer_position_fits`), their layer axis indexed
    by ``index[(layer, head)]``; a position past a pair's answer (``answer_tokens``) repeats its
    first, as a padded role does."""

    def __init__(self, fits: Sequence[Fits], index: dict[tuple[int, int], int], pairs: Pairs, answer_tokens=None):
        self.fits, self.index = list(fits), index
        self.clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
        self.device = pairs.clean.device
        self.answer_tokens = answer_tokens

    def __call__(self, basis: Basis, point: Point) -> torch.Tensor:
        i = self.index[(point.layer, point.index)]
        out = torch.stack([f.predict(basis, self.clean, layers=[i])[0] for f in self.fits], 1).to(self.device)
        if self.answer_tokens is not None:
            pad_answer_positions(out[None], self.answer_tokens)
        return out


def fit_effects(engine: PatchingEngine, pairs: Pairs, jobs: Sequence[tuple[Point, Basis]], fitted) -> pd.DataFrame:
    """LD when a head's output is replaced by a fit (evaluated at the clean a, b: ``fitted``, a
    :class:`FittedHeads`), per (head, basis) in ``jobs``: raw table with columns layer, head, fit."""
    variants = [[Patch(p, fitted(b, p))] for p, b in jobs]
    labels = [{"layer": p.layer, "head": p.index, "fit": b.name.split("[")[0]} for p, b in jobs]
    return ld_table(engine.run(pairs, variants, desc="head fits"), pairs, labels)


def ab_head_patches(
    engine: PatchingEngine, point: Point, fitted: torch.Tensor, site: torch.Tensor, final: Point
) -> list[Patch]:
    """An a,b head as the authors patch it: its output replaced by its helix(a, b) fit, and
    the change of its write taken back out of the final residual (original - patched), so it
    acts only through later components.  ``site`` is the corrupted run's value of the head's
    whole site (every head of its layer: :func:`~helixclock.patching.write_change`)."""
    return [Patch(point, fitted), Patch(final, -write_change(engine, point, fitted, site), add=True)]


def mixed_sweep(
    engine: PatchingEngine,
    pairs: Pairs,
    categorised: pd.DataFrame,
    fitted: FittedHeads,
    position,
    periods: Sequence[int] = PERIODS,
) -> pd.DataFrame:
    """Fig. D5, as the authors do it: the top heads patched as their categories say with m
    mixed heads, for m = 0..k, and all of them with their actual clean outputs (m = -1, the
    reference): raw table.  a,b heads get their helix(a, b) fit with their direct path
    removed, a+b heads write their helix(a+b) fit only to the logits, mixed heads get their
    helix(a, b, a+b) fit; at ``position`` (the last token, or role "answer")."""
    helix_all, helix_sum, helix_ab = clock_bases(periods)
    points = [Point("head_out", int(r.layer), (position,), index=int(r.head)) for r in categorised.itertuples()]
    sites = {p: replace(p, index=None) for p in points}
    corr = engine.corrupted_values(pairs, list(dict.fromkeys(sites.values())))
    final = Point("resid_pre", engine.adapter.n_layers, (position,))
    fits = {(p, b): fitted(b, p) for p in points for b in (helix_all, helix_sum, helix_ab)}
    variants = []
    for m in range(len(points) + 1):
        patches = []
        for p, cat in zip(points, with_mixed(categorised, m)):
            if cat == "mixed":
                patches.append(Patch(p, fits[p, helix_all]))
            elif cat == "a,b":
                patches += ab_head_patches(engine, p, fits[p, helix_ab], corr[sites[p]], final)
            else:  # a+b: helix(a+b) written only to the logits
                patches.append(Patch(final, write_change(engine, p, fits[p, helix_sum], corr[sites[p]]), add=True))
        variants.append(patches)
    variants.append([Patch(p, "clean") for p in points])
    labels = [{"m": m} for m in range(len(points) + 1)] + [{"m": -1}]
    return ld_table(engine.run(pairs, variants, desc="mixed heads"), pairs, labels)


@dataclass(frozen=True)
class Partners:
    """The components Fig. D7 path-patches a head with: MLPs of ``mlp_layers`` and the heads of
    ``heads`` ((layer, head)); None: every MLP, every head (the paper's)."""

    mlp_layers: tuple[int, ...] | None = None
    heads: tuple[tuple[int, int], ...] | None = None

    def mlps(self, adapter, layers: range, position) -> list[Point]:
        return [Point("mlp_out", la, (position,)) for la in layers if self.mlp_layers is None or la in self.mlp_layers]

    def of_heads(self, adapter, layers: range, position) -> list[Point]:
        return [
            Point("head_out", la, (position,), index=h)
            for la in layers
            for h in range(adapter.n_heads)
            if self.heads is None or (la, h) in self.heads
        ]


def _downstream(adapter, p: Point, position, partners: Partners = Partners()) -> list[Point]:
    """Components that read a head's write at its position."""
    same_layer_mlp = [] if adapter.parallel else partners.mlps(adapter, range(p.layer, p.layer + 1), position)
    later = range(p.layer + 1, adapter.n_layers)
    return same_layer_mlp + partners.mlps(adapter, later, position) + partners.of_heads(adapter, later, position)


def _upstream(adapter, p: Point, position, partners: Partners = Partners()) -> list[Point]:
    """Components whose write at its position a head reads."""
    return partners.mlps(adapter, range(p.layer), position) + partners.of_heads(adapter, range(p.layer), position)


def path_analysis(
    engine: PatchingEngine,
    pairs: Pairs,
    senders: dict[str, Point],
    receivers: dict[str, Point],
    position,
    partners: Partners = Partners(),
) -> pd.DataFrame:
    """Fig. D7: each sender's effect through each downstream component, and each receiver's
    dependence on each upstream component (path patching, of LD itself); raw table."""
    rows, paths = [], []
    for analysis, heads, others in (("sender", senders, _downstream), ("receiver", receivers, _upstream)):
        for role, p in heads.items():
            for q in others(engine.adapter, p, position, partners):
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
    cats: pd.DataFrame, column: str, category: str, score: str, usable, position, exclude: Point | None = None
) -> Point | None:
    ok = cats.apply(usable, axis=1)
    if exclude is not None:
        ok &= ~((cats["layer"] == exclude.layer) & (cats["head"] == exclude.index))
    rows = cats[(cats[column] == category) & ok].sort_values(score, ascending=False)
    if not len(rows):
        return None
    return Point("head_out", int(rows.iloc[0]["layer"]), (position,), index=int(rows.iloc[0]["head"]))


def screen_heads(engine: PatchingEngine, pairs: Pairs, position) -> pd.DataFrame:
    """Every head's attribution score (attribution patching of LD, section 5.4's method applied
    to heads: the gradient of LD by the head's output times its clean - corrupted change,
    summed over its dimensions and positions), raw table with columns layer, head and the pairs;
    one forward and backward pass per batch."""
    ad = engine.adapter
    sites = [Point("head_out", layer, (position,)) for layer in range(ad.n_layers)]
    engine.corrupted_logits(pairs)  # LD reads the corrupted run's score: computed first, outside the gradient pass
    scores = attribute(engine, pairs, sites, metric=logit_difference, reduce="none", desc="head attribution")
    per_head = torch.stack([scores[p].sum((1, 3)) for p in sites])  # [L, n_pairs, H]
    values = per_head.permute(0, 2, 1).reshape(ad.n_layers * ad.n_heads, -1)
    labels = [{"layer": layer, "head": h} for layer in range(ad.n_layers) for h in range(ad.n_heads)]
    return raw_table(values, labels)


def screened_points(screen: pd.DataFrame, position, n: int) -> list[Point]:
    """The heads activation patching measures: every head (``n`` = 0, the paper's), or the
    ``n`` of the largest |mean attribution score| over the pairs (the first-order estimate of
    |TE|, by which they are ranked next; config key ``clock.head_screen``), in layer
    and head order."""
    size = np.abs(pair_values(screen).mean(1))
    keep = np.arange(len(screen)) if n <= 0 else np.sort(np.argsort(-size, kind="stable")[:n])
    layers, heads = screen["layer"].to_numpy(), screen["head"].to_numpy()
    return [Point("head_out", int(layers[i]), (position,), index=int(heads[i])) for i in keep]


def head_reading(
    engine: PatchingEngine,
    pairs: Pairs,
    fitted: FittedHeads,
    position,
    settings: HeadSettings = HeadSettings(),
    select: SelectionDraw | None = None,
) -> dict[str, pd.DataFrame]:
    """Section 5.2's patching at one position (the last token, or role "answer": every position
    that predicts an answer token, patched together): raw tables screen (attribution of every
    head), effects (TE and DE of the heads :func:`screened_points` keeps), topk (those heads by
    TE, patched together), fits (the helix fits patched in), mixed (Fig. D5), paths (Fig. D7)
    and the categorised top heads.

    The choices that decide what runs, which heads are screened in (by attribution) and their
    order by TE (the top-k sweep's order and the categorised top heads), are made on the
    selection draw ``select`` where there is one (:func:`choose_heads`; docs/findings.md, "Findings"),
    else on ``pairs``, the paper's; every table but the screen is measured on ``pairs``."""
    points, ordered, te_sorted, screen = choose_heads(engine, pairs, position, settings, select)
    effects = total_and_direct(engine, pairs, points, desc="head effects")
    if select is None:  # the paper's: ranked by the TE measured on the same pairs
        ordered, te_sorted = rank_by_te(effects, points)
    topk = topk_sweep(engine, pairs, ordered, desc="top-k heads")
    top = ordered[: measurable_count(te_sorted, settings.top_heads)]
    fit_raw = fit_effects(engine, pairs, fit_jobs(points, top, settings.periods), fitted)
    cats = categorise_top(effects, fit_raw, top)
    mixed = mixed_sweep(engine, pairs, cats, fitted, position, settings.periods)
    _mark_mixed(cats, settings.mixed_heads)
    senders, receivers = path_heads(cats, engine.adapter, position)
    partners = Partners() if settings.head_screen <= 0 else _screen_partners(engine.adapter, cats, settings)
    paths = path_analysis(engine, pairs, senders, receivers, position, partners)
    return {
        "screen": screen,
        "effects": effects,
        "fits": fit_raw,
        "topk": topk,
        "mixed": mixed,
        "paths": paths,
        "categories": cats,
    }


def choose_heads(
    engine: PatchingEngine, pairs: Pairs, position, settings: HeadSettings, select: SelectionDraw | None
) -> tuple[list[Point], list[Point] | None, np.ndarray | None, pd.DataFrame]:
    """The heads a reading measures and their order, chosen on the selection draw ``select``:
    the screen (every head's attribution, :func:`screen_heads`) on its ``screen`` pairs where
    heads are screened (``settings.head_screen`` > 0; else it chooses nothing and is read on
    ``pairs``), and the screened heads ranked by their TE on its ``pairs`` (:func:`rank_by_te`).  Without
    ``select`` (``compat: authors``) the screen is read on ``pairs`` and the order is left to
    the caller (None), which ranks by the TE it measures there.  Returns (points, ordered,
    te_sorted, screen), the screen with column ``screened``."""
    chooses = select is not None and settings.head_screen > 0
    screen = screen_heads(engine, select.screen if chooses else pairs, position)
    points = screened_points(screen, position, settings.head_screen)
    screen["screened"] = screen.set_index(["layer", "head"]).index.isin([(p.layer, p.index) for p in points])
    first = ["layer", "head", "screened"]
    screen = screen[first + [c for c in screen.columns if c not in first]]
    if select is None:
        return points, None, None, screen
    te = total_effects(engine, select.pairs, points, desc="head TE (selection draw)")
    ordered, te_sorted = rank_by_te(te, points)
    return points, ordered, te_sorted, screen


def _screen_partners(adapter, cats: pd.DataFrame, settings: HeadSettings) -> Partners:
    """Fig. D7's partners where heads are screened: the categorised top heads and the MLPs of the
    model's layer grid (registry ``layer_step``, as Fig. 6's)."""
    heads = tuple((int(la), int(h)) for la, h in zip(cats["layer"], cats["head"]))
    return Partners(tuple(layer_grid(adapter.n_layers, settings.layer_step)), heads)


def rank_by_te(effects: pd.DataFrame, points: Sequence[Point]) -> tuple[list[Point], np.ndarray]:
    """Heads ordered by their mean total effect over the pairs, largest first (ties in the
    order of ``points``; section 5.2), and their TEs in that order."""
    effects = primary(effects)
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
    means = mean_effects(primary(effects), primary(fit_raw))
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


def path_heads(cats: pd.DataFrame, adapter, position) -> tuple[dict[str, Point], dict[str, Point]]:
    """Fig. D7's heads: the most confident a,b and mixed heads as senders (each with something
    downstream), the most confident a+b and mixed heads as receivers (each with something
    upstream); kinds without such a head are left out.  The a,b sender falls back to the
    categories without mixed heads; the mixed sender is another head than the a,b one."""
    has_downstream = lambda r: r["layer"] < adapter.n_layers - 1 or not adapter.parallel  # noqa: E731
    has_upstream = lambda r: r["layer"] > 0  # noqa: E731
    ab = _most_confident(cats, "category", "a,b", "c_ab", has_downstream, position) or _most_confident(
        cats, "category_without_mixed", "a,b", "c_ab", has_downstream, position
    )
    mixed = _most_confident(cats, "category", "mixed", "c", has_downstream, position, ab)
    senders = {"a,b head": ab, "mixed head": mixed}
    receivers = {
        "a+b head": _most_confident(cats, "category", "a+b", "c_a+b", has_upstream, position),
        "mixed head": _most_confident(cats, "category", "mixed", "c", has_upstream, position),
    }
    return (
        {k: v for k, v in senders.items() if v is not None},
        {k: v for k, v in receivers.items() if v is not None},
    )

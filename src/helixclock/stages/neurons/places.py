"""Neurons for answers of several tokens (section 5.4 carried over; docs/several-tokens.md, "Numbers of several
tokens").

With teacher forcing, an answer of k digit tokens is predicted at k positions: the last prompt
token t0 predicts its first digit, the position of each digit the next one.  helixclock's unit
of the neuron stage is then (layer, neuron, place): the neuron at the position that predicts
the answer's ``place`` digit (units, tens, hundreds; :data:`~helixclock.patching.metrics.PLACES`,
counted from the last).  For a one-digit answer the units place is t0; for 57 the tens place
is t0 and the units place the position of "5"; for 123 the hundreds place is t0.  A model whose
numbers are one token has one place, units at t0: the paper's neurons at the last token.

Every experiment of section 5.4 reads its units this way:

* :func:`place_attribution` - attribution patching of LD (the log-likelihood ratio of the
  whole answer) at every position that predicts an answer token; a unit's score is the mean
  over the pairs whose answers have its place; the top share per place are the top units.
* :func:`unit_direct_effects` - a unit's clean - corrupted write at its position through the
  final norm and unembedding, scored on that position's token (NaN for pairs without its place).
* :func:`place_ablation` - keep the top k units of every place, mean-ablate every other neuron
  at every answer position, with means per token layout and position
  (:func:`ablation_means`); accuracy as greedy decoding scores it (teacher-forced: every
  position's top token is the answer's, then the answer ends).
* :func:`place_grids` - N(a, b) of each top unit over the 100 x 100 grid, teacher-forced with
  a + b: the units place exists everywhere, the tens place where a + b >= 10, the hundreds
  where a + b >= 100 (NaN elsewhere).
* :func:`digit_lens` - a unit's write through the final norm and unembedding, over the ten digit
  tokens and the token that ends an answer (Figs. F3, F4 carried over).
* :func:`place_fit_evaluation` - Fig. 9: the top k units of every place given their actual or
  fitted N(a, b), the rest mean-ablated.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from ...io import to_numpy
from ...pairs import forced_rows
from ...patching import Pairs, Patch, PatchingEngine, Point, attribute, direct_effects
from ...patching.metrics import PLACES
from ...statistics import raw_table
from .patching import READINGS, accuracy_and_ld, neuron_sites, rank_neurons

ANSWER = "answer"  # the role of every position that predicts an answer token
MIN_LAYOUT_PROMPTS = 20  # fewer mean prompts of a layout than this: its ablation means are its place's


def place_slots(answer_tokens: Int[Tensor, " row"], place: int) -> tuple[Int[Tensor, " row"], Bool[Tensor, " row"]]:
    """The slot of role "answer" (0: the last prompt token) that predicts each row's ``place``-th
    digit from the last (0: units), and whether the row's answer has that place."""
    slot = answer_tokens - 1 - place
    return slot.clamp(min=0), slot >= 0


def places_of(answer_tokens: Tensor) -> list[int]:
    """The places some row has (0: units, ...), at most :data:`PLACES`."""
    return list(range(min(int(answer_tokens.max()), len(PLACES))))


def by_slot(
    per_place: Float[Tensor, "place layer row d_mlp"], answer_tokens: Int[Tensor, " row"], width: int
) -> Float[Tensor, "layer row slot d_mlp"]:
    """Values per place [Q, L, n, d] laid out on role "answer"'s slots [L, n, width, d]: slot s
    of a row with k answer tokens holds its place k - 1 - s; the slots a role pads past a row's
    answer repeat slot 0, as the role's positions do (the engine then writes each position once)."""
    Q, L, n, d = per_place.shape
    out = per_place.new_zeros((L, n, width, d))
    rows = torch.arange(n, device=per_place.device)
    for s in range(width):
        place = (answer_tokens - 1 - s).clamp(min=0, max=Q - 1)
        out[:, :, s] = per_place[place, :, rows].transpose(0, 1)
    pad = answer_tokens <= torch.arange(width, device=answer_tokens.device)[:, None]  # [width, n]
    for s in range(1, width):
        out[:, pad[s], s] = out[:, pad[s], 0]
    return out


# ------------------------------------------------------------------------- attribution
def place_attribution(engine: PatchingEngine, pairs: Pairs, ranking: str = "mean_abs") -> pd.DataFrame:
    """Every unit's attribution (section 5.4's attribution patching; the gradient of the clean
    answer's log-likelihood, whose difference from the corrupted run's is LD): per place, the
    signed mean over all pairs (``attribution``), a pair whose answer lacks the place counting 0,
    and the mean size (``attribution_abs``), ranked within the place by ``ranking``; columns
    place, rank, layer, neuron, attribution, attribution_abs, effect, pairs_with_place.  Means
    over all pairs make units of every place parts of one mean LD, so that their effects add up
    across places (Figs. D11, F4); within a place the ranking is that of the pairs with it."""
    sites = neuron_sites(engine.adapter, ANSWER)
    scores = attribute(engine, pairs, sites, reduce="none", desc="attribution")  # {site: [n, K, d]}
    k = pairs.answer_tokens()
    rows = torch.arange(len(pairs), device=k.device)
    tables = []
    for q in places_of(k):
        slot, ok = place_slots(k, q)
        values = torch.stack([scores[p][rows, slot][ok] for p in sites])  # [L, n_ok, d]
        L, _, m = values.shape
        df = pd.DataFrame(
            {
                "layer": np.repeat(np.arange(L), m),
                "neuron": np.tile(np.arange(m), L),
                "attribution": to_numpy(values.sum(1) / len(pairs)).ravel(),
                "attribution_abs": to_numpy(values.abs().sum(1) / len(pairs)).ravel(),
            }
        )
        ranked = rank_neurons(df, ranking)
        ranked.insert(0, "place", PLACES[q])
        tables.append(ranked.assign(pairs_with_place=int(ok.sum())))
    return pd.concat(tables, ignore_index=True)


def top_units(scores: pd.DataFrame, n: int) -> pd.DataFrame:
    """The first ``n`` units of each place of a ranked attribution table (the top share per place)."""
    return scores.groupby("place", sort=False).head(n).reset_index(drop=True)


def _unit_points(top: pd.DataFrame, kind: str = "neuron_post") -> tuple[list[Point], np.ndarray]:
    """One point per distinct (layer, neuron) of ``top`` at role "answer", and each row's point."""
    keys = list(dict.fromkeys(zip(top["layer"].astype(int), top["neuron"].astype(int))))
    index = {key: i for i, key in enumerate(keys)}
    points = [Point(kind, layer, (ANSWER,), index=neuron) for layer, neuron in keys]
    return points, np.array([index[key] for key in zip(top["layer"].astype(int), top["neuron"].astype(int))])


def unit_direct_effects(engine: PatchingEngine, pairs: Pairs, top: pd.DataFrame, chunk: int = 16) -> pd.DataFrame:
    """DE of each top unit over ``pairs``: its neuron's clean - corrupted write at the unit's
    position through the final norm and unembedding, scored on that position's token (a write
    reaches the logits at its own position only; :func:`~helixclock.patching.direct_effects`);
    0 for pairs whose answers lack the unit's place (as its attribution counts them, so that DE/TE
    divides means over the same pairs).  Raw table (place, rank, layer, neuron)."""
    points, which = _unit_points(top)
    k = pairs.answer_tokens()
    slots = (
        torch.stack([torch.where(ok, slot, -1) for slot, ok in (place_slots(k, PLACES.index(q)) for q in top["place"])])
        if len(top)
        else torch.empty(0, len(pairs), dtype=torch.long)
    )
    de = direct_effects(engine, pairs, [points[u] for u in which], chunk=chunk, slots=slots)  # [units, n]
    return raw_table(de, top[["place", "rank", "layer", "neuron"]].to_dict("records"))


# ---------------------------------------------------------------------------- ablation
def ablation_means(
    engine: PatchingEngine, mean_rows: pd.DataFrame, template: str, prompts: Pairs
) -> Float[Tensor, "layer row slot d_mlp"]:
    """The values every ablated neuron gets, per prompt of ``prompts`` and answer slot: the mean
    post-activation over the prompts of ``mean_rows`` (teacher-forced with a + b) of the same token
    layout at the same slot; for a layout fewer than :data:`MIN_LAYOUT_PROMPTS` of them have, the
    mean over all of them at the same place.  [L, n_prompts, width, d_mlp], the padded slots as
    :func:`by_slot` lays them."""
    ids, groups, _, k_mean = forced_rows(engine.model, mean_rows, template)
    sites = neuron_sites(engine.adapter, ANSWER)
    values, _ = engine.collect(ids, sites, logits=False, desc="mean activations", groups=groups)
    V = torch.stack([values[p].float() for p in sites])  # [L, m, K_mean, d]
    k_mean = torch.as_tensor(k_mean, device=V.device)
    rows = torch.arange(V.shape[1], device=V.device)
    place_means = []
    for q in range(len(PLACES)):
        slot, ok = place_slots(k_mean, q)
        place_means.append(V[:, rows, slot][:, ok].mean(1) if ok.any() else V[:, :, 0].mean(1))  # [L, d]
    k = prompts.answer_tokens()
    per_place = torch.stack(place_means)[:, :, None].expand(-1, -1, len(prompts), -1)  # [Q, L, n, d]
    out = by_slot(per_place.contiguous(), k, int(k.max()))
    by_layout = {g.layout: V[:, g.start : g.stop].mean(1) for g in groups if g.stop - g.start >= MIN_LAYOUT_PROMPTS}
    for g in prompts.groups:
        mean = by_layout.get(g.layout)
        if mean is not None:
            K = g.layout.answer_tokens
            out[:, g.start : g.stop, :K] = mean[:, None, :K]
            out[:, g.start : g.stop, K:] = mean[:, None, :1]
    return out


def unit_masks(
    order: pd.DataFrame, k: int, answer_tokens: Tensor, width: int, shape: tuple[int, int]
) -> Bool[Tensor, "layer row slot d_mlp"]:
    """Which units are kept when the first ``k`` of every place of ``order`` are: [L, n, width, d]."""
    L, m = shape
    Q = len(PLACES)
    keep = torch.zeros(Q, L, 1, m, dtype=torch.bool, device=answer_tokens.device)
    head = top_units(order, k)
    q = torch.as_tensor([PLACES.index(p) for p in head["place"]], dtype=torch.long)
    keep[
        q, torch.as_tensor(head["layer"].to_numpy(copy=True)), 0, torch.as_tensor(head["neuron"].to_numpy(copy=True))
    ] = True
    return by_slot(keep.expand(-1, -1, len(answer_tokens), -1).contiguous(), answer_tokens, width)


def place_ablation(
    engine: PatchingEngine,
    prompts: Pairs,
    order: pd.DataFrame,
    means: Tensor,
    ks: Sequence[int],
    readings: Sequence[str] = READINGS,
) -> pd.DataFrame:
    """Fig. D9 by place: for each k and reading (frozen / live kept units), the top k units of
    every place kept and every other neuron at every answer position mean-ablated (``means``:
    :func:`ablation_means`), on ``prompts`` (pairs whose corrupted prompt is the clean one): raw
    table with rows (k, fraction_kept, reading, measure) for measure "correct" (0/1: greedy
    decoding's answer) and "ld" (the unablated answer's log-likelihood minus the ablated one's)."""
    sites = neuron_sites(engine.adapter, ANSWER)
    L, n, width, m = means.shape
    k_tokens = prompts.answer_tokens()
    total = L * m
    variants, labels = [], []
    masks = {k: unit_masks(order, k, k_tokens, width, (L, m)) for k in ks}  # shared by the readings
    for reading in readings:
        for k in ks:
            keep = masks[k]
            ablate = [Patch(p, means[p.layer], where=~keep[p.layer]) for p in sites]
            frozen = [Patch(p, "clean", where=keep[p.layer]) for p in sites] if reading == "frozen" else []
            variants.append(frozen + ablate)
            labels.append({"k": k, "fraction_kept": k / total, "reading": reading})
    return accuracy_and_ld(engine, prompts, variants, labels, "neuron ablation")


# ------------------------------------------------------------------------------- grids
def place_grids(
    engine: PatchingEngine, grid: pd.DataFrame, template: str, top: pd.DataFrame, kinds: Sequence[str]
) -> dict[str, np.ndarray]:
    """N(a, b) of the top units over the prompts of ``grid`` (every a + b prompt, a-major, column
    answer = a + b), teacher-forced with a + b, at each unit's place (NaN where the answer has no
    such place): ``pre`` [n_units, n_prompts] (the first of ``kinds``), ``up`` where
    ``neuron_up`` is asked for too, and each unit's largest post-activation over the prompts where
    it exists with its prompt row (``post_max``, ``post_argmax``)."""
    ids, groups, order, k_rows = forced_rows(engine.model, grid, template)
    wanted = list(dict.fromkeys((*kinds, "neuron_post")))
    layers = sorted(set(int(x) for x in top["layer"]))
    sites = [Point(kind, layer, (ANSWER,)) for kind in wanted for layer in layers]
    q_of = np.array([PLACES.index(p) for p in top["place"]])
    neuron = torch.as_tensor(top["neuron"].to_numpy(copy=True))
    units = {  # the rows of ``top`` at each (layer, place), and their neurons
        (layer, q): torch.as_tensor(rows)
        for layer in layers
        for q in np.unique(q_of)
        if len(rows := np.flatnonzero((top["layer"].to_numpy() == layer) & (q_of == q)))
    }
    parts: dict[str, list[Tensor]] = {kind: [] for kind in wanted}
    start = 0
    for chunk in engine.iter_collect(ids, sites, logits=False, desc="neuron grids", groups=groups):
        rows = len(chunk[sites[0]])
        k = torch.as_tensor(k_rows[start : start + rows])
        start += rows
        for kind in wanted:
            values = torch.full((len(top), rows), float("nan"))
            for (layer, q), sel in units.items():
                x = chunk[Point(kind, layer, (ANSWER,))]  # [rows, K, d]
                slot, ok = place_slots(k, q)
                got = x[torch.arange(rows), slot.to(x.device)][:, neuron[sel].to(x.device)].float().cpu().T
                values[sel] = torch.where(ok[None], got, float("nan"))  # [units, rows]
            parts[kind].append(values)
    full = {kind: torch.cat(v, 1) for kind, v in parts.items()}
    unordered = {kind: torch.empty_like(v) for kind, v in full.items()}
    for kind in full:
        unordered[kind][:, torch.as_tensor(order)] = full[kind]  # back to the grid's row order
    post = unordered["neuron_post"]
    best = torch.where(post.isnan(), -torch.inf, post).max(1)
    out = {
        "pre": to_numpy(unordered[kinds[0]]),
        "post_max": to_numpy(best.values),
        "post_argmax": to_numpy(best.indices),
    }
    if "neuron_up" in kinds[1:]:
        out["up"] = to_numpy(unordered["neuron_up"])
    return out


def place_masks(n_a: int = 100, n_b: int = 100) -> dict[str, np.ndarray]:
    """Where each place's N(a, b) exists on the grid (a + b has that digit): [n_a, n_b] bools."""
    s = np.add.outer(np.arange(n_a), np.arange(n_b))
    return {"units": np.ones_like(s, dtype=bool), "tens": s >= 10, "hundreds": s >= 100}


# ---------------------------------------------------------------------------- logit lens
def lens_tokens(tokenizer, end: str | None) -> tuple[list[str], list[int]]:
    """The tokens the digit logit lens reads: the ten digits 0..9 and, where the prompts' format
    ends an answer with one, that token ("end"); (labels, token ids)."""
    labels = [str(d) for d in range(10)] + (["end"] if end else [])
    ids = []
    for text in [str(d) for d in range(10)] + ([end] if end else []):
        got = tokenizer.encode(text, add_special_tokens=False)
        if len(got) != 1:
            raise ValueError(f"the logit lens needs {text!r} to be one token; the tokenizer gives {got}")
        ids.append(int(got[0]))
    return labels, ids


def digit_lens(engine: PatchingEngine, top: pd.DataFrame, token_ids: Sequence[int]) -> np.ndarray:
    """Each unit's neuron direction (its output-projection column; where the family normalises the
    MLP's output, Gemma-2/3, that column through the post norm: the norm's gain applied to it)
    through the final norm, the unembedding (its bias, if any) and the family's soft-cap, at
    ``token_ids``: [n_units, len(token_ids)].  The final RMS norm of one vector divides it by
    its RMS and applies the gain, so the lens's shape over the digits (its periods) is that of
    the gain-weighted W_U . w_n (a LayerNorm would also centre it)."""
    ad, hf = engine.adapter, engine.model.hf
    ids = torch.as_tensor(list(token_ids), device=engine.model.device)
    out = np.empty((len(top), len(ids)), dtype=np.float32)
    top = top.reset_index(drop=True)
    with torch.no_grad():
        for layer, part in top.groupby("layer", sort=False):
            w = ad.neuron_weights(hf, int(layer))[torch.as_tensor(part["neuron"].to_numpy(copy=True))].float()  # [k, d]
            if ad.mlp_post_norm:  # the block's write: the post norm of the projection's output
                norm = hf.get_submodule(f"{ad.block_path(int(layer))}.{ad.mlp_post_norm}")
                w = norm(w[:, None]).float()[:, 0]
            logits = ad.logits_from_final_residual(hf, w[:, None]).float()[:, 0]  # [k, V]
            out[part.index.to_numpy()] = to_numpy(logits[:, ids])
    return out


# -------------------------------------------------------------------------- fit evaluation
def place_fit_evaluation(
    engine: PatchingEngine,
    prompts: Pairs,
    top: pd.DataFrame,
    fitted: dict[str, np.ndarray],
    means: Tensor,
    ks: Sequence[int],
) -> pd.DataFrame:
    """Fig. 9 by place: for each k, the top k units of every place keep (a) their actual values
    (Fig. D9's frozen reading) or (b) their fitted values, every other neuron at every answer
    position mean-ablated.  ``fitted`` {hook kind: [n_units, n_prompts]} holds each unit's fitted
    N at each prompt's (a, b) (the model's own nonlinearity follows).  Raw table with rows
    (k, preactivation, measure) as :func:`place_ablation`'s."""
    sites = neuron_sites(engine.adapter, ANSWER)
    L, n, width, m = means.shape
    k_tokens = prompts.answer_tokens()
    q = torch.as_tensor([PLACES.index(p) for p in top["place"]])
    layer = torch.as_tensor(top["layer"].to_numpy(copy=True))
    neuron = torch.as_tensor(top["neuron"].to_numpy(copy=True))
    per_kind = {}
    for kind, values in fitted.items():
        per_place = torch.zeros(len(PLACES), L, n, m)
        per_place[q, layer, :, neuron] = torch.as_tensor(values, dtype=torch.float32)
        per_kind[kind] = by_slot(per_place, k_tokens.cpu(), width).to(means.device)
    variants, labels = [], []
    for k in ks:
        keep = unit_masks(top, k, k_tokens, width, (L, m))
        ablate = [Patch(p, means[p.layer], where=~keep[p.layer]) for p in sites]
        variants.append([Patch(p, "clean", where=keep[p.layer]) for p in sites] + ablate)
        labels.append({"k": k, "preactivation": "actual"})
        fits = [
            Patch(Point(kind, la, (ANSWER,)), values[la], where=keep[la])
            for kind, values in per_kind.items()
            for la in range(L)
        ]
        variants.append(fits + ablate)
        labels.append({"k": k, "preactivation": "fitted"})
    return accuracy_and_ld(engine, prompts, variants, labels, "fit evaluation")

"""Neurons by place (section 5.4, appendix D.2): the one implementation of every experiment of
the neuron stage, whatever the tokenizer (for numbers of several tokens docs/several-tokens.md,
"Numbers of several tokens").

helixclock's unit is (layer, neuron, place): the neuron at the position that predicts the
answer token of that place, counted from the answer's last token
(:attr:`helixclock.prompts.layout.NumberTokens.places`).  Where every number is one token (the paper's
models) an answer has one place, :data:`~helixclock.prompts.layout.NUMBER` (the whole number), predicted
at the last prompt token, and each experiment below is the paper's on its neurons at the last
token, value for value (tests/unit/test_neurons.py holds them to section 5.4's definitions).
With teacher forcing, an answer of k digit tokens is predicted at k positions: the last prompt
token t0 predicts its first digit, the position of each digit the next one; the places are then
the digits' (units, tens, hundreds; :data:`~helixclock.prompts.layout.DIGIT_PLACES`): for a one-digit
answer the units place is t0; for 57 the tens place is t0 and the units place the position of
"5"; for 123 the hundreds place is t0.

* :func:`place_attribution` - attribution patching of LD at every position that predicts an
  answer token (the paper's logit difference at the last token for one-token answers, the
  log-likelihood ratio of the whole answer otherwise); a unit's score is the mean over the
  pairs, 0 for a pair whose answer lacks its place; the top share per place are the top units.
* :func:`unit_direct_effects` - a unit's clean - corrupted write at its position through the
  final norm and unembedding, scored on that position's token (0 for pairs without its place).
* :func:`place_ablation` - keep the top k units of every place, mean-ablate every other neuron
  at every answer position, with means per token layout and position
  (:func:`ablation_means`); accuracy as greedy decoding scores it (teacher-forced: every
  position's top token is the answer's, then the answer ends).
* :func:`place_grids` - N(a, b) of each top unit over the 100 x 100 grid, teacher-forced with
  a + b: the number's and the units place exist everywhere, the tens place where a + b >= 10,
  the hundreds where a + b >= 100 (NaN elsewhere).
* :func:`place_lens` - the top units' logit lens, over the tokens their place predicts: the
  paper's (App. F) over the answer tokens 0..198 at the number's place, the digit lens
  (:func:`digit_lens`) over the digit tokens and the token that ends an answer at the digits'.
* :func:`place_fit_evaluation` - Fig. 9: the top k units of every place given their actual or
  fitted N(a, b), the rest mean-ablated.

A tensor laid out per prompt and answer slot ([L, rows, slot, d_mlp]: the ablation means, the
kept units) has one row, shared by every prompt, where every prompt has the same values (one
token layout for the means, one answer length for the kept units: one-token numbers give the
paper's [L, d_mlp] at the last token), else a row per prompt (:func:`by_slot`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from ...causal.pairs import forced_rows
from ...patching import Pairs, Patch, PatchingEngine, Point, attribute, direct_effects
from ...project.io import to_numpy
from ...prompts.layout import DIGIT_PLACES, NUMBER, place_index, whole_numbers
from ...stats.statistics import raw_table
from .patching import READINGS, accuracy_and_ld, logit_lens, neuron_sites, rank_neurons

ANSWER = "answer"  # the role of every position that predicts an answer token
MIN_LAYOUT_PROMPTS = 20  # fewer mean prompts of a layout than this: its ablation means are its place's
SLOTS = len(DIGIT_PLACES)  # the most places an answer has: the per-place tensors' first axis
CHUNK = 256  # neurons a pass of the every-neuron digit lens: the logits over the vocabulary are [CHUNK, vocabulary]
# what the grids' ``lens`` holds, by whether the units are read at whole numbers (layout.whole_numbers)
LENS_WHAT = {
    True: "W_U[answer 0..198] @ W_out[:, n]: no final norm, no unembedding bias",
    False: "final norm and unembedding of W_out[:, n] (its post norm's, where the family has one) at lens_tokens",
}


def place_slots(answer_tokens: Int[Tensor, " row"], place: int) -> tuple[Int[Tensor, " row"], Bool[Tensor, " row"]]:
    """The slot of role "answer" (0: the last prompt token) that predicts each row's ``place``-th
    token from the last (0: the whole number, or the units digit), and whether the row's answer
    has that place."""
    slot = answer_tokens - 1 - place
    return slot.clamp(min=0), slot >= 0


def places_of(answer_tokens: Tensor, names: Sequence[str]) -> list[str]:
    """The places some row has, from the last token's (``names``: the model's places,
    :attr:`helixclock.prompts.layout.NumberTokens.places`)."""
    return list(names[: min(int(answer_tokens.max()), len(names))])


def by_slot(
    per_place: Float[Tensor, "place layer row d_mlp"], answer_tokens: Int[Tensor, " row"], width: int
) -> Float[Tensor, "layer row slot d_mlp"]:
    """Values per place [Q, L, n, d] laid out on role "answer"'s slots [L, n, width, d]: slot s
    of a row with k answer tokens holds its place k - 1 - s; the slots a role pads past a row's
    answer repeat slot 0, as the role's positions do (the engine then writes each position once).
    Values of one row for all ([Q, L, 1, d]) stay one row where every row has the same number of
    answer tokens (one-token numbers: the last token's values, for every prompt)."""
    Q, L, r, d = per_place.shape
    shared = r == 1 and bool((answer_tokens == answer_tokens[0]).all())
    k = answer_tokens[:1] if shared else answer_tokens
    n = len(k)
    per_place = per_place.expand(Q, L, n, d)
    out = per_place.new_zeros((L, n, width, d))
    rows = torch.arange(n, device=per_place.device)
    for s in range(width):
        place = (k - 1 - s).clamp(min=0, max=Q - 1)
        out[:, :, s] = per_place[place, :, rows].transpose(0, 1)
    pad = k <= torch.arange(width, device=k.device)[:, None]  # [width, n]
    for s in range(1, width):
        out[:, pad[s], s] = out[:, pad[s], 0]
    return out


# ------------------------------------------------------------------------- attribution
def place_attribution(engine: PatchingEngine, pairs: Pairs, ranking: str = "mean_abs") -> pd.DataFrame:
    """Every unit's attribution (section 5.4's attribution patching; the gradient of the clean
    answer's score, whose difference from the corrupted run's is LD): per place, the signed mean
    over all pairs (``attribution``), a pair whose answer lacks the place counting 0, and the mean
    size (``attribution_abs``), ranked within the place by ``ranking``; columns place, rank, layer,
    neuron, attribution, attribution_abs, effect, pairs_with_place.  Means over all pairs make
    units of every place parts of one mean LD, so that their effects add up across places (Figs.
    D11, F4); within a place the ranking is that of the pairs with it.  One-token numbers: the
    paper's attribution of every last-token neuron, its mean over the pairs and its mean size."""
    sites = neuron_sites(engine.adapter, ANSWER)
    k = pairs.answer_tokens()
    places = places_of(k, engine.model.tokens.places)
    slots = [place_slots(k, place_index(p)) for p in places]

    def at_places(score: Tensor, rows: Tensor) -> Tensor:  # [b, K, d] -> [b, places, d]
        b = torch.arange(len(rows), device=score.device)
        return torch.stack([torch.where(ok[rows, None], score[b, slot[rows]], 0.0) for slot, ok in slots], 1)

    scores = attribute(engine, pairs, sites, reduce=("mean", "mean_abs"), desc="attribution", regroup=at_places)
    tables = []
    for q, place in enumerate(places):
        values = {r: to_numpy(torch.stack([scores[r][p][q] for p in sites])) for r in scores}  # [L, d_mlp] each
        L, m = values["mean"].shape
        df = pd.DataFrame(
            {
                "layer": np.repeat(np.arange(L), m),
                "neuron": np.tile(np.arange(m), L),
                "attribution": values["mean"].ravel(),
                "attribution_abs": values["mean_abs"].ravel(),
            }
        )
        ranked = rank_neurons(df, ranking)
        ranked.insert(0, "place", place)
        tables.append(ranked.assign(pairs_with_place=int(slots[q][1].sum())))
    return pd.concat(tables, ignore_index=True)


def top_units(scores: pd.DataFrame, n: int) -> pd.DataFrame:
    """The first ``n`` units of each place of a ranked attribution table (the top share per place)."""
    return scores.groupby("place", sort=False).head(n).reset_index(drop=True)


def de_pairs_of(pairs: Pairs, n: int) -> Pairs:
    """``n`` of the attribution pairs for the top units' DE where they are not drawn apart
    (``compat: authors``): the first ones where the pairs share one token layout (the paper's:
    the pairs are drawn in random order), else ``n`` spread over every layout in proportion (the
    first would be the first layouts' only; :meth:`~helixclock.patching.Pairs.spread`)."""
    return pairs.take(n) if len(pairs.groups) == 1 else pairs.spread(n)


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
        torch.stack([torch.where(ok, slot, -1) for slot, ok in (place_slots(k, place_index(q)) for q in top["place"])])
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
    mean over all of them at the same place.  [L, rows, width, d_mlp], the padded slots as
    :func:`by_slot` lays them: one row for every prompt where ``prompts`` have one token layout
    (one-token numbers: the paper's mean last-token post-activation), else a row per prompt."""
    ids, groups, _, k_mean = forced_rows(engine.model, mean_rows, template)
    sites = neuron_sites(engine.adapter, ANSWER)
    values, _ = engine.collect(ids, sites, logits=False, desc="mean activations", groups=groups)
    V = torch.stack([values[p].float() for p in sites])  # [L, m, K_mean, d]
    k_mean = torch.as_tensor(k_mean, device=V.device)
    rows = torch.arange(V.shape[1], device=V.device)
    by_layout = {g.layout: V[:, g.start : g.stop].mean(1) for g in groups if g.stop - g.start >= MIN_LAYOUT_PROMPTS}
    width = int(prompts.answer_tokens().max())
    place_means = None  # [Q, L, 1, d]: the mean at each place over all the mean prompts, where a layout needs it
    per_group = []
    for g in prompts.groups:
        K = g.layout.answer_tokens
        mean = by_layout.get(g.layout)
        if mean is None:
            if place_means is None:
                place_means = torch.stack(
                    [
                        V[:, rows, slot][:, ok].mean(1) if ok.any() else V[:, :, 0].mean(1)
                        for slot, ok in (place_slots(k_mean, q) for q in range(SLOTS))
                    ]
                )[:, :, None]
            per_group.append(by_slot(place_means, torch.tensor([K]), width)[:, 0])  # [L, width, d]
        else:
            per_group.append(torch.cat([mean[:, :K], mean[:, :1].expand(-1, width - K, -1)], 1))
    if len(per_group) == 1:
        return per_group[0][:, None]  # one layout: one row for every prompt
    return torch.cat([m[:, None].expand(-1, g.stop - g.start, -1, -1) for m, g in zip(per_group, prompts.groups)], 1)


def unit_masks(
    order: pd.DataFrame, k: int, answer_tokens: Tensor, width: int, shape: tuple[int, int]
) -> Bool[Tensor, "layer row slot d_mlp"]:
    """Which units are kept when the first ``k`` of every place of ``order`` are: [L, rows, width,
    d] (:func:`by_slot`: one row for every prompt where their answers have one token count)."""
    L, m = shape
    keep = torch.zeros(SLOTS, L, 1, m, dtype=torch.bool, device=answer_tokens.device)
    head = top_units(order, k)
    q = torch.as_tensor([place_index(p) for p in head["place"]], dtype=torch.long)
    keep[
        q, torch.as_tensor(head["layer"].to_numpy(copy=True)), 0, torch.as_tensor(head["neuron"].to_numpy(copy=True))
    ] = True
    return by_slot(keep, answer_tokens, width)


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
    decoding's answer) and "ld" (the unablated answer's score minus the ablated one's: its logit
    for a one-token answer, else its log-likelihood).  ``fraction_kept`` is k over the neurons of
    one place (every layer's)."""
    sites = neuron_sites(engine.adapter, ANSWER)
    L, m = means.shape[0], means.shape[-1]
    k_tokens = prompts.answer_tokens()
    width = int(k_tokens.max())
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
    q_of = np.array([place_index(p) for p in top["place"]])
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
    """Where each place's N(a, b) exists on the grid (a + b has that token: the whole number and
    the units digit everywhere, the tens digit from 10, the hundreds from 100): [n_a, n_b] bools."""
    s = np.add.outer(np.arange(n_a), np.arange(n_b))
    every = np.ones_like(s, dtype=bool)
    return {NUMBER: every, "units": every, "tens": s >= 10, "hundreds": s >= 100}


# ---------------------------------------------------------------------------- logit lens
def place_lens(engine: PatchingEngine, top: pd.DataFrame, grid: pd.DataFrame) -> dict:
    """The top units' logit lens over the tokens their place predicts (Figs. F3, F4), the one
    place where the neuron stage reads the token layout (:func:`helixclock.prompts.layout.whole_numbers`):

    * at the whole number (one-token numbers) the paper's App. F lens, ``lens`` [n_units, 199] =
      W_U W_out[:, n] over the answer tokens 0..198 (``grid``'s ``answer_token`` of each answer;
      :func:`.patching.logit_lens`: no final norm, no unembedding bias);
    * at the digits' places the digit lens (:func:`digit_lens`: through the final norm and the
      unembedding) over the digits 0..9 and the token that ends an answer, and every neuron's
      (``layer_lens`` [n_layers, d_mlp, 10 or 11], :func:`layer_digit_lens`: Fig. F4's base rate).

    ``lens_tokens`` names the tokens (bytes), ``lens_what`` says what the lens is."""
    whole = whole_numbers(top["place"])
    if whole:
        answers = grid.drop_duplicates("answer").set_index("answer").loc[np.arange(199), "answer_token"].to_numpy()
        out = {"lens": logit_lens(engine, top, answers), "lens_tokens": [str(n) for n in range(199)]}
    else:
        labels, ids = lens_tokens(engine.model.tokenizer, engine.model.info.get("answer_end"))
        out = {"lens": digit_lens(engine, top, ids), "layer_lens": layer_digit_lens(engine, ids), "lens_tokens": labels}
    return {**out, "lens_tokens": np.array(out["lens_tokens"], dtype="S"), "lens_what": LENS_WHAT[whole]}


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


def layer_digit_lens(engine: PatchingEngine, token_ids: Sequence[int], chunk_size: int = CHUNK) -> np.ndarray:
    """The digit lens of every neuron of every layer [n_layers, d_mlp, len(token_ids)] (float32):
    :func:`digit_lens` of each (layer, neuron), in chunks of neurons; the population of Fig. F4's
    base rate (App. F; :mod:`helixclock.stages.mistakes.lens_null`)."""
    ad = engine.adapter
    out = np.empty((ad.n_layers, ad.d_mlp, len(token_ids)), dtype=np.float32)
    for layer in range(ad.n_layers):
        for start in range(0, ad.d_mlp, chunk_size):
            neurons = np.arange(start, min(start + chunk_size, ad.d_mlp))
            out[layer, neurons] = digit_lens(engine, pd.DataFrame({"layer": layer, "neuron": neurons}), token_ids)
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
    N at each prompt's (a, b), patched at the hook points of
    :func:`.patching.preactivation_kinds` (the preactivation of a plain MLP; a gated MLP's gate
    and up, whose act(gate) * up the model then computes, ...), the model's own nonlinearity
    following.  Raw table with rows (k, preactivation, measure) as :func:`place_ablation`'s."""
    sites = neuron_sites(engine.adapter, ANSWER)
    L, m = means.shape[0], means.shape[-1]
    k_tokens = prompts.answer_tokens()
    width = int(k_tokens.max())
    top = top.reset_index(drop=True)
    q = torch.as_tensor([place_index(p) for p in top["place"]], dtype=torch.long)
    neuron = torch.as_tensor(top["neuron"].to_numpy(copy=True))
    per_layer = {}  # the fitted values of the top units of each (kind, layer) on the slots [n, width, d_mlp]
    for kind, values in fitted.items():
        values = torch.as_tensor(values, dtype=torch.float32)
        for layer, part in top.groupby("layer"):
            idx = torch.as_tensor(part.index.to_numpy(copy=True))
            per_place = torch.zeros(SLOTS, 1, len(prompts), m)
            per_place[q[idx], 0, :, neuron[idx]] = values[idx]
            per_layer[kind, int(layer)] = by_slot(per_place, k_tokens.cpu(), width)[0].to(means.device)
    variants, labels = [], []
    for k in ks:
        keep = unit_masks(top, k, k_tokens, width, (L, m))
        ablate = [Patch(p, means[p.layer], where=~keep[p.layer]) for p in sites]
        variants.append([Patch(p, "clean", where=keep[p.layer]) for p in sites] + ablate)
        labels.append({"k": k, "preactivation": "actual"})
        fits = [
            Patch(Point(kind, layer, (ANSWER,)), values, where=keep[layer])
            for (kind, layer), values in per_layer.items()
        ]
        variants.append(fits + ablate)
        labels.append({"k": k, "preactivation": "fitted"})
    return accuracy_and_ld(engine, prompts, variants, labels, "fit evaluation")

"""Direct effects and path patching (paper section 5.1, appendix D).

A component's *direct effect* (DE) is how much of the clean answer comes back when only its
clean-minus-corrupted write reaches the logits directly, everything else staying corrupted:
the logits are then the final norm and unembedding of the corrupted final residual plus that
write.  *Path patching* generalises this to a sender -> receiver path: the sender's write
reaches only the receiver's input, and the receiver's changed output travels on to the logits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from jaxtyping import Float, Int
from torch import Tensor

from .engine import PatchingEngine
from .metrics import answer_positions
from .points import Patch, Point, Record
from .runs import Pairs


def contribution(
    engine: PatchingEngine, point: Point, value: Float[Tensor, "row pos *feature"]
) -> Float[Tensor, "row pos d_model"]:
    """What a component's value writes into the residual stream, [n, n_pos, d_model]:
    attn_out and mlp_out as they are, a head through its slice of the output projection,
    a neuron's post-activation through its column of the MLP output projection."""
    if point.kind in ("attn_out", "mlp_out"):
        return value
    if point.kind == "head_out" and point.index is not None:
        if engine.adapter.attn_post_norm:
            raise ValueError(
                f"{engine.adapter.family} normalises the attention output after its projection "
                f"({engine.adapter.attn_post_norm}): one head's write into the residual stream is "
                "not defined alone; the change of the block's write is (write_change)"
            )
        W = engine.adapter.head_weights(engine.model.hf, point.layer)[point.index]  # [dh, d]
        return value @ W.to(value.dtype)
    if point.kind == "neuron_post" and point.index is not None:
        if engine.adapter.mlp_post_norm:
            raise ValueError(
                f"{engine.adapter.family} normalises the MLP output after its projection "
                f"({engine.adapter.mlp_post_norm}): one neuron's write into the residual stream is "
                "not defined alone; the change of the block's write is (write_change)"
            )
        w = engine.adapter.neuron_weights(engine.model.hf, point.layer)[point.index]  # [d]
        return value[..., None] * w.to(value.dtype)
    raise ValueError(
        f"no residual-stream contribution for {point}; allowed: attn_out, mlp_out, "
        "head_out with a head index, neuron_post with a neuron index"
    )


def write_change(
    engine: PatchingEngine,
    point: Point,
    new: Float[Tensor, "row pos *feature"],
    site: Float[Tensor, "row pos *site_feature"],
) -> Float[Tensor, "row pos d_model"]:
    """How the residual stream's input from ``point``'s block changes when the point's value
    goes from what ``site`` (its whole site's value: every head or neuron of the layer) holds
    to ``new``, the site's other heads or neurons unchanged, [n, n_pos, d_model].

    Without a norm after the output projection this is the difference of the two values'
    :func:`contribution` (linear in the value).  A family that normalises the projection's
    output (Gemma-2/3: ``attn_post_norm``, ``mlp_post_norm``) has no per-head or per-neuron
    write; the change then is the block's write with the point's value replaced, through its
    projection and norm, minus its write from ``site``: path patching's definition (the sender
    changed, everything else as it was), which is the contribution difference wherever the
    write is linear (tested)."""
    norm = engine.adapter.attn_post_norm if point.kind == "head_out" else engine.adapter.mlp_post_norm
    if point.index is None or point.kind not in ("head_out", "neuron_post") or not norm:
        return contribution(engine, point, new) - contribution(engine, point, engine.narrow(point, site))
    changed = site.clone()
    changed[:, :, point.index] = new.to(site.dtype)
    return _block_write(engine, point, changed) - _block_write(engine, point, site)


def _block_write(engine: PatchingEngine, point: Point, site: Tensor) -> Tensor:
    """A post-normed block's write from its whole site's value: the output projection (with its
    bias), then the norm."""
    ad, hf = engine.adapter, engine.model.hf
    block = ad.block_path(point.layer)
    proj, norm = (ad.attn_proj, ad.attn_post_norm) if point.kind == "head_out" else (ad.neuron_out, ad.mlp_post_norm)
    proj, norm = hf.get_submodule(f"{block}.{proj}"), hf.get_submodule(f"{block}.{norm}")
    flat = site.flatten(-2) if point.kind == "head_out" else site
    with torch.no_grad():
        return norm(proj(flat.to(proj.weight.dtype))).to(site.dtype)


def delta(engine: PatchingEngine, pairs: Pairs, point: Point) -> Float[Tensor, "pair pos d_model"]:
    """Clean minus corrupted write of a component, [n, n_pos, d_model] (:func:`write_change`
    from the corrupted site to the point's clean value).  An indexed point's values are read
    from its whole site (one cached run for all its heads or neurons)."""
    site = replace(point, index=None)
    clean = engine.narrow(point, engine.clean_values(pairs, [site])[site])
    return write_change(engine, point, clean, engine.corrupted_values(pairs, [site])[site])


def final_logits(engine: PatchingEngine, residual: Float[Tensor, "*row d_model"]) -> Float[Tensor, "*row vocab"]:
    """Logits of final-residual vectors [..., d] (final norm, then the unembedding), float32."""
    with torch.no_grad():
        return engine.adapter.logits_from_final_residual(engine.model.hf, residual).float()


def direct_effects(
    engine: PatchingEngine,
    pairs: Pairs,
    points: Sequence[Point],
    chunk: int = 64,
    slots: Int[Tensor, "point pair"] | None = None,
) -> Float[Tensor, "point pair"]:
    """DE of components, [len(points), n_pairs], at the positions of ``points`` (all the same:
    the last token, or every position that predicts an answer token, role "answer"): at each
    position, the score of the token it predicts when only the component's write there reaches
    the final residual (the corrupted run's plus the clean-minus-corrupted write), minus the
    corrupted run's score, summed over the positions.  At the last token this is the clean
    answer's logit (the paper's DE; for an answer of several tokens its first token's score, no
    later position reading the last token's residual directly); a role padded past a pair's
    answer tokens counts each of its positions once.

    With ``slots`` [len(points), n_pairs], each point's DE at one position per pair instead (an
    index into the points' positions; -1: none, DE 0): the same terms, only the final norm and
    unembedding of that position are computed (a neuron of one answer place, section 5.4)."""
    positions = points[0].positions if points else ("last",)
    if any(p.positions != positions for p in points):
        raise ValueError(f"direct effects of points at different positions: {sorted({p.positions for p in points})}")
    final = Point("resid_pre", engine.adapter.n_layers, positions)
    base = engine.corrupted_values(pairs, [final])[final]  # [n, P, d]
    n, P = base.shape[:2]
    targets = pairs.answers[:, :P]  # the token each position predicts
    corrupted = pairs.corrupted_run.positions[:, :P]  # [n, P]
    counted = torch.arange(P, device=base.device)[None] < pairs.answer_tokens()[:, None]  # [n, P]
    if slots is not None and (slots.shape != (len(points), n) or bool((slots >= P).any())):
        raise ValueError(f"slots {tuple(slots.shape)} must be [{len(points)}, {n}] indices below {P} (or -1)")
    sites = list(dict.fromkeys(replace(p, index=None) for p in points))
    engine.clean_values(pairs, sites)  # one clean and one corrupted pass for every site
    engine.corrupted_values(pairs, sites)
    rows = torch.arange(n, device=base.device)
    out = []
    for i in range(0, len(points), chunk):
        deltas = torch.stack([delta(engine, pairs, p) for p in points[i : i + chunk]])  # [c, n, P, d]
        c = len(deltas)
        if slots is None:
            logits = final_logits(engine, base[None] + deltas)  # [c, n, P, V]
            scored = answer_positions(logits.flatten(0, 1), targets.repeat(c, 1), pairs.scoring).view(c, n, P)
            out.append(torch.where(counted[None], scored - corrupted[None], 0.0).sum(-1))
            continue
        at = slots[i : i + c].to(base.device)
        where = at.clamp(min=0)  # [c, n]
        resid = base[rows[None], where] + deltas[torch.arange(c, device=base.device)[:, None], rows[None], where]
        logits = final_logits(engine, resid)  # [c, n, V]: one position a pair
        scored = answer_positions(
            logits.flatten(0, 1)[:, None], targets[rows[None], where].reshape(-1, 1), pairs.scoring
        )
        out.append(torch.where(at >= 0, scored.view(c, n) - corrupted[rows[None], where], 0.0))
    if not out:
        return torch.empty(0, len(pairs), device=base.device)
    return torch.cat(out)


def receiver_input(engine: PatchingEngine, receiver: Point) -> Point:
    """Where a receiver reads the residual stream at the last token: its block's input, or
    for the MLP of a sequential block, the residual between attention and MLP."""
    if receiver.kind == "mlp_out" and not engine.adapter.parallel:
        return Point("resid_mid", receiver.layer, receiver.positions)
    if receiver.kind in ("mlp_out", "attn_out", "head_out"):
        return Point("resid_pre", receiver.layer, receiver.positions)
    raise ValueError(f"receiver {receiver} must be attn_out, mlp_out or head_out (or 'logits')")


def reads(engine: PatchingEngine, receiver: Point, sender: Point) -> bool:
    """Whether ``receiver`` reads what ``sender`` writes at the same token."""
    if receiver.layer != sender.layer:
        return receiver.layer > sender.layer
    return not engine.adapter.parallel and sender.kind != "mlp_out" and receiver.kind == "mlp_out"


def path_patch(
    engine: PatchingEngine, pairs: Pairs, paths: Sequence[tuple[Point, Point | str]], desc: str = "path patching"
) -> Float[Tensor, "path pair"]:
    """Effect of each sender -> receiver path, [len(paths), n_pairs].

    First pass: add the sender's clean-minus-corrupted write to the receiver's input and
    record the receiver's output; second pass: patch that output into the corrupted run
    (so its effect travels on to the logits).  With the receiver "logits" this is the
    sender's direct effect.
    """
    to_logits = [i for i, (_, r) in enumerate(paths) if r == "logits"]
    to_comp = [i for i, (_, r) in enumerate(paths) if r != "logits"]
    out = torch.empty(len(paths), len(pairs), device=pairs.clean.device)
    if to_logits:
        out[to_logits] = direct_effects(engine, pairs, [paths[i][0] for i in to_logits])
    if to_comp:
        senders = list(dict.fromkeys(replace(paths[i][0], index=None) for i in to_comp))
        engine.clean_values(pairs, senders)  # every sender's site in one clean and one corrupted pass
        engine.corrupted_values(pairs, senders)
        first = []
        for i in to_comp:
            sender, receiver = paths[i]
            if not reads(engine, receiver, sender):
                raise ValueError(f"{receiver} does not read {sender}: it is not downstream")
            first.append(
                [Patch(receiver_input(engine, receiver), delta(engine, pairs, sender), add=True), Record(receiver)]
            )
        res = engine.run(pairs, first, metric=None, desc=f"{desc} (1/2)")  # records only: stops at the receivers
        second = [[Patch(paths[i][1], res.variant_records[j][paths[i][1]])] for j, i in enumerate(to_comp)]
        out[to_comp] = engine.run(pairs, second, desc=f"{desc} (2/2)").metric
    return out

"""Attribution patching: the gradient path of the engine (paper section 5.4).

Activation patching of every neuron one at a time costs one forward pass per neuron.
Attribution patching approximates each neuron's patching effect to first order,

    attribution(n) = d metric / d value_n  *  (value_clean,n - value_corrupted,n),

so every neuron of every layer is scored by one forward pass of the corrupted prompts with
gradients and one backward pass per batch (the clean values come from the cached clean run).
The metric is, as in the paper, the corrupted run's logit of the clean answer.  For a
neuron whose effect on the metric is linear (e.g. a last-layer neuron before an identity
final norm) the score is exact.

A neuron is the input of the MLP output projection (``neuron_post``); in gated MLPs (Llama
and the other gated families) that is act(gate) * up, one value per hidden unit.

Scores are averaged over pairs in one pass, signed (``"mean"``) or as sizes (``"mean_abs"``,
the mean of |attribution|: a neuron that raises the metric on some pairs and lowers it on
others averages to ~0 signed but has a large mean size); several reductions can be asked for
at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from ..prompts.layout import boundaries, group_at
from .engine import PatchingEngine
from .metrics import Metric, clean_answer_logit
from .points import Point
from .runs import Pairs

REDUCTIONS = ("mean", "mean_abs", "none")


def attribute(
    engine: PatchingEngine,
    pairs: Pairs,
    points: Sequence[Point],
    metric: Metric = clean_answer_logit,
    reduce: str | Sequence[str] = "mean",
    desc: str = "attribution",
    regroup: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> dict[Point, Float[Tensor, "*pair pos *feature"]] | dict[str, dict[Point, Float[Tensor, "*pair pos *feature"]]]:
    """Attribution of every element of every point: [n_positions, *features], the mean over
    pairs (``reduce="mean"``) or the mean of its absolute value (``"mean_abs"``), or with
    ``reduce="none"`` [n_pairs, n_positions, *features].  A sequence of reductions (e.g.
    ``("mean", "mean_abs")``) returns {reduction: {point: scores}} from the same pass.

    ``regroup(scores, rows)`` maps each batch's scores [rows, n_positions, *features] (its pairs'
    indices ``rows``) to [rows, n_groups, *features] before they are reduced, the groups then
    taking the positions' axis: e.g. each pair's score at the position of each place of its
    answer, 0 where it has none (:func:`helixclock.stages.neurons.places.place_attribution`); the
    reductions stay sums over the batches' pairs, divided by the number of pairs.

    Points may not be indexed (each covers every head or neuron of its site).  A role padded
    past a row's positions (a span, or "answer" past a short answer) scores 0 in its repeats, so
    that each position counts once.  One
    forward pass with gradients and one backward pass per batch of pairs; the clean
    values are read from the pairs' cached clean run.
    """
    several = not isinstance(reduce, str)
    reductions = tuple(reduce) if several else (reduce,)
    if not reductions or any(r not in REDUCTIONS for r in reductions):
        raise ValueError(f"reduce={reduce!r}; allowed: {', '.join(REDUCTIONS)} or a sequence of them")
    if any(p.index is not None for p in points):
        raise ValueError("attribution scores whole sites: give points without an index")
    clean = engine.clean_values(pairs, points)
    prefix = engine.prefix.get(
        pairs.corrupted, engine.prefix.length([pairs.clean, pairs.corrupted], points, pairs.groups)
    )
    start_site = engine.site(Point("resid_pre", 0, (0,)))
    parts: dict[str, dict[Point, list[Tensor]]] = {r: {p: [] for p in points} for r in reductions}

    def step(start: int, stop: int) -> None:
        layout = group_at(pairs.groups, start).layout
        got: dict = {}
        plan = {start_site: [lambda x: x.detach().requires_grad_(True)]}  # the graph starts here
        for p in points:
            plan.setdefault(engine.site(p), []).append(lambda x, p=p: got.__setitem__(p, x))
        rows = torch.arange(start, stop, device=pairs.corrupted.device)

        def on_logits(x: Tensor) -> None:
            got["metric"] = metric(x.float(), rows, pairs)

        with torch.enable_grad():
            engine.trace(pairs.corrupted[start:stop, : layout.length], plan, on_logits, prefix, layout.answer)
            grads = torch.autograd.grad(got["metric"].sum(), [got[p] for p in points], allow_unused=True)
        for p, g in zip(points, grads):
            value = engine.select(p, got[p].detach(), prefix[0], layout)
            grad = torch.zeros_like(value) if g is None else engine.select(p, g, prefix[0], layout)
            score = grad.float() * (clean[p][start:stop].float() - value.float())
            pos = engine.positions(p, prefix[0], layout)
            repeats = [i for i, q in enumerate(pos) if pos.index(q) != i]
            score[:, repeats] = 0  # a padded span's repeats are its first position, counted once
            if regroup is not None:
                score = regroup(score, rows)
            for r in reductions:
                parts[r][p].append(score if r == "none" else (score.abs() if r == "mean_abs" else score).sum(0))

    engine.batches(len(pairs), step, desc, boundaries(pairs.groups))
    out = {
        r: {p: torch.cat(v) if r == "none" else torch.stack(v).sum(0) / len(pairs) for p, v in part.items()}
        for r, part in parts.items()
    }
    return out if several else out[reductions[0]]

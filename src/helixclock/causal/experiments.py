"""Experiment templates the stages share, each one batched engine run with a raw table out.

* :func:`patch_sweep` - fits of a token's residual patched in at every layer (Figs. 4, 5, C5, C7)
* :func:`total_and_direct` - TE by activation patching and DE by path patching (Figs. 6, D2)
* :func:`topk_sweep` - the top k components patched together, for every k (Figs. D3, D8)

Raw tables hold one row per variant and one column per pair (see :mod:`helixclock.stats.statistics`);
table jobs turn them into means with intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

from ..fitting.bases import Basis, sum_values
from ..fitting.fits import PCA, Fits, fit_token
from ..patching import Pairs, Patch, PatchingEngine, Point, RunResult, direct_effects
from ..patching.metrics import TERMS, direct_effect_terms, ld_terms
from ..stats.statistics import raw_table
from .pairs import forced_rows


def ld_table(result: RunResult, pairs: Pairs, labels: list[dict], **extra) -> pd.DataFrame:
    """The raw table of an LD run (:meth:`PatchingEngine.run` with the default metric): one row
    per variant (``labels``) and a column per pair.  Pairs scored by log-probability (answers of
    several tokens) get a row per term of :func:`~helixclock.patching.metrics.ld_terms`, the
    column ``term`` saying which (``ld``, the metric, first): the raw-logit LD and the answer
    tokens' terms by place value beside it.  Pairs of the paper's LD keep one row per variant."""
    if pairs.scoring != "logprob":
        return raw_table(result.metric, labels, **extra)
    terms = ld_terms(result.positions, result.positions_raw, pairs)
    terms["ld"] = result.metric
    return pd.concat([raw_table(terms[t], labels, term=t, **extra) for t in TERMS], ignore_index=True)


def pca_patch(pca: PCA, layer: int, n: int) -> Callable[[Tensor, Tensor], Tensor]:
    """The PCA baseline as a patch: the clean value projected on its first n components."""
    mean = pca.mean[layer].float()
    comps = pca.components[layer, :n].float()

    def fn(clean: Tensor, corrupted: Tensor) -> Tensor:
        c = clean.float() - mean
        return mean + (c @ comps.T) @ comps

    return fn


def fit_variants(
    fits: Fits,
    layers: Sequence[int],
    position: int,
    clean_values,
    bases: Sequence[Basis] | None = None,
    pca_ks: Sequence[int] = (1, 2, 3, 4),
    layer_patch: bool = True,
    pca_ns: Sequence[int] = (),
    span_patch: bool = False,
) -> tuple[list[list[Patch]], list[dict]]:
    """One variant per (layer, method): the layer patch, PCA with 2k+1 components for each
    k in ``pca_ks`` (and n components for each n in ``pca_ns``), and each basis evaluated at
    the clean values of the pairs; with ``span_patch`` (numbers of several tokens) also the
    layer patch of every token of a (``layer_span``, role "a_span": what a's last token alone
    leaves out)."""
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
        if span_patch:
            variants.append([Patch(Point("resid_pre", layer, ("a_span",)), "clean")])
            labels.append({"layer": layer, "method": "layer_span", "periods": "", "k": np.nan, "n_params": np.nan})
        for k, n in [(k, 2 * k + 1) for k in pca_ks] + [(np.nan, n) for n in pca_ns]:
            variants.append([Patch(point, pca_patch(fits.pca, layer, n))])
            labels.append({"layer": layer, "method": "pca", "periods": "", "k": k, "n_params": n})
        for b in bases:
            variants.append([Patch(point, preds[b][li][:, None].to(device))])
            labels.append(
                {
                    "layer": layer,
                    "method": b.kind,
                    "periods": ",".join(map(str, b.periods)),
                    "k": b.k,
                    "n_params": b.n_params,
                    "basis": b.name,
                }
            )
    return variants, labels


def patch_sweep(
    engine: PatchingEngine,
    pairs: Pairs,
    fits: Fits,
    layers: Sequence[int],
    position: int,
    clean_values,
    bases=None,
    pca_ks=(1, 2, 3, 4),
    desc: str = "helix patching",
    layer_patch: bool = True,
    pca_ns: Sequence[int] = (),
    references: bool = False,
    **extra,
) -> pd.DataFrame:
    """Every fit of every layer patched in at ``position``: the raw LD table.  With
    ``references`` (numbers of several tokens) also two references beside them: the layer patch
    of all of a's tokens (``layer_span``) and the clean LD (``clean``: :func:`clean_table`, one
    row per layer so that it draws as a line)."""
    variants, labels = fit_variants(
        fits, layers, position, clean_values, bases, pca_ks, layer_patch, pca_ns, span_patch=references
    )
    table = ld_table(engine.run(pairs, variants, desc=desc), pairs, labels, **extra)
    if not references:
        return table
    clean = [{"layer": layer, "method": "clean", "periods": "", "k": np.nan, "n_params": np.nan} for layer in layers]
    return pd.concat([table, clean_table(engine, pairs, clean, **extra)], ignore_index=True)


def clean_table(engine: PatchingEngine, pairs: Pairs, labels: list[dict], **extra) -> pd.DataFrame:
    """The clean LD: the clean run's own LD (the clean answer's score in the clean run minus the
    corrupted run's), as the raw table of :func:`ld_table` with one identical row per label.  A
    reference, not a bound: it is what patching every value of the clean run restores, and a
    single patch may restore more (the corrupted run's other values can add to it)."""
    ld = engine.clean_ld(pairs)
    if pairs.scoring != "logprob":
        return raw_table(ld[None].expand(len(labels), -1), labels, **extra)
    run = pairs.clean_run
    terms = ld_terms(
        run.positions[None].expand(len(labels), -1, -1), run.positions_raw[None].expand(len(labels), -1, -1), pairs
    )
    terms["ld"] = ld[None].expand(len(labels), -1)
    return pd.concat([raw_table(terms[t], labels, term=t, **extra) for t in TERMS], ignore_index=True)


COMPONENT = {"attn_out": "attention", "mlp_out": "MLP", "head_out": "head"}


def layer_grid(n: int, step: int = 1) -> list[int]:
    """The layers 0..n-1 a sweep patches: every ``step``-th one and the last (registry key
    ``layer_step``, a coarser grid for a model whose every-layer sweep is too slow on its
    machine; 1, every layer, is the paper's)."""
    if step < 1:
        raise ValueError(f"registry key 'layer_step': value {step!r}; allowed: an integer >= 1")
    return sorted({*range(0, n, step), n - 1})


def component_points(
    adapter, last: int, kinds=("attn_out", "mlp_out"), layers: Sequence[int] | None = None
) -> list[Point]:
    layers = range(adapter.n_layers) if layers is None else layers
    return [Point(k, layer, (last,)) for layer in layers for k in kinds]


def _component_labels(points: Sequence[Point]) -> list[dict]:
    return [
        {"layer": p.layer, "component": COMPONENT[p.kind], "head": p.index if p.index is not None else -1}
        for p in points
    ]


def total_effects(engine: PatchingEngine, pairs: Pairs, points: Sequence[Point], desc: str = "total effects"):
    """TE (activation patching) of each point alone, the rows of :func:`total_and_direct` with
    effect te: what a selection draw ranks components by (docs/findings.md, "Findings")."""
    te = engine.run(pairs, [[Patch(p)] for p in points], desc=desc)
    return ld_table(te, pairs, _component_labels(points), effect="te")


def total_and_direct(
    engine: PatchingEngine, pairs: Pairs, points: Sequence[Point], desc: str = "total effects"
) -> pd.DataFrame:
    """TE (activation patching) and DE (path patching to the logits) of each point: a raw table
    with columns layer, component, head, effect (te or de) and the pairs.

    For answers of several tokens TE is the log-likelihood ratio of the whole answer (rows by
    ``term``: every answer token's and the end token's) and DE the score of the tokens the
    points' positions predict (:func:`~helixclock.patching.paths.direct_effects`): at the last
    prompt token the first answer token alone.  They score the same tokens in TE's terms those
    positions predict (:func:`helixclock.stats.statistics.matched_terms`, the summary tables'
    ``te_matched``), and at the first differing token, where one token is read
    (:mod:`helixclock.causal.first_difference`)."""
    te = engine.run(pairs, [[Patch(p)] for p in points], desc=desc)
    de = direct_effects(engine, pairs, points)
    labels = _component_labels(points)
    de_extra = direct_effect_terms(pairs)
    return pd.concat(
        [ld_table(te, pairs, labels, effect="te"), raw_table(de, labels, effect="de", **de_extra)], ignore_index=True
    )


def topk_sweep(
    engine: PatchingEngine, pairs: Pairs, ordered: Sequence[Point], ks: Sequence[int] | None = None, desc: str = "top-k"
) -> pd.DataFrame:
    """Patch the first k of ``ordered`` together, for each k (0..all by default), and all of
    them (k = -1, the reference): a raw table with columns k, added (the component the k-th
    step adds) and the pairs (of answers of several tokens, a row per term of LD: :func:`ld_table`)."""
    ks = list(ks) if ks is not None else list(range(0, len(ordered) + 1))
    variants = [[Patch(p) for p in ordered[:k]] for k in ks] + [[Patch(p) for p in ordered]]
    labels = [{"k": k, "added": ordered[k - 1].name if k >= 1 else ""} for k in ks] + [{"k": -1, "added": "all"}]
    return ld_table(engine.run(pairs, variants, desc=desc), pairs, labels)


def answer_residuals(
    engine: PatchingEngine, correct: pd.DataFrame, template: str, layers: Sequence[int] | None = None
) -> tuple:
    """The residuals at every position that predicts an answer token, teacher-forced, of the
    correct prompts ``correct`` at each of ``layers`` (resid_pre, default 0..L, each [n, K, d]),
    with their (a, b) and answer token counts: what Fig. 5's fits at the answer positions and the
    causal nested test at p* (:mod:`helixclock.stages.helix.nested`) fit."""
    ids, groups, order, k = forced_rows(engine.model, correct, template)
    layers = range(engine.adapter.n_layers + 1) if layers is None else layers
    points = [Point("resid_pre", layer, ("answer",)) for layer in layers]
    values, _ = engine.collect(ids, points, logits=False, desc="answer-position residuals", groups=groups)
    ab = correct[["a", "b"]].to_numpy()[order]
    return [values[p].cpu() for p in points], ab, k


def answer_position_fits(
    H: Float[Tensor, "layer row pos d_model"],
    ab: np.ndarray,
    answer_tokens: np.ndarray,
    bases: Sequence[Basis],
    n_components: int,
) -> list[Fits]:
    """Fits of values at every position that predicts an answer token (role "answer"), one per
    position j: ``bases`` of a+b fitted to H[:, rows, j] over the rows whose answers reach j
    (``answer_tokens`` > j), of operands ``ab`` [rows, 2].  What Figs. 5 and 7 patch in at the
    answer positions (answers of several tokens)."""
    fits = []
    for j in range(H.shape[2]):
        rows = np.flatnonzero(answer_tokens > j)
        if not len(rows):
            raise ValueError(f"no fitted prompt's answer reaches answer position {j}: nothing to fit there")
        fits.append(
            fit_token(H[:, rows, j].float(), sum_values(ab[rows, 0], ab[rows, 1]), bases, n_components, dedupe=False)
        )
    return fits


def answer_width(pairs: Pairs) -> int:
    """The positions of role "answer" in the pairs' runs: as wide as the most answer tokens among
    the prompts the pairs were drawn from (all correct prompts), which may be more than the drawn
    pairs' (a draw without three-digit answers reads three positions where some correct prompt
    has a three-digit answer)."""
    return max(len(g.layout.resolve("answer")) for g in pairs.groups)


def widen(table: Float[Tensor, "*row pos d_model"], width: int) -> Float[Tensor, "*row width d_model"]:
    """Values at the first positions of role "answer" (axis -2), widened to ``width`` positions
    by repeating the first (the padding of a role past every pair's answer)."""
    have = table.shape[-2]
    if have >= width:
        return table
    pad = table[..., :1, :].expand(*table.shape[:-2], width - have, table.shape[-1])
    return torch.cat([table, pad], -2)


def pad_answer_positions(table: Float[Tensor, "layer pair pos d_model"], answer_tokens: Tensor) -> None:
    """Fill, in place, the positions past each pair's answer (a role padded to the longest
    answer repeats its first position) with the value at its first position."""
    for j in range(1, table.shape[2]):
        pad = answer_tokens <= j
        table[:, pad, j] = table[:, pad, 0]


def stack_points(values: dict[Point, Tensor], points: Sequence[Point]) -> Tensor:
    """Values of points at one position each, stacked: [len(points), n, ...]."""
    return torch.stack([values[p][:, 0] for p in points])

"""Last-token fits and layer effects (section 5.1): the model jobs' raw tables.

To compute a+b the model must build helix(a+b) on the last token.  Its last-token residual
is fitted with helix(a, b, a+b) (27 parameters with T = [2, 5, 10, 100]), helix(a+b) and
helix(a, b), compared with a parameter-matched PCA and the layer patch (Fig. 5).  Per layer,
the total effect (TE, activation patching) and direct effect (DE, path patching to the
logits) of each attention and MLP output say where the computation happens (Fig. 6).

Every raw table carries column ``reading``: the paper's last token, which is all a model
whose numbers are one token has (:attr:`helixclock.prompts.layout.NumberTokens.readings`).  Answers of
several tokens are read three times: at the last prompt token, at every position that predicts
an answer token (patched together), and at the first differing token p*
(:mod:`helixclock.causal.first_difference`: the position that predicts the first answer token the
clean and the corrupted answer do not share; rows by stratum, columns ``answer_tokens`` and
``p_star``), where Fig. 5's fits of each answer position are patched in at each pair's p* and
Fig. 6's TE and DE score the one token p* predicts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ...causal.experiments import (
    answer_position_fits,
    answer_residuals,
    component_points,
    layer_grid,
    ld_table,
    pad_answer_positions,
    patch_sweep,
    total_and_direct,
)
from ...causal.first_difference import FirstDifference, first_difference_pairs
from ...causal.pairs import job_pairs
from ...fitting.bases import PERIODS, FitSettings, clock_bases, sum_values
from ...fitting.fits import Fits, fit_token
from ...patching import Pairs, Patch, PatchingEngine, Point
from ...prompts.layout import READINGS

PCA_BASELINES = (9, 27)  # the authors' parameter-matched PCAs: helix(a+b) and helix(a,b,a+b)


def last_token_curves(
    engine: PatchingEngine,
    pairs: Pairs,
    cache,
    periods: Sequence[int] = PERIODS,
    n_components: int = 500,
    layer_step: int = 1,
) -> pd.DataFrame:
    """Fig. 5: fits of the last-token residual (solved in ``n_components`` PCA dimensions, the
    authors' 500) patched at every layer, beside PCA baselines of 9 and 27 dimensions; raw
    table with a ``fit`` label per curve and ``block_output``, the paper's layer number (the
    residual after block l is resid_pre[l + 1]; -1 is the embedding)."""
    L = int(cache.attrs["n_layers"])
    last = "last"  # role "last": the last prompt token of each pair's layout (one-token numbers: the card's)
    bases = clock_bases(periods)
    H = torch.from_numpy(cache.last).transpose(0, 1).to(pairs.clean.device)  # [L+1, n, d]
    fits = fit_token(H, sum_values(cache.ab[:, 0], cache.ab[:, 1]), bases, n_components, dedupe=False)
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    pca_ns = sorted({min(n, fits.pca.components.shape[1]) for n in PCA_BASELINES})
    df = patch_sweep(
        engine,
        pairs,
        fits,
        layer_grid(L + 1, layer_step),
        last,
        clean,
        bases,
        pca_ks=(),
        pca_ns=pca_ns,
        desc="last-token fits",
    )
    df.insert(0, "fit", [_fit_label(r) for r in df.to_dict("records")])
    df.insert(2, "block_output", df["layer"] - 1)
    return df


def _fit_label(row: dict) -> str:
    if row["method"] == "layer":
        return "layer patch"
    if row["method"] == "pca":
        return f"PCA ({int(row['n_params'])} comps)"
    return row["basis"].split("[")[0]


def layer_effects(
    engine: PatchingEngine, pairs: Pairs, position: int | str = "last", layer_step: int = 1
) -> pd.DataFrame:
    """Fig. 6: TE and DE of every attention and MLP output at the last prompt token of each
    pair's layout (raw table), or at ``position`` (role "answer": every position that predicts
    an answer token, patched together, the DE summed over them).  Every ``layer_step``-th block
    and the last."""
    layers = layer_grid(engine.adapter.n_layers, layer_step)
    return total_and_direct(
        engine, pairs, component_points(engine.adapter, position, layers=layers), desc="layer effects"
    )


def answer_position_curves(
    engine: PatchingEngine,
    pairs: Pairs,
    residuals: Sequence[Tensor],
    ab: np.ndarray,
    answer_tokens: np.ndarray,
    periods: Sequence[int] = PERIODS,
    n_components: int = 500,
    layers: Sequence[int] | None = None,
    fits: Sequence[Fits] | None = None,
) -> pd.DataFrame:
    """Fig. 5 at every position that predicts an answer token (role "answer"), patched together:
    the layer patch, and per answer position j the fits of Fig. 5 and the PCA baselines fitted to
    the residuals at position j of the prompts whose answers reach it.  ``residuals``: per layer
    (resid_pre[l] for l in ``layers``, default 0..L) [n, K, d] at those positions of the fitted
    (teacher-forced) prompts, of answers (a, b) = ``ab`` and ``answer_tokens`` tokens (``fits``:
    their :func:`~helixclock.causal.experiments.answer_position_fits`, where already fitted).  Raw
    table as :func:`last_token_curves`.

    A pair whose answer has fewer tokens than K fills the padding with its first position's
    value (the role repeats that position)."""
    L1 = len(residuals)
    device = pairs.clean.device
    bases = clock_bases(periods)
    if fits is None:
        fits = answer_position_fits(torch.stack(residuals).to(device), ab, answer_tokens, bases, n_components)
    clean_ab = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    layers = list(range(L1)) if layers is None else list(layers)
    points = [Point("resid_pre", layer, ("answer",)) for layer in layers]
    clean = engine.clean_values(pairs, points)  # [n_pairs, K, d] each
    X = torch.stack([clean[p] for p in points]).float()  # [L+1, n_pairs, K, d]
    k_pairs = pairs.answer_tokens()
    preds = {b.name: torch.empty_like(X) for b in bases}
    pcas = {n: torch.empty_like(X) for n in PCA_BASELINES}
    for j, fitted in enumerate(fits):
        _predict(fitted, bases, clean_ab, X[:, :, j], preds, pcas, (slice(None), j))
    for table in (*preds.values(), *pcas.values()):
        pad_answer_positions(table, k_pairs)
    variants, labels = _fit_variants(points, preds, pcas, bases)
    df = ld_table(engine.run(pairs, variants, desc="answer-position fits"), pairs, labels)
    df.insert(2, "block_output", df["layer"] - 1)
    return df


def _predict(fits: Fits, bases, clean_ab, X: Tensor, preds: dict, pcas: dict, at) -> None:
    """In place: the fits of one answer position at the pairs' clean a+b (``preds[basis name]``)
    and the PCA baselines of the pairs' clean values ``X`` [L', rows, d] (``pcas[n]``), written
    to ``[:, *at]`` (the rows and the position)."""
    device = X.device
    for b in bases:
        preds[b.name][(slice(None), *at)] = fits.predict(b, clean_ab).to(device)  # [L', rows, d]
    mean = fits.pca.mean.float().to(device)[:, None]  # [L', 1, d]
    for n in pcas:
        comps = fits.pca.components[:, : min(n, fits.pca.components.shape[1])].float().to(device)  # [L', m, d]
        coords = torch.einsum("lnd,lmd->lnm", X - mean, comps)
        pcas[n][(slice(None), *at)] = mean + torch.einsum("lnm,lmd->lnd", coords, comps)


def first_difference_curves(
    engine: PatchingEngine, differ: FirstDifference, fits: Sequence[Fits], periods: Sequence[int], layers: Sequence[int]
) -> pd.DataFrame:
    """Fig. 5 at the first differing token (:mod:`helixclock.causal.first_difference`): on the pairs cut
    after p*, at each of ``layers`` the layer patch and, per pair, the fits and PCA baselines of
    its answer position p* (``fits``: :func:`~helixclock.causal.experiments.answer_position_fits` of
    the answer positions, as :func:`answer_position_curves` patches them together) patched in
    at p*; raw table as :func:`last_token_curves`, by stratum, in the pairs' order."""
    pairs, bases = differ.pairs, clock_bases(periods)
    points = [Point("resid_pre", layer, ("last",)) for layer in layers]
    clean = engine.clean_values(pairs, points)
    X = torch.stack([clean[p] for p in points]).float()  # [L', n_pairs, 1, d]
    a, b = np.asarray(pairs.meta["clean_a"]), np.asarray(pairs.meta["clean_b"])
    preds = {basis.name: torch.empty_like(X) for basis in bases}
    pcas = {n: torch.empty_like(X) for n in PCA_BASELINES}
    at = differ.at
    for j in sorted(set(at.tolist())):  # the pairs of each p*, with that answer position's fits
        rows = np.flatnonzero(at == j)
        index = torch.as_tensor(rows, device=X.device)
        _predict(fits[j], bases, sum_values(a[rows], b[rows]), X[:, index, 0], preds, pcas, (index, 0))
    variants, labels = _fit_variants(points, preds, pcas, bases)
    df = ld_table(engine.run(pairs, variants, desc="fits at p*"), pairs, labels)
    df.insert(2, "block_output", df["layer"] - 1)
    return differ.table(df)


def _fit_variants(points: Sequence[Point], preds: dict, pcas: dict, bases) -> tuple[list, list[dict]]:
    """Fig. 5's variants at ``points`` (one per layer): the layer patch, the PCA baselines and the
    fits, with their labels."""
    variants, labels = [], []
    for i, point in enumerate(points):
        layer = point.layer
        base = {"layer": layer, "periods": "", "k": np.nan}
        variants.append([Patch(point, "clean")])
        labels.append({**base, "method": "layer", "n_params": np.nan, "fit": "layer patch"})
        for n in pcas:
            variants.append([Patch(point, pcas[n][i])])
            labels.append({**base, "method": "pca", "n_params": n, "fit": f"PCA ({n} comps)"})
        for b in bases:
            variants.append([Patch(point, preds[b.name][i])])
            fit = b.name.split("[")[0]
            labels.append(
                {
                    **base,
                    "method": b.kind,
                    "periods": ",".join(map(str, b.periods)),
                    "k": b.k,
                    "n_params": b.n_params,
                    "basis": b.name,
                    "fit": fit,
                }
            )
    return variants, labels


def last_token_patching(
    engine: PatchingEngine,
    pairs: Pairs,
    cache,
    fit: FitSettings,
    correct: pd.DataFrame | None = None,
    template: str | None = None,
    layer_step: int = 1,
    ranked: Pairs | None = None,
) -> dict[str, pd.DataFrame]:
    """Rule last_token_patching: Fig. 5's last-token fits (in ``fit.pca_components`` PCA
    dimensions) and Fig. 6's layer effects, raw tables, at each reading of the model's token
    layout (column ``reading``; :attr:`helixclock.prompts.layout.NumberTokens.readings`): the last
    prompt token (the paper's reading, a one-token model's only one) and, where numbers take
    several tokens, every position that predicts an answer token, patched together (Fig. 5's
    fits there fitted to the ``correct`` prompts of ``template``, teacher-forced:
    :func:`answer_residuals`), and the first differing token.  Both read every
    ``layer_step``-th layer and the last (:func:`helixclock.causal.experiments.layer_grid`).
    ``fits_selection``: the layer patch of every block on the selection draw ``ranked``
    (:func:`helixclock.causal.pairs.ranking_draw`), at the last token and the answer positions,
    where the findings choose Fig. 5's best block (docs/findings.md, "Findings"; no rows where
    ``ranked`` is None, the choice then on the measuring pairs); ``pairs`` (table) lists both
    draws."""
    fits = last_token_curves(engine, pairs, cache, fit.periods, fit.pca_components, layer_step)
    effects = layer_effects(engine, pairs, layer_step=layer_step)
    chosen_on = best_block_sweep(engine, ranked, layer_step, fits)
    tables = {"fits_selection": chosen_on, "pairs": job_pairs(pairs, ranked)}
    if engine.model.tokens.readings == ("last",):
        return {"fits": _readings(fits), "layer_effects": _readings(effects), **tables}
    layers = layer_grid(engine.adapter.n_layers + 1, layer_step)
    residuals, ab, k = answer_residuals(engine, correct, template, layers)
    H = torch.stack(residuals).to(pairs.clean.device)
    position_fits = answer_position_fits(H, ab, k, clock_bases(fit.periods), fit.pca_components)
    answer_fits = answer_position_curves(
        engine, pairs, residuals, ab, k, fit.periods, fit.pca_components, layers, fits=position_fits
    )
    answer_effects = layer_effects(engine, pairs, "answer", layer_step)
    differ = first_difference_pairs(pairs)
    differ_fits = first_difference_curves(engine, differ, position_fits, fit.periods, layers)
    differ_effects = differ.table(layer_effects(engine, differ.pairs, "last", layer_step))
    return {
        "fits": _readings(fits, answer_fits, differ_fits),
        "layer_effects": _readings(effects, answer_effects, differ_effects),
        **tables,
    }


def best_block_sweep(engine: PatchingEngine, ranked: Pairs | None, layer_step: int, like: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5's layer patch at every block (every ``layer_step``-th and the last) on the selection
    draw ``ranked``, at the last token and, where answers take several tokens, at the answer
    positions (raw table, column ``reading`` first, the fits table's labels, ``like``): what the
    best block is chosen by.  ``ranked`` None: the label columns and no rows."""
    labels = ["reading"] + [c for c in like.columns if not c.startswith("pair_")]
    if ranked is None:
        return pd.DataFrame(columns=labels)
    layers = layer_grid(engine.adapter.n_layers + 1, layer_step)
    parts = []
    for role in ("last", "answer") if engine.model.tokens.several else ("last",):
        variants = [[Patch(Point("resid_pre", layer, (role,)), "clean")] for layer in layers]
        rows = [
            {"fit": "layer patch", "layer": ly, "block_output": ly - 1, "method": "layer", "periods": "", "k": np.nan}
            for ly in layers
        ]
        parts.append(ld_table(engine.run(ranked, variants, desc=f"layer patch ({role}, selection draw)"), ranked, rows))
    return _readings(*parts).reindex(columns=labels + [c for c in parts[0].columns if c.startswith("pair_")])


def _readings(
    last: pd.DataFrame, answer: pd.DataFrame | None = None, differ: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The readings' raw tables in one, column ``reading`` first (the first differing token's
    strata columns before the pairs); the readings a model does not have are None."""
    parts = []
    for key, table in (("last", last), ("answer", answer), ("differ", differ)):
        if table is None:
            continue
        table = table.copy()
        table.insert(0, "reading", READINGS[key])
        parts.append(table)
    labels = [c for c in parts[0].columns if not c.startswith("pair_")]
    pairs = [c for c in parts[0].columns if c.startswith("pair_")]
    extra = [c for c in parts[-1].columns if c not in labels and not c.startswith("pair_")]
    return pd.concat([part.reindex(columns=labels + extra + pairs) for part in parts], ignore_index=True)

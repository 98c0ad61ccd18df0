"""MLPs at the last token (section 5.3): the model job, one implementation whatever the tokenizer.

MLPs sorted by TE (Fig. 6's layer effects, and those of the MLPs a coarser layer grid skipped
measured here: :func:`mlp_effects`) are patched together for every k (Fig. D8); every MLP's
output is fitted with helix(a+b) and the fit patched in, so that helix(a+b)/TE can be read
for whichever MLPs the table job calls the circuit (Fig. 7).

Every raw table carries column ``reading``: the readings of the model's token layout
(:attr:`helixclock.prompts.layout.NumberTokens.readings`), the paper's last token alone where every
number is one token.  Answers of several tokens (pairs scored by log-probability) are read as
Figs. 5 and 6 are: at the last prompt token, the paper's reading, and at every position
that predicts an answer token, patched together; TE, DE, the top-k curve and the helix(a+b)
fits on the same positions and the same LD.  There the fits are fitted per answer position (as
Fig. 5's), and the raw tables keep LD's terms by place value (``term``): at the last prompt token
DE scores the first answer token only, so DE/TE compares like with like in TE's first-token
term (the summary's ``te_matched``).  A third reading at the first differing token (p*,
:mod:`helixclock.causal.first_difference`) measures every MLP's TE and DE and its helix(a+b) fit of
position p* there, by stratum (answer tokens, p*), TE and DE scoring the one token p* predicts.
A one-token answer keeps the paper's tables (tests/unit/test_readings.py).

The order of the top-k sweep and the circuit are choices that decide what the stage reports, so
they are made on the job's selection draw where it has one (:func:`selection_sweep`: every MLP's
TE and the top-k sweep in that order on pairs apart from the measuring ones, raw table
``selection``; docs/findings.md, "Findings"); under ``compat: authors`` on the measuring pairs, the paper's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

from ...causal.experiments import (
    answer_position_fits,
    answer_width,
    ld_table,
    pad_answer_positions,
    stack_points,
    topk_sweep,
    total_and_direct,
    total_effects,
    widen,
)
from ...causal.first_difference import FirstDifference, first_difference_pairs
from ...causal.pairs import SelectionDraw, forced_rows, job_pairs
from ...fitting.bases import PERIODS, SUM, Basis, sum_values
from ...fitting.fits import fit_token
from ...patching import Pairs, Patch, PatchingEngine, Point
from ...project.io import to_numpy
from ...prompts.layout import READINGS, ROLE_READINGS, STRATA
from ...stats.statistics import pair_values, primary
from ...stats.strata import reading_rows


def mlp_te(effects: pd.DataFrame) -> np.ndarray:
    """Each MLP's mean TE, [n_layers] in layer order, from a raw table of TE and DE of every MLP
    at one reading (:func:`mlp_effects`; of LD itself where the table has its terms)."""
    effects = primary(effects)
    mlp = effects[(effects["component"] == "MLP") & (effects["effect"] == "te")]
    return pair_values(mlp.sort_values("layer")).mean(1)


def mlp_effects(
    engine: PatchingEngine, pairs: Pairs, layer_effects: pd.DataFrame, position, differ: FirstDifference | None = None
) -> pd.DataFrame:
    """TE and DE of every MLP at ``position`` (raw table): the MLP rows of Fig. 6's raw
    ``layer_effects`` at that position (its ``reading`` where it has several), and those of
    the MLPs its layer grid skipped (registry ``layer_step``) measured here on the same pairs.
    At the first differing token (``position`` "differ", with ``differ``: the pairs cut after p*)
    the skipped MLPs are measured on the cut pairs, by stratum as Fig. 6's rows there."""
    rows = reading_rows(layer_effects[layer_effects["component"] == "MLP"], READINGS[position])
    have = set(rows["layer"])
    missing = [layer for layer in range(engine.adapter.n_layers) if layer not in have]
    if missing and position == "differ":
        if differ is None:
            raise ValueError("MLP effects at the first differing token need its cut pairs (differ)")
        points = [Point("mlp_out", layer, ("last",)) for layer in missing]
        measured = differ.table(total_and_direct(engine, differ.pairs, points, desc="MLP effects (first difference)"))
        rows = pd.concat([rows, measured], ignore_index=True)
    elif missing:
        points = [Point("mlp_out", layer, (position,)) for layer in missing]
        rows = pd.concat([rows, total_and_direct(engine, pairs, points, desc="MLP effects")], ignore_index=True)
    keys = ["effect", "term"] if "term" in rows else ["effect"]
    keys += [c for c in STRATA if c in rows]
    return rows.sort_values([*keys, "layer"], kind="stable").reset_index(drop=True)


def _topk(engine: PatchingEngine, pairs: Pairs, effects: pd.DataFrame, position) -> pd.DataFrame:
    """Fig. D8: the MLPs at ``position``, by their TE in ``effects``, patched together on
    ``pairs`` for every k."""
    mlps = [Point("mlp_out", layer, (position,)) for layer in range(engine.adapter.n_layers)]
    ordered = [mlps[i] for i in np.argsort(-mlp_te(effects), kind="stable")]
    return topk_sweep(engine, pairs, ordered, desc="top-k MLPs")


SWEEP = "sweep"  # the selection table's column: te (every MLP's TE) or topk (the sweep in that order)


def selection_sweep(engine: PatchingEngine, select: Pairs, position) -> pd.DataFrame:
    """The MLPs' choices on the selection draw's ranked pairs ``select`` at ``position``: every MLP's TE
    (``sweep`` te) and the top-k sweep in the order of those TEs (``sweep`` topk), one raw table
    (pair columns: the selection draw's).  The measuring pairs' top-k sweep follows this order,
    and the table job reads the circuit from this sweep (:func:`.tables.mlp_summary`)."""
    mlps = [Point("mlp_out", layer, (position,)) for layer in range(engine.adapter.n_layers)]
    te = total_effects(engine, select, mlps, desc="MLP TE (selection draw)")
    topk = _topk(engine, select, te, position)
    return pd.concat([te.assign(**{SWEEP: "te"}), topk.assign(**{SWEEP: "topk"})], ignore_index=True)


def _choice(table: pd.DataFrame) -> pd.DataFrame:
    """The TE rows of a selection table, as :func:`mlp_te` reads them."""
    return table[table[SWEEP] == "te"].drop(columns=[SWEEP, "k", "added"], errors="ignore")


def no_selection() -> pd.DataFrame:
    """The selection table of a job that chose on its measuring pairs (``compat: authors``)."""
    return pd.DataFrame(columns=[SWEEP])


def mlp_patching(
    engine: PatchingEngine,
    pairs: Pairs,
    sample: pd.DataFrame,
    template: str,
    layer_effects: pd.DataFrame,
    periods: Sequence[int] = PERIODS,
    n_components: int = 100,
    select: SelectionDraw | None = None,
) -> dict[str, pd.DataFrame]:
    """Rule mlp_patching's entry point, at each reading of the model's token layout (column
    ``reading``): raw tables ``effects`` (TE and DE of every MLP, :func:`mlp_effects`), ``topk``
    (the top k MLPs by TE, patched together, for every k, and all of them), ``fits`` (each MLP's
    output replaced by its helix(a+b) fit, with the fit's R²) and ``selection``
    (:func:`selection_sweep` on ``select``, whose TE orders the top-k sweep; empty without a
    selection draw), and ``pairs`` (both draws).  The helix(a+b) fits are fitted to the MLP
    outputs of the correct prompts of ``sample`` (teacher-forced with their answers where they
    take several tokens), at the last token and, for answers of several tokens, per answer
    position (:func:`~helixclock.causal.experiments.answer_position_fits`; ``r2_helix_sum`` there the
    mean over them), where the first differing token's reading patches each pair's p* fit
    (:func:`first_difference_mlps`)."""
    readings = engine.model.tokens.readings
    basis = Basis("helix", tuple(periods), variables=(SUM,))
    roles = [r for r in readings if r in ROLE_READINGS]
    H, ab, k = mlp_outputs(engine, sample, template, roles)
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    device = pairs.clean.device
    last_fits = fit_token(H["last"], sum_values(ab[:, 0], ab[:, 1]), [basis], n_components, dedupe=False)
    fitted = {"last": (last_fits.predict(basis, clean).to(device)[:, :, None], to_numpy(last_fits.r2[0]))}
    if "answer" in readings:
        pred_answer, r2_answer = _answer_fits(pairs, H["answer"], ab, k, basis, n_components)
        # role "answer" is as wide as the most answer tokens of all correct prompts (answer_width)
        fitted["answer"] = (widen(pred_answer, answer_width(pairs)), r2_answer.mean(0))
    out: dict[str, list[pd.DataFrame]] = {"effects": [], "topk": [], "fits": [], "selection": []}
    for position in roles:
        reading = READINGS[position]
        effects = mlp_effects(engine, pairs, layer_effects, position)
        pred, r2 = fitted[position]
        mlps = [Point("mlp_out", layer, (position,)) for layer in range(engine.adapter.n_layers)]
        chosen = selection_sweep(engine, select.pairs, position) if select is not None else no_selection()
        tables = {
            "effects": effects,
            "topk": _topk(engine, pairs, _choice(chosen) if select is not None else effects, position),
            "fits": _fit_table(engine, pairs, mlps, pred, r2, f"MLP fits ({reading})"),
            "selection": chosen,
        }
        for name, table in tables.items():
            out[name].append(table.assign(reading=reading)[["reading", *table.columns]])
    if "differ" in readings:
        for name, table in first_difference_mlps(engine, pairs, layer_effects, pred_answer, r2_answer).items():
            out[name].append(table.assign(reading=READINGS["differ"])[["reading", *table.columns]])
    tables = {name: pd.concat(parts, ignore_index=True) for name, parts in out.items()}
    return {**tables, "pairs": job_pairs(pairs, select)}


def _fit_table(engine: PatchingEngine, pairs: Pairs, mlps, pred: Tensor, r2: np.ndarray, desc: str) -> pd.DataFrame:
    """Each MLP's output replaced by its fit ``pred`` [L, n_pairs, positions, d] at its
    positions: the raw LD table with the fit's R² per MLP."""
    ld = engine.run(pairs, [[Patch(p, pred[i])] for i, p in enumerate(mlps)], desc=desc)
    return ld_table(ld, pairs, [{"layer": p.layer, "r2_helix_sum": float(r2[i])} for i, p in enumerate(mlps)])


def mlp_outputs(
    engine: PatchingEngine, sample: pd.DataFrame, template: str, roles: Sequence[str] = ROLE_READINGS
) -> tuple[dict[str, Float[Tensor, "layer row ..."]], np.ndarray, np.ndarray]:
    """Every MLP's output on the prompts of ``sample`` (correct a+b prompts), teacher-forced with
    their own answers, at each of ``roles``: at the last prompt token [L, n, d], at every position
    that predicts an answer token [L, n, K, d]; with the rows' (a, b) and answer token counts."""
    ids, groups, order, k = forced_rows(engine.model, sample, template)
    layers = range(engine.adapter.n_layers)
    points = {role: [Point("mlp_out", layer, (role,)) for layer in layers] for role in roles}
    every = [p for role in roles for p in points[role]]
    values, _ = engine.collect(ids, every, logits=False, desc="MLP outputs", groups=groups)
    ab = sample[["a", "b"]].to_numpy()[order]
    H = {role: (stack_points if role == "last" else _stack)(values, points[role]).float() for role in roles}
    return H, ab, k


def _stack(values: dict, points) -> Tensor:
    return torch.stack([values[p] for p in points])


def _answer_fits(
    pairs: Pairs, H_answer: Tensor, ab: np.ndarray, k: np.ndarray, basis: Basis, n_components: int
) -> tuple[Tensor, np.ndarray]:
    """The helix(a+b) fits of every answer position (:func:`~helixclock.causal.experiments.answer_position_fits`)
    at the pairs' clean a+b, [L, n_pairs, K, d] (a pair's positions past its answer padded), and
    each position's R², [K, L]."""
    K = int(pairs.answer_tokens().max())  # the most answer tokens of a pair: the positions fitted
    if H_answer.shape[2] < K:
        raise ValueError(
            f"the fitted prompts' answers have at most {H_answer.shape[2]} tokens and the pairs' {K}: no fit for "
            "the pairs' last answer positions (config key clock.fit_prompts: a larger sample)"
        )
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    answer_fits = answer_position_fits(H_answer[:, :, :K], ab, k, [basis], n_components)
    pred = torch.stack([f.predict(basis, clean).to(pairs.clean.device) for f in answer_fits], 2)
    pad_answer_positions(pred, pairs.answer_tokens())
    return pred, np.stack([to_numpy(f.r2[0]) for f in answer_fits])


def first_difference_mlps(
    engine: PatchingEngine, pairs: Pairs, layer_effects: pd.DataFrame, pred_answer: Tensor, r2_answer: np.ndarray
) -> dict[str, pd.DataFrame]:
    """The reading at the first differing token (:mod:`helixclock.causal.first_difference`): every
    MLP's TE and DE (:func:`mlp_effects`) and its helix(a+b) fit of the answer position p* patched
    in (``pred_answer`` [L, n_pairs, positions, d], the pairs' predictions at every answer
    position; ``r2_answer`` [positions, L], each position's R²: a stratum's rows carry its p*'s),
    on the pairs cut after p*, raw tables by stratum in the pairs' order."""
    differ = first_difference_pairs(pairs)
    effects = mlp_effects(engine, pairs, layer_effects, "differ", differ)
    at = torch.as_tensor(differ.at, device=pred_answer.device)
    rows = torch.as_tensor(differ.order, device=pred_answer.device)
    pred = pred_answer[:, rows, at][:, :, None]  # [L, n_pairs, 1, d]: each cut pair's fit at its p*
    mlps = [Point("mlp_out", layer, ("last",)) for layer in range(engine.adapter.n_layers)]
    fits = differ.table(_fit_table(engine, differ.pairs, mlps, pred, np.full(len(mlps), np.nan), "MLP fits (p*)"))
    fits["r2_helix_sum"] = r2_answer[fits["p_star"].to_numpy(int), fits["layer"].to_numpy(int)]
    return {"effects": effects, "fits": fits}

"""The MLP stage's tables (pandas only): the top-k curve, the circuit MLPs' stages and every
MLP's TE and DE with intervals (by reading for answers of several tokens)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...stats.lengths import by_length, pair_lengths
from ...stats.statistics import Resampling, pair_values, primary, summarise, te_de_table, topk_table
from ...stats.strata import reading_rows, strata_masks, strata_summary, strata_table, with_matched

MIN_TE = 0.05  # Fig. 7 keeps circuit MLPs whose TE is at least this share of the largest (the authors' TE > 0.05)


def circuit(topk: pd.DataFrame, te: pd.Series) -> list[int]:
    """Fig. 7's circuit MLPs from a top-k curve (:func:`topk_table`) and each MLP's mean TE
    (``te``, by layer): the curve's smallest k reaching its threshold, those of them whose TE is
    at least MIN_TE of the largest, in layer order."""
    k = int(topk["smallest_k"].iloc[0])
    chosen = sorted(int(name[3:]) for name in topk.loc[(topk["k"] >= 1) & (topk["k"] <= k), "added"])
    return [layer for layer in chosen if te.loc[layer] >= MIN_TE * te.max()]


def selection_choice(raw_selection: pd.DataFrame, threshold: float, resampling: Resampling):
    """The circuit's curve and TEs read on the selection draw (the mlp_patching job's
    ``selection`` table of one reading, :func:`.patching.selection_sweep`): (top-k table, mean TE
    by layer); None where the job chose on its measuring pairs (an empty table)."""
    if not len(raw_selection):
        return None
    sweep = raw_selection["sweep"]
    topk = topk_table(primary(raw_selection[sweep == "topk"].drop(columns="sweep")), threshold, resampling)
    te = primary(raw_selection[sweep == "te"].drop(columns="sweep"))
    means = pd.Series(pair_values(te).mean(1), index=te["layer"].astype(int).to_numpy())
    return topk, means


def _stages(
    topk: pd.DataFrame, raw_fits: pd.DataFrame, effects: pd.DataFrame, resampling: Resampling, chosen=None
) -> pd.DataFrame:
    """Fig. 7's table of one reading: the circuit MLPs (:func:`circuit`, of the selection draw's
    curve and TEs ``chosen`` where the job has one, else of ``topk`` and ``effects``, the
    paper's) with TE, DE and their helix(a+b) fit measured on the measuring pairs; ``split``
    says which."""
    mlp = effects[effects["component"] == "MLP"].set_index("layer")
    layers = circuit(topk, mlp["te"]) if chosen is None else circuit(*chosen)
    fits = summarise(primary(raw_fits), resampling).set_index("layer")
    stages = pd.DataFrame(
        {
            "layer": layers,
            "te": [mlp.loc[layer, "te"] for layer in layers],
            "de": [mlp.loc[layer, "de"] for layer in layers],
            "helix_sum": [fits.loc[layer, "ld_mean"] for layer in layers],
            "r2_helix_sum": [fits.loc[layer, "r2_helix_sum"] for layer in layers],
            "n_pairs": [int(fits.loc[layer, "n_pairs"]) for layer in layers],
        }
    )
    te = stages["te"].astype(np.float64)  # the ratios in float64, of the means as the tables hold them
    stages["helix_sum_over_te"] = stages["helix_sum"].astype(np.float64) / te
    stages["de_over_te"] = stages["de"].astype(np.float64) / te
    if chosen is not None:  # the paper's tables keep their columns (compat: authors)
        stages["split"] = "separate draw"
    if "te_matched" in mlp:  # answers of several tokens: DE/TE of the tokens DE scores
        stages["te_matched"] = [mlp.loc[layer, "te_matched"] for layer in layers]
        stages["de_over_te_matched"] = stages["de"].astype(np.float64) / stages["te_matched"].astype(np.float64)
    return stages


def mlp_summary(
    raw_topk: pd.DataFrame,
    raw_fits: pd.DataFrame,
    raw_effects: pd.DataFrame,
    threshold: float,
    resampling: Resampling,
    raw_selection: pd.DataFrame | None = None,
    pairs: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """mlp_topk (Fig. D8: the top-k curve, the smallest k reaching ``threshold``: the circuit
    MLPs), mlp_stages (Fig. 7: helix(a+b)/TE and DE/TE of the circuit MLPs whose TE is at
    least MIN_TE of the largest, by layer) and mlp_effects (TE and DE of every MLP with
    intervals).  Each table has a part per reading of the top-k curve (the last token and, for
    answers of several tokens, the answer positions), in their order, of LD itself (for those the
    log-likelihood ratio), mlp_effects with the TE of the terms DE scores (``te_matched``).
    Where the job chose on a selection draw (``raw_selection`` not empty) the
    circuit is that draw's (:func:`selection_choice`; mlp_topk's ``selection_smallest_k``),
    measured on the measuring pairs; else the measuring pairs' curve chooses it, the paper's.
    mlp_by_length: every MLP's TE and DE by answer token count (``pairs``: the job's pairs table;
    :func:`helixclock.stats.lengths.by_length`); mlp_strata: every MLP by stratum (answer tokens, p*,
    :func:`strata_effects`)."""
    readings = list(dict.fromkeys(raw_topk["reading"]))
    out: dict[str, list[pd.DataFrame]] = {"mlp_topk": [], "mlp_stages": [], "mlp_effects": [], "mlp_by_length": []}
    for reading in readings:

        def part(raw: pd.DataFrame, reading=reading) -> pd.DataFrame:
            return reading_rows(raw, reading)

        topk = topk_table(primary(part(raw_topk)), threshold, resampling)
        effects = with_matched(te_de_table(part(raw_effects), resampling), part(raw_effects), reading, resampling)
        selected = raw_selection if raw_selection is not None and len(raw_selection) else None
        chosen = selection_choice(part(selected), threshold, resampling) if selected is not None else None
        if chosen is not None:
            topk["selection_smallest_k"] = int(chosen[0]["smallest_k"].iloc[0])
        tables = {
            "mlp_topk": topk,
            "mlp_stages": _stages(topk, part(raw_fits), effects, resampling, chosen),
            "mlp_effects": effects,
            "mlp_by_length": by_length(
                part(raw_effects), pair_lengths(part(raw_effects), pairs), lambda t: te_de_table(t, resampling)
            ),
        }
        for name, table in tables.items():
            out[name].append(table.assign(reading=reading)[["reading", *table.columns]])
    tables = {name: pd.concat(parts, ignore_index=True) for name, parts in out.items()}
    tables["mlp_strata"] = strata_effects(raw_effects, raw_fits, resampling)
    return tables


def strata_effects(raw_effects: pd.DataFrame, raw_fits: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Every MLP's TE, DE and DE/TE by stratum (answer tokens, p*) at each reading: at the last
    token and the answer positions of the terms DE scores, at the first differing token of the one
    token p* predicts (:func:`helixclock.stats.statistics.strata_table`), with its helix(a+b) fit's LD
    of the same terms (``helix_sum``) and ``helix_sum_over_te``.  One-token answers: one stratum,
    the paper's TE and DE."""
    table = strata_table(raw_effects, resampling)
    if not len(table):
        return table
    table = table.drop(columns=[c for c in ("component", "head") if c in table])
    fits = strata_summary(raw_fits.drop(columns="r2_helix_sum"), strata_masks(raw_effects), resampling)
    keys = ["reading", "answer_tokens", "p_star", "layer"]
    table = table.merge(fits[keys + ["ld_mean"]].rename(columns={"ld_mean": "helix_sum"}), on=keys, how="left")
    table["helix_sum_over_te"] = table["helix_sum"].astype(float) / table["te"].astype(float)
    return table

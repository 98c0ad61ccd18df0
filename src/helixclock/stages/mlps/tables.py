"""The MLP stage's tables (pandas only): the top-k curve, the circuit MLPs' stages and every
MLP's TE and DE with intervals (by reading for answers of several tokens)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...statistics import Resampling, primary, summarise, te_de_table, topk_table
from ...strata import reading_rows, strata_masks, strata_summary, strata_table, with_matched

MIN_TE = 0.05  # Fig. 7 keeps circuit MLPs whose TE is at least this share of the largest (the authors' TE > 0.05)


def _stages(topk: pd.DataFrame, raw_fits: pd.DataFrame, effects: pd.DataFrame, resampling: Resampling):
    """Fig. 7's table of one reading: the circuit MLPs (the top-k curve's smallest k reaching its
    threshold, whose TE is at least MIN_TE of the largest) with TE, DE and their helix(a+b) fit
    (answers of several tokens: also the TE of the terms DE scores, ``te_matched``, and
    ``de_over_te_matched``)."""
    k = int(topk["smallest_k"].iloc[0])
    circuit = sorted(int(name[3:]) for name in topk.loc[(topk["k"] >= 1) & (topk["k"] <= k), "added"])
    mlp = effects[effects["component"] == "MLP"].set_index("layer")
    circuit = [layer for layer in circuit if mlp.loc[layer, "te"] >= MIN_TE * mlp["te"].max()]
    fits = summarise(primary(raw_fits), resampling).set_index("layer")
    stages = pd.DataFrame(
        {
            "layer": circuit,
            "te": [mlp.loc[layer, "te"] for layer in circuit],
            "de": [mlp.loc[layer, "de"] for layer in circuit],
            "helix_sum": [fits.loc[layer, "ld_mean"] for layer in circuit],
            "r2_helix_sum": [fits.loc[layer, "r2_helix_sum"] for layer in circuit],
            "n_pairs": [int(fits.loc[layer, "n_pairs"]) for layer in circuit],
        }
    )
    te = stages["te"].astype(np.float64)  # the ratios in float64, of the means as the tables hold them
    stages["helix_sum_over_te"] = stages["helix_sum"].astype(np.float64) / te
    stages["de_over_te"] = stages["de"].astype(np.float64) / te
    if "te_matched" in mlp:  # answers of several tokens: DE/TE of the tokens DE scores
        stages["te_matched"] = [mlp.loc[layer, "te_matched"] for layer in circuit]
        stages["de_over_te_matched"] = stages["de"].astype(np.float64) / stages["te_matched"].astype(np.float64)
    return stages


def mlp_summary(
    raw_topk: pd.DataFrame,
    raw_fits: pd.DataFrame,
    raw_effects: pd.DataFrame,
    threshold: float,
    resampling: Resampling,
) -> dict[str, pd.DataFrame]:
    """mlp_topk (Fig. D8: the top-k curve, the smallest k reaching ``threshold``: the circuit
    MLPs), mlp_stages (Fig. 7: helix(a+b)/TE and DE/TE of the circuit MLPs whose TE is at
    least MIN_TE of the largest, by layer) and mlp_effects (TE and DE of every MLP with
    intervals).  Raw tables with a ``reading`` (answers of several tokens) give each table a
    part per reading of the top-k curve (the last token, the answer positions), in their order,
    of LD itself (the log-likelihood ratio), mlp_effects with the TE of the terms DE scores
    (``te_matched``); and mlp_strata, every MLP by stratum (:func:`strata_effects`)."""
    readings = list(dict.fromkeys(raw_topk["reading"])) if "reading" in raw_topk else [None]
    out: dict[str, list[pd.DataFrame]] = {"mlp_topk": [], "mlp_stages": [], "mlp_effects": []}
    for reading in readings:

        def part(raw: pd.DataFrame, reading=reading) -> pd.DataFrame:
            return reading_rows(raw, reading)

        topk = topk_table(primary(part(raw_topk)), threshold, resampling)
        effects = with_matched(te_de_table(part(raw_effects), resampling), part(raw_effects), reading, resampling)
        tables = {
            "mlp_topk": topk,
            "mlp_stages": _stages(topk, part(raw_fits), effects, resampling),
            "mlp_effects": effects,
        }
        for name, table in tables.items():
            out[name].append(table if reading is None else table.assign(reading=reading)[["reading", *table.columns]])
    tables = {name: pd.concat(parts, ignore_index=True) for name, parts in out.items()}
    tables["mlp_strata"] = strata_effects(raw_effects, raw_fits, resampling)
    return tables


def strata_effects(raw_effects: pd.DataFrame, raw_fits: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Every MLP's TE, DE and DE/TE by stratum (answer tokens, p*) at each reading: at the last
    token and the answer positions of the terms DE scores, at the first differing token of the one
    token p* predicts (:func:`helixclock.statistics.strata_table`), with its helix(a+b) fit's LD
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

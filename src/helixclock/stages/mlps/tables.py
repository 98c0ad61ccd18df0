"""The MLP stage's tables (pandas only): the top-k curve and the circuit MLPs' stages."""

from __future__ import annotations

import pandas as pd

from ...statistics import Resampling, summarise, topk_table

MIN_TE = 0.05  # Fig. 7 keeps circuit MLPs whose TE is at least this share of the largest (the authors' TE > 0.05)


def mlp_summary(
    raw_topk: pd.DataFrame,
    raw_fits: pd.DataFrame,
    layer_effects: pd.DataFrame,
    threshold: float,
    resampling: Resampling,
) -> dict[str, pd.DataFrame]:
    """mlp_topk (Fig. D8: the top-k curve, the smallest k reaching ``threshold``: the circuit
    MLPs) and mlp_stages (Fig. 7: helix(a+b)/TE and DE/TE of the circuit MLPs whose TE is at
    least MIN_TE of the largest, by layer)."""
    topk = topk_table(raw_topk, threshold, resampling)
    k = int(topk["smallest_k"].iloc[0])
    circuit = sorted(int(name[3:]) for name in topk.loc[(topk["k"] >= 1) & (topk["k"] <= k), "added"])
    te = layer_effects[layer_effects["component"] == "MLP"].set_index("layer")["te"]
    circuit = [layer for layer in circuit if te.loc[layer] >= MIN_TE * te.max()]
    fits = summarise(raw_fits, resampling).set_index("layer")
    mlp = layer_effects[layer_effects["component"] == "MLP"].set_index("layer")
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
    stages["helix_sum_over_te"] = stages["helix_sum"] / stages["te"]
    stages["de_over_te"] = stages["de"] / stages["te"]
    return {"mlp_topk": topk, "mlp_stages": stages}

"""The MLP stage's tables (pandas only): the top-k curve and the circuit MLPs' stages."""

from __future__ import annotations

import pandas as pd

from ...statistics import Resampling, fraction_table, smallest_k, summarise


def mlp_summary(raw_topk: pd.DataFrame, raw_fits: pd.DataFrame, layer_effects: pd.DataFrame,
                threshold: float, resampling: Resampling) -> dict[str, pd.DataFrame]:
    """mlp_topk (Fig. D8: fraction of the all-MLP effect vs k, the smallest k reaching
    ``threshold``) and mlp_stages (Fig. 7: helix(a+b)/TE and DE/TE of the circuit MLPs, the
    first k of the top-k order, by layer)."""
    topk = fraction_table(raw_topk, "k", resampling)
    k = smallest_k(topk, threshold)
    topk["threshold"], topk["smallest_k"] = threshold, k
    circuit = sorted(int(name[3:]) for name in topk.loc[topk["k"] <= k, "added"])
    fits = summarise(raw_fits, resampling).set_index("layer")
    mlp = layer_effects[layer_effects["component"] == "MLP"].set_index("layer")
    stages = pd.DataFrame({
        "layer": circuit,
        "te": [mlp.loc[layer, "te"] for layer in circuit],
        "de": [mlp.loc[layer, "de"] for layer in circuit],
        "helix_sum": [fits.loc[layer, "ld_mean"] for layer in circuit],
        "r2_helix_sum": [fits.loc[layer, "r2_helix_sum"] for layer in circuit],
    })
    stages["helix_sum_over_te"] = stages["helix_sum"] / stages["te"]
    stages["de_over_te"] = stages["de"] / stages["te"]
    return {"mlp_topk": topk, "mlp_stages": stages}

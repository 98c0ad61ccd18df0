"""MLPs (paper sections 5.1 and 5.3, appendix D.2).

Per layer at the last token: TE and DE of the attention and MLP outputs (Fig. 6).  MLPs
sorted by TE are patched together until 95% of the all-MLP effect is restored (the
*circuit MLPs*, Fig. D8).  For each circuit MLP, helix(a+b)/TE - how much of its effect
its output's helix(a+b) fit keeps - and DE/TE separate MLPs that build the a+b helix from
those that read it out to the logits (Fig. 7).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import torch

from .clock import SUM, component_points, smallest_k, sum_values, topk_curve, total_and_direct
from .helix import PERIODS, Basis
from .helix_patching import fit_token, summarise
from .patching import Pairs, Patch, PatchingEngine, Point


def mlp_stage(engine: PatchingEngine, pairs: Pairs, fit_ids: torch.Tensor, fit_a: np.ndarray, fit_b: np.ndarray,
              last: int, threshold: float = 0.95, periods: Sequence[int] = PERIODS, n_components: int = 100,
              n_boot: int = 1000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Layer effects (Fig. 6), top-k MLPs (Fig. D8) and the circuit MLPs' stages (Fig. 7)."""
    ad = engine.adapter
    points = component_points(ad, last)
    effects, te, de = total_and_direct(engine, pairs, points, n_boot, seed, desc="layer effects")

    mlps = [p for p in points if p.kind == "mlp_out"]
    mlp_te = effects[effects["component"] == "MLP"]["te"].to_numpy()
    order = np.argsort(-mlp_te, kind="stable")
    ordered = [mlps[i] for i in order]
    topk = topk_curve(engine, pairs, ordered, n_boot=n_boot, seed=seed, desc="top-k MLPs")
    k = smallest_k(topk, threshold)
    topk["threshold"], topk["smallest_k"] = threshold, k
    topk["added"] = [f"MLP{p.layer}" for p in ordered]
    circuit = sorted(ordered[:k], key=lambda p: p.layer)

    basis = Basis("helix", tuple(periods), variables=(SUM,))
    values, _ = engine.collect(fit_ids, circuit, logits=False, desc="MLP outputs")
    H = torch.stack([values[p][:, 0] for p in circuit]).float()  # [k, n, d]
    fits = fit_token(H, sum_values(fit_a, fit_b), [basis], n_components, dedupe=False)
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    pred = fits.predict(basis, clean)  # [k, n, d]
    ld = engine.run(pairs, [[Patch(p, pred[i][:, None])] for i, p in enumerate(circuit)], desc="MLP fits").metric
    fit_df = summarise(ld, [{"layer": p.layer} for p in circuit], n_boot, seed)
    mlp_effects = effects[effects["component"] == "MLP"].set_index("layer")
    stages = pd.DataFrame({
        "layer": [p.layer for p in circuit],
        "te": [mlp_effects.loc[p.layer, "te"] for p in circuit],
        "de": [mlp_effects.loc[p.layer, "de"] for p in circuit],
        "helix_sum": fit_df["ld_mean"].to_numpy(),
        "r2_helix_sum": fits.r2[0].cpu().numpy(),
    })
    stages["helix_sum_over_te"] = stages["helix_sum"] / stages["te"]
    stages["de_over_te"] = stages["de"] / stages["te"]
    return {"layer_effects": effects, "mlp_topk": topk, "mlp_stages": stages}

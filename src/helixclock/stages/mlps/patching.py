"""MLPs at the last token (section 5.3): the model job.

MLPs sorted by TE (from the last-token stage's layer effects) are patched together for
every k (Fig. D8); every MLP's output is fitted with helix(a+b) and the fit patched in, so
that helix(a+b)/TE can be read for whichever MLPs the table job calls the circuit (Fig. 7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ...bases import PERIODS, SUM, Basis, sum_values
from ...experiments import stack_points, topk_sweep
from ...fits import fit_token
from ...io import to_numpy
from ...patching import Pairs, Patch, PatchingEngine, Point
from ...statistics import pair_values, raw_table


def mlp_te(layer_effects: pd.DataFrame) -> np.ndarray:
    """Each MLP's mean TE at the last token, [n_layers] in layer order, from Fig. 6's raw table."""
    mlp = layer_effects[(layer_effects["component"] == "MLP") & (layer_effects["effect"] == "te")]
    return pair_values(mlp.sort_values("layer")).mean(1)


def mlp_patching(
    engine: PatchingEngine,
    pairs: Pairs,
    fit_ids: torch.Tensor,
    fit_a: np.ndarray,
    fit_b: np.ndarray,
    last: int,
    layer_effects: pd.DataFrame,
    periods: Sequence[int] = PERIODS,
    n_components: int = 100,
) -> dict[str, pd.DataFrame]:
    """Rule mlp_patching, raw tables: ``topk`` (the top k MLPs by their TE in Fig. 6's raw
    ``layer_effects``, patched together, for every k, and all of them) and ``fits`` (each MLP's
    output replaced by its helix(a+b) fit, with the fit's R²)."""
    mlps = [Point("mlp_out", layer, (last,)) for layer in range(engine.adapter.n_layers)]
    ordered = [mlps[i] for i in np.argsort(-mlp_te(layer_effects), kind="stable")]
    topk = topk_sweep(engine, pairs, ordered, desc="top-k MLPs")

    basis = Basis("helix", tuple(periods), variables=(SUM,))
    values, _ = engine.collect(fit_ids, mlps, logits=False, desc="MLP outputs")
    fits = fit_token(stack_points(values, mlps).float(), sum_values(fit_a, fit_b), [basis], n_components, dedupe=False)
    pred = fits.predict(basis, sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"]))  # [L, n, d]
    ld = engine.run(pairs, [[Patch(p, pred[i][:, None])] for i, p in enumerate(mlps)], desc="MLP fits").metric
    r2 = to_numpy(fits.r2[0])
    fit_raw = raw_table(ld, [{"layer": p.layer, "r2_helix_sum": float(r2[i])} for i, p in enumerate(mlps)])
    return {"topk": topk, "fits": fit_raw}

"""Last-token fits and layer effects (section 5.1): the model jobs' raw tables.

To compute a+b the model must build helix(a+b) on the last token.  Its last-token residual
is fitted with helix(a, b, a+b) (27 parameters with T = [2, 5, 10, 100]), helix(a+b) and
helix(a, b), compared with a parameter-matched PCA and the layer patch (Fig. 5).  Per layer,
the total effect (TE, activation patching) and direct effect (DE, path patching to the
logits) of each attention and MLP output say where the computation happens (Fig. 6).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from ...bases import PERIODS, FitSettings, clock_bases, sum_values
from ...experiments import component_points, patch_sweep, total_and_direct
from ...fits import fit_token
from ...patching import Pairs, PatchingEngine

PCA_BASELINES = (9, 27)  # the authors' parameter-matched PCAs: helix(a+b) and helix(a,b,a+b)


def last_token_curves(
    engine: PatchingEngine, pairs: Pairs, cache, periods: Sequence[int] = PERIODS, n_components: int = 500
) -> pd.DataFrame:
    """Fig. 5: fits of the last-token residual (solved in ``n_components`` PCA dimensions, the
    authors' 500) patched at every layer, beside PCA baselines of 9 and 27 dimensions; raw
    table with a ``fit`` label per curve and ``block_output``, the paper's layer number (the
    residual after block l is resid_pre[l + 1]; -1 is the embedding)."""
    L = int(cache.attrs["n_layers"])
    last = "last" if cache.attrs.get("number_tokens") == "several" else int(cache.attrs["position_last"])
    bases = clock_bases(periods)
    H = torch.from_numpy(cache.last).transpose(0, 1).to(pairs.clean.device)  # [L+1, n, d]
    fits = fit_token(H, sum_values(cache.ab[:, 0], cache.ab[:, 1]), bases, n_components, dedupe=False)
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    pca_ns = sorted({min(n, fits.pca.components.shape[1]) for n in PCA_BASELINES})
    df = patch_sweep(
        engine, pairs, fits, list(range(L + 1)), last, clean, bases, pca_ks=(), pca_ns=pca_ns, desc="last-token fits"
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


def layer_effects(engine: PatchingEngine, pairs: Pairs) -> pd.DataFrame:
    """Fig. 6: TE and DE of every attention and MLP output at the last token (raw table); the
    last prompt token of each pair's layout where the pairs have several ("last")."""
    last = pairs.corrupted.shape[1] - 1 if len(pairs.groups) == 1 and pairs.groups[0].layout.answer == 1 else "last"
    return total_and_direct(engine, pairs, component_points(engine.adapter, last), desc="layer effects")


def last_token_patching(engine: PatchingEngine, pairs: Pairs, cache, fit: FitSettings) -> dict[str, pd.DataFrame]:
    """Rule last_token_patching: Fig. 5's last-token fits (in ``fit.pca_components`` PCA
    dimensions) and Fig. 6's layer effects, raw tables."""
    return {
        "fits": last_token_curves(engine, pairs, cache, fit.periods, fit.pca_components),
        "layer_effects": layer_effects(engine, pairs),
    }

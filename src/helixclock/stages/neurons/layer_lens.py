"""Every neuron's digit logit lens, layer by layer: the population of Fig. F4's base rate for
answers of several tokens (App. F; :mod:`helixclock.stages.mistakes.lens_null`).  Computed the
same way as the top units' lens (:func:`.places.digit_lens`), in chunks of neurons."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...patching import PatchingEngine
from .places import digit_lens

CHUNK = 256  # neurons a pass: the logits over the whole vocabulary are [CHUNK, vocabulary]


def layer_digit_lens(engine: PatchingEngine, token_ids: Sequence[int], chunk_size: int = CHUNK) -> np.ndarray:
    """The digit lens of every neuron of every layer [n_layers, d_mlp, len(token_ids)] (float32):
    :func:`.places.digit_lens` of each (layer, neuron)."""
    ad = engine.adapter
    out = np.empty((ad.n_layers, ad.d_mlp, len(token_ids)), dtype=np.float32)
    for layer in range(ad.n_layers):
        for start in range(0, ad.d_mlp, chunk_size):
            neurons = np.arange(start, min(start + chunk_size, ad.d_mlp))
            out[layer, neurons] = digit_lens(engine, pd.DataFrame({"layer": layer, "neuron": neurons}), token_ids)
    return out

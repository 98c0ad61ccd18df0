"""Every neuron's digit logit lens (Fig. F4's base rate, App. F; docs/several-tokens.md "Numbers of several
tokens"): computed the same way as a top unit's, chunk by chunk, for a Llama and a Gemma-3 (whose
post-MLP norm the lens passes the column through)."""

import numpy as np
import pandas as pd
import pytest
from helpers.digit_models import digit_model

from helixclock.patching import PatchingEngine
from helixclock.stages.neurons.places import digit_lens, layer_digit_lens, lens_tokens


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_every_neurons_lens_is_the_top_units_lens(family):
    engine = PatchingEngine(digit_model(family, layers=2, seed=4))
    _, ids = lens_tokens(engine.model.tokenizer, ".")
    every = layer_digit_lens(engine, ids, chunk_size=7)  # chunks that do not divide d_mlp
    ad = engine.adapter
    assert every.shape == (ad.n_layers, ad.d_mlp, 11) and np.isfinite(every).all()
    top = pd.DataFrame({"layer": [1, 0, 1], "neuron": [ad.d_mlp - 1, 3, 0]})
    assert np.allclose(every[top["layer"], top["neuron"]], digit_lens(engine, top, ids), atol=1e-6)
    assert np.allclose(layer_digit_lens(engine, ids), every, atol=1e-6)  # one chunk a layer

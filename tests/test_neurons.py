"""The neuron stage's model side on tiny models: ablation limits, direct effects, grids."""

import numpy as np
import pandas as pd
import torch
from helpers.families import tiny_hf_model
from helpers.hooks import capture, replace_io
from helpers.prompts import GPTJ_PROMPTS, make_pairs

from helixclock.models import wrap_model
from helixclock.pairs import same_prompt_pairs
from helixclock.patching import PatchingEngine, Point
from helixclock.stages.neurons.patching import (
    ablation_sweep,
    attribution_scores,
    keep_masks,
    mean_activations,
    n_top,
    neuron_direct_effects,
    neuron_grids,
    powers_of_two,
)
from helixclock.statistics import pair_values

LAST = 8
TEMPLATE = GPTJ_PROMPTS["add"]


def prompt_rows(tok, pairs):
    return pd.DataFrame({"a": [a for a, _ in pairs], "b": [b for _, b in pairs],
                         "answer": [a + b for a, b in pairs],
                         "answer_token": [tok.convert_tokens_to_ids(str(a + b)) for a, b in pairs]})


ROWS = [(3, 4), (12, 57), (99, 0), (41, 41), (7, 80), (60, 39), (25, 25), (8, 9)]


def test_ablating_nothing_is_the_clean_run_and_everything_the_mean_ablated_one(tiny_model):
    tok, ad, hf = tiny_model.tokenizer, tiny_model.adapter, tiny_model.hf
    engine = PatchingEngine(tiny_model, progress=False)
    prompts = same_prompt_pairs(tok, prompt_rows(tok, ROWS), TEMPLATE)
    means = mean_activations(engine, prompts.clean, LAST)
    order = attribution_scores(engine, make_pairs(tiny_model), LAST)
    total = int(means.numel())
    raw = ablation_sweep(engine, prompts, order, means, [0, 3, total], LAST)
    correct = pair_values(raw[raw["measure"] == "correct"])
    ld = pair_values(raw[raw["measure"] == "ld"])
    with torch.no_grad():
        logits = hf(prompts.clean).logits[:, -1]
    clean_correct = (logits.argmax(-1) == prompts.clean_answer).numpy()
    np.testing.assert_array_equal(correct[2], clean_correct)  # all kept: the model itself
    np.testing.assert_allclose(ld[2], 0, atol=1e-5)
    # none kept: every layer's last-token neurons replaced by their means, with plain hooks
    handles = []
    for layer in range(ad.n_layers):
        def put(x, layer=layer):
            y = x.clone()
            y[:, LAST] = means[layer]
            return y
        handles.append(replace_io(hf.get_submodule(ad.site("neuron_post", layer).path), "input", put))
    try:
        with torch.no_grad():
            ablated = hf(prompts.clean).logits[:, -1]
    finally:
        for h in handles:
            h.remove()
    answer = prompts.clean_answer[:, None]
    np.testing.assert_allclose(ld[0], (logits.gather(1, answer) - ablated.gather(1, answer))[:, 0].numpy(),
                               atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(correct[0], (ablated.argmax(-1) == prompts.clean_answer).numpy())
    assert np.abs(ld[0]).max() > 1e-3  # ablating everything changes the answer's logit
    # three kept: exactly the top three of the attribution order keep their values
    keep = keep_masks(order, 3, tuple(means.shape), means.device)
    assert keep.sum() == 3 and all(keep[int(r.layer), int(r.neuron)] for r in order.iloc[:3].itertuples())


def test_neuron_direct_effects_of_a_layer_add_up_to_the_mlp(tokenizer):
    """Every neuron's write is its post-activation times its column of W_out: the writes of all
    neurons of the last layer sum to the MLP's write, and with an identity final norm (the
    logit then linear in the residual) their DEs sum to the MLP's DE."""
    hf = tiny_hf_model("gptj", len(tokenizer), seed=5)
    hf.transformer.ln_f = torch.nn.Identity()
    model = wrap_model(hf, tokenizer, name="linear-readout")
    pairs = make_pairs(model)
    engine = PatchingEngine(model, progress=False)
    last = model.adapter.n_layers - 1
    m = model.adapter.d_mlp
    top = pd.DataFrame({"rank": np.arange(m), "layer": last, "neuron": np.arange(m)})
    de = pair_values(neuron_direct_effects(engine, pairs, top, LAST))  # [m, n]
    mlp = Point("mlp_out", last, (LAST,))
    writes = sum(engine.delta(pairs, Point("neuron_post", last, (LAST,), index=n)) for n in range(m))
    torch.testing.assert_close(writes, engine.delta(pairs, mlp), atol=1e-5, rtol=1e-4)
    mlp_de = engine.direct_effects(pairs, [mlp])[0].numpy()
    assert np.abs(mlp_de).max() > 1e-4
    np.testing.assert_allclose(de.sum(0), mlp_de, atol=1e-5, rtol=1e-4)


def test_grids_are_the_neurons_preactivations(tiny_model):
    tok, ad, hf = tiny_model.tokenizer, tiny_model.adapter, tiny_model.hf
    engine = PatchingEngine(tiny_model, batch_size=3, progress=False)
    rows = prompt_rows(tok, ROWS)
    ids = same_prompt_pairs(tok, rows, TEMPLATE).clean
    top = pd.DataFrame({"rank": [0, 1, 2], "layer": [1, 0, 1], "neuron": [5, 7, 0]})
    out = neuron_grids(engine, ids, top, LAST)
    for i, r in enumerate(top.itertuples()):
        pre_site, post_site = ad.site("neuron_pre", r.layer), ad.site("neuron_post", r.layer)
        pre = capture(hf, pre_site.path, pre_site.io, ids)[:, LAST, r.neuron]
        post = capture(hf, post_site.path, post_site.io, ids)[:, LAST, r.neuron]
        np.testing.assert_allclose(out["pre"][i], pre.numpy(), atol=1e-5, rtol=1e-5)
        assert np.isclose(out["post_max"][i], post.max().item(), atol=1e-5) and out["post_argmax"][i] == post.argmax().item()


def test_top_share_and_sweep_points():
    assert n_top(458752, 0.01) == 4587  # GPT-J: 28 layers x 16,384 neurons
    assert n_top(1024, 0.001) == 1
    assert powers_of_two(20) == [1, 2, 4, 8, 16, 20] and powers_of_two(16) == [1, 2, 4, 8, 16]


def test_fit_evaluation_with_exact_fits_equals_the_actual_run(tiny_gptj):
    """Give the top neurons their true preactivations as "fits": the fitted variant then
    equals the actual one for every k (the nonlinearity of the model recomputes the same
    post-activations)."""
    from helixclock.stages.neurons.patching import fit_evaluation

    tok = tiny_gptj.tokenizer
    engine = PatchingEngine(tiny_gptj, progress=False)
    prompts = same_prompt_pairs(tok, prompt_rows(tok, ROWS), TEMPLATE)
    means = mean_activations(engine, prompts.clean, LAST)
    top = pd.DataFrame({"layer": [1, 0, 1, 0], "neuron": [3, 5, 11, 2]})
    pre = neuron_grids(engine, prompts.clean, top.assign(rank=range(4)), LAST)["pre"]  # [n_top, n]
    raw = fit_evaluation(engine, prompts, top, torch.tensor(pre.T), means, [1, 2, 4], LAST)
    for measure in ("correct", "ld"):
        part = raw[raw["measure"] == measure]
        values = pair_values(part)
        actual, fitted = values[part["preactivation"] == "actual"], values[part["preactivation"] == "fitted"]
        np.testing.assert_allclose(actual, fitted, atol=1e-5)
    # a wrong fit moves the answer's logit
    raw_bad = fit_evaluation(engine, prompts, top, torch.tensor(pre.T) + 5.0, means, [4], LAST)
    ld = pair_values(raw_bad[raw_bad["measure"] == "ld"])
    assert np.abs(ld[1] - ld[0]).max() > 1e-3

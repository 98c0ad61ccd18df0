"""Attribution patching (the engine's gradient path): known answers on tiny models."""

import pytest
import torch
from helpers.families import tiny_hf_model
from helpers.hooks import replace_io
from helpers.prompts import LAST, make_pairs

from helixclock.lm.models import wrap_model
from helixclock.patching import Patch, PatchingEngine, Point, attribute


def neuron_points(adapter):
    return [Point("neuron_post", layer, (LAST,)) for layer in range(adapter.n_layers)]


def reference_attribution(model, pairs):
    """Plain PyTorch: hooks keep every layer's MLP-output-projection input, autograd gives the
    gradient of the clean answer's logit in the corrupted run; times (clean - corrupted)."""
    hf, ad = model.hf, model.adapter

    def run(ids, grad):
        kept = []
        handles = [
            replace_io(hf.get_submodule(ad.site("neuron_post", l).path), "input", lambda x: kept.append(x) or x)
            for l in range(ad.n_layers)
        ]
        try:
            with torch.enable_grad():
                embeds = hf.get_input_embeddings()(ids).detach().requires_grad_(grad)
                logits = hf(inputs_embeds=embeds).logits[:, -1]
                if not grad:
                    return [k[:, LAST].detach() for k in kept], None
                metric = logits.gather(1, pairs.clean_answer[:, None]).sum()
                grads = torch.autograd.grad(metric, kept)
            return [k[:, LAST].detach() for k in kept], [g[:, LAST] for g in grads]
        finally:
            for h in handles:
                h.remove()

    clean, _ = run(pairs.clean, False)
    corrupted, grads = run(pairs.corrupted, True)
    return [g * (c - x) for g, c, x in zip(grads, clean, corrupted)]  # per layer [n, d_mlp]


def test_attribution_agrees_with_plain_autograd(tiny_model):
    pairs = make_pairs(tiny_model)
    engine = PatchingEngine(tiny_model, batch_size=3, progress=False)  # batches straddle pairs
    points = neuron_points(tiny_model.adapter)
    got = attribute(engine, pairs, points, reduce="none")
    expected = reference_attribution(tiny_model, pairs)
    assert expected[-1].abs().max() > 1e-4  # something to compare
    for p, ref in zip(points, expected):
        assert got[p].shape == (len(pairs), 1, tiny_model.adapter.d_mlp)
        torch.testing.assert_close(got[p][:, 0], ref, atol=1e-5, rtol=1e-4)
    # a parallel block's layer-0 MLP reads the last token's embedding alone: same value in the
    # clean and corrupted prompt, attribution 0; a sequential one reads attention's output too
    assert (expected[0].abs().max() == 0) == tiny_model.adapter.parallel
    mean = attribute(engine, pairs, points)
    for p in points:
        torch.testing.assert_close(mean[p], got[p].mean(0), atol=1e-6, rtol=1e-5)


def test_batch_size_does_not_change_attribution(tiny_gptj):
    pairs = make_pairs(tiny_gptj)
    points = neuron_points(tiny_gptj.adapter)
    a = attribute(PatchingEngine(tiny_gptj, batch_size=1000, progress=False), pairs, points)
    b = attribute(PatchingEngine(tiny_gptj, batch_size=2, progress=False), pairs, points)
    for p in points:
        torch.testing.assert_close(a[p], b[p], atol=1e-6, rtol=1e-5)


def test_attribution_is_exact_where_the_metric_is_linear_in_the_neuron(tokenizer):
    """With an identity final norm, the clean answer's logit is linear in every last-layer
    neuron at the last token (GPT-J's attention reads the block input, not the MLP), so each
    neuron's attribution equals the exact effect of patching that neuron alone, and their
    sum the effect of patching the whole layer."""
    hf = tiny_hf_model("gptj", len(tokenizer), seed=3)
    norm, hf.transformer.ln_f = hf.transformer.ln_f, torch.nn.Identity()
    with torch.no_grad():  # random weights write little: make the last MLP and the readout count
        hf.transformer.h[-1].mlp.fc_out.weight.mul_(20)
        hf.lm_head.weight.mul_(5)
    model = wrap_model(hf, tokenizer, name="linear-readout")
    pairs = make_pairs(model)
    engine = PatchingEngine(model, progress=False)
    last = model.adapter.n_layers - 1
    scores = attribute(engine, pairs, [Point("neuron_post", last, (LAST,))], reduce="none")
    scores = scores[Point("neuron_post", last, (LAST,))][:, 0]  # [n, d_mlp]
    neurons = torch.topk(scores.abs().mean(0), 6).indices.tolist() + [0, 1]
    variants = [[Patch(Point("neuron_post", last, (LAST,), index=n))] for n in neurons]
    variants.append([Patch(Point("neuron_post", last, (LAST,)))])  # every neuron of the layer
    ld = engine.run(pairs, variants).metric
    assert scores.abs().max() > 1e-3
    torch.testing.assert_close(ld[:-1].T, scores[:, neurons], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(ld[-1], scores.sum(1), atol=1e-4, rtol=1e-4)
    # with the real final norm the logit is not linear in the neuron: the first-order score is
    # then an approximation of the patching effect, not equal to it
    hf.transformer.ln_f = norm
    model = wrap_model(hf, tokenizer, name="normed-readout")
    engine = PatchingEngine(model, progress=False)
    point = Point("neuron_post", last, (LAST,))
    approx = attribute(engine, pairs, [point], reduce="none")[point][:, 0].sum(1)
    exact = engine.run(pairs, [[Patch(point)]]).metric[0]
    assert (approx - exact).abs().max() > 1e-3


def test_indexed_points_are_refused(tiny_gptj):
    pairs = make_pairs(tiny_gptj)
    with pytest.raises(ValueError, match="without an index"):
        attribute(PatchingEngine(tiny_gptj), pairs, [Point("neuron_post", 0, (LAST,), index=3)])

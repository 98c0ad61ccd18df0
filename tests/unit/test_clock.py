"""Clock-level patching: direct effects, path patching, heads; known answers on tiny models."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.hooks import capture, logit_difference, replace_io
from helpers.prompts import LAST, make_pairs

from helixclock.patching import Patch, PatchingEngine, Point, delta, direct_effects, path_patch
from helixclock.patching.paths import receiver_input
from helixclock.stages.heads.tables import categorise, with_mixed


def test_last_layer_mlp_direct_effect_equals_total_effect(tiny_model):
    pairs = make_pairs(tiny_model)
    engine = PatchingEngine(tiny_model)
    p = Point("mlp_out", tiny_model.adapter.n_layers - 1, (LAST,))
    te = engine.run(pairs, [[Patch(p)]]).metric[0]
    de = direct_effects(engine, pairs, [p])[0]
    assert te.abs().max() > 1e-3
    torch.testing.assert_close(de, te, atol=1e-4, rtol=1e-4)


def _downstream_of(ad, p):
    """Every component output at the last token that could carry p's write onwards."""
    out = []
    for l in range(p.layer, ad.n_layers):
        for kind in ("attn_out", "mlp_out"):
            if l == p.layer and (kind == "attn_out" or ad.parallel or p.kind == "mlp_out"):
                continue
            out.append(Point(kind, l, (LAST,)))
    return out


def test_path_patching_to_the_logits_is_the_frozen_downstream_effect(tiny_model):
    """DE by the definition: the sender's clean output, every downstream component frozen
    at its corrupted value, equals the engine's direct path to the logits."""
    pairs = make_pairs(tiny_model)
    engine = PatchingEngine(tiny_model)
    ad = tiny_model.adapter
    senders = [Point("attn_out", 0, (LAST,)), Point("mlp_out", 0, (LAST,)), Point("head_out", 0, (LAST,), index=2)]
    variants = []
    for s in senders:
        frozen = _downstream_of(ad, s)
        corr = engine.corrupted_values(pairs, frozen)
        variants.append([Patch(s)] + [Patch(q, corr[q]) for q in frozen])
    defined = engine.run(pairs, variants).metric
    paths = path_patch(engine, pairs, [(s, "logits") for s in senders])
    torch.testing.assert_close(paths, defined, atol=1e-4, rtol=1e-4)
    te = engine.run(pairs, [[Patch(s)] for s in senders]).metric
    assert (te - defined).abs().max() > 0.02 * te.abs().max()  # indirect effects exist: DE is not TE


def test_two_pass_path_patching_matches_hooks(tiny_model):
    """sender -> receiver with plain hooks: add the sender's delta to the receiver's input,
    read the receiver's output, then patch it into the corrupted run."""
    pairs = make_pairs(tiny_model)
    engine = PatchingEngine(tiny_model)
    hf, ad = tiny_model.hf, tiny_model.adapter
    sender = Point("head_out", 0, (LAST,), index=1)
    receivers = [Point("mlp_out", 1, (LAST,)), Point("head_out", 1, (LAST,), index=3)]
    got = path_patch(engine, pairs, [(sender, r) for r in receivers])

    site = ad.site("head_out", 0)
    W = ad.head_weights(hf, 0)[1]
    sl = slice(ad.d_head, 2 * ad.d_head)
    delta = (
        capture(hf, site.path, site.io, pairs.clean)[:, LAST, sl]
        - capture(hf, site.path, site.io, pairs.corrupted)[:, LAST, sl]
    ) @ W
    base = hf(pairs.corrupted).logits[:, -1].detach()
    for i, r in enumerate(receivers):
        in_site = ad.site(receiver_input(engine, r).kind, r.layer)
        out_site = ad.site(r.kind, r.layer)
        take = (lambda y: y[:, LAST, 3 * ad.d_head : 4 * ad.d_head]) if r.kind == "head_out" else (lambda y: y[:, LAST])

        def add(x):
            y = x.clone()
            y[:, LAST] += delta
            return y

        handle = replace_io(hf.get_submodule(in_site.path), in_site.io, add)
        try:
            received = take(capture(hf, out_site.path, out_site.io, pairs.corrupted))
        finally:
            handle.remove()

        def put(x, r=r, received=received):
            y = x.clone()
            if r.kind == "head_out":
                y[:, LAST, 3 * ad.d_head : 4 * ad.d_head] = received
            else:
                y[:, LAST] = received
            return y

        handle = replace_io(hf.get_submodule(out_site.path), out_site.io, put)
        try:
            with torch.no_grad():
                logits = hf(pairs.corrupted).logits[:, -1]
        finally:
            handle.remove()
        torch.testing.assert_close(got[i], logit_difference(logits, base, pairs.clean_answer), atol=1e-4, rtol=1e-4)


def test_a_receiver_must_be_downstream(tiny_gptj):
    engine = PatchingEngine(tiny_gptj)
    pairs = make_pairs(tiny_gptj)
    with pytest.raises(ValueError, match="not downstream"):
        path_patch(engine, pairs, [(Point("mlp_out", 1, (LAST,)), Point("head_out", 0, (LAST,), index=0))])
    with pytest.raises(ValueError, match="not downstream"):  # parallel block: the MLP does not read its attention
        path_patch(engine, pairs, [(Point("head_out", 1, (LAST,), index=0), Point("mlp_out", 1, (LAST,)))])


def test_all_heads_of_a_layer_equal_its_attention_output(tiny_model):
    pairs = make_pairs(tiny_model)
    engine = PatchingEngine(tiny_model)
    ad = tiny_model.adapter
    variants = []
    for l in range(ad.n_layers):
        variants.append([Patch(Point("head_out", l, (LAST,), index=h)) for h in range(ad.n_heads)])
        variants.append([Patch(Point("attn_out", l, (LAST,)))])
    ld = engine.run(pairs, variants).metric
    for l in range(ad.n_layers):
        torch.testing.assert_close(ld[2 * l], ld[2 * l + 1], atol=1e-4, rtol=1e-4)
    de_heads = direct_effects(engine, pairs, [Point("head_out", 0, (LAST,), index=h) for h in range(ad.n_heads)])
    de_attn = direct_effects(engine, pairs, [Point("attn_out", 0, (LAST,))])
    # the direct path is linear in the written vectors only up to the final norm: compare the writes
    writes = sum(delta(engine, pairs, Point("head_out", 0, (LAST,), index=h)) for h in range(ad.n_heads))
    torch.testing.assert_close(writes, delta(engine, pairs, Point("attn_out", 0, (LAST,))), atol=1e-5, rtol=1e-4)
    assert de_heads.shape == (ad.n_heads, len(pairs)) and de_attn.shape == (1, len(pairs))


def test_head_categories_follow_the_papers_formulas_unclipped():
    heads = pd.DataFrame(
        {
            "name": ["ab", "sum", "weak_ab", "weak_sum"],
            "layer": [3, 20, 10, 18],
            "head": [0, 1, 2, 3],
            "te": [2.0, 1.0, 1.0, 2.0],
            "de": [0.2, 0.9, 0.5, 1.2],
            "fit_all": [1.0, 1.0, 1.0, 1.0],
            "fit_ab": [0.9, 0.1, 0.5, 0.4],
            "fit_sum": [0.1, 0.8, 0.2, 0.5],
        }
    )
    cats = categorise(heads)
    by = cats.set_index("name")
    # c_ab = (1 - DE/TE) helix(a,b)/helix(a,b,a+b);  c_a+b = DE/TE helix(a+b)/helix(a,b,a+b)
    assert by.loc["ab", "c_ab"] == pytest.approx(0.9 * 0.9)
    assert by.loc["ab", "c_a+b"] == pytest.approx(0.1 * 0.1)
    assert by.loc["sum", "c_a+b"] == pytest.approx(0.9 * 0.8)
    assert by.loc["weak_ab", "c_ab"] == pytest.approx(0.25) and by.loc["weak_ab", "c_a+b"] == pytest.approx(0.1)
    assert by.loc["weak_sum", "c_a+b"] == pytest.approx(0.3) and by.loc["weak_sum", "c_ab"] == pytest.approx(0.16)
    assert list(cats["name"]) == ["ab", "sum", "weak_sum", "weak_ab"]  # by c = max(c_ab, c_a+b)
    assert list(cats["category"]) == ["a,b", "a+b", "a+b", "a,b"]
    assert list(with_mixed(cats, 0)) == ["a,b", "a+b", "a+b", "a,b"]
    assert list(with_mixed(cats, 2)) == ["a,b", "a+b", "mixed", "mixed"]
    # ratios outside [0, 1] stay as the paper's formulas give them (no clipping), so the category
    # is the sign of g = DE helix(a+b) - (TE - DE) helix(a,b), what the findings test
    odd = categorise(heads.assign(de=[2.5, 0.9, -0.1, 1.2], fit_sum=[0.1, 1.6, 0.2, 0.5]))
    by = odd.set_index("name")
    assert by.loc["ab", "c_ab"] == pytest.approx((1 - 1.25) * 0.9) and by.loc["ab", "c_a+b"] == pytest.approx(0.125)
    assert by.loc["sum", "c_a+b"] == pytest.approx(0.9 * 1.6) and by.loc["weak_ab", "c_ab"] == pytest.approx(1.1 * 0.5)
    g = odd["de"] * odd["fit_sum"] - (odd["te"] - odd["de"]) * odd["fit_ab"]
    assert list(odd["category"]) == list(np.where(g > 0, "a+b", "a,b"))

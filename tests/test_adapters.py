"""Adapters on tiny random-weight GPT-J, GPT-NeoX and Llama models."""

import pytest
import torch
from conftest import add_prompt_ids, tiny_hf_model

from helixclock.models import HOOK_KINDS, UnsupportedFamilyError, make_adapter
from helixclock.patching import PatchingEngine, Point

PAIRS = [(3, 4), (12, 57), (99, 0), (41, 41), (7, 80)]
POS = (5, 6, 7, 8)  # a, "+", b, "="


def all_points(adapter):
    pts = [Point("resid_pre", l, POS) for l in range(adapter.n_layers + 1)]
    for l in range(adapter.n_layers):
        kinds = ["head_out", "attn_out", "neuron_pre", "neuron_post", "mlp_out"]
        if adapter.gated:
            kinds.append("neuron_up")
        if not adapter.parallel:
            kinds.append("resid_mid")
        pts += [Point(k, l, POS) for k in kinds]
    return pts


def test_every_hook_point_has_its_shape(tiny_model):
    ad = tiny_model.adapter
    pts = all_points(ad)
    values, logits = PatchingEngine(tiny_model).collect(add_prompt_ids(tiny_model.tokenizer, PAIRS), pts)
    n, p = len(PAIRS), len(POS)
    expected = {"resid_pre": (n, p, ad.d_model), "attn_out": (n, p, ad.d_model), "mlp_out": (n, p, ad.d_model),
                "resid_mid": (n, p, ad.d_model), "head_out": (n, p, ad.n_heads, ad.d_head),
                "neuron_pre": (n, p, ad.d_mlp), "neuron_up": (n, p, ad.d_mlp), "neuron_post": (n, p, ad.d_mlp)}
    for pt in pts:
        assert tuple(values[pt].shape) == expected[pt.kind], pt
    assert tuple(logits.shape) == (n, ad.vocab_size)
    assert set(expected) | {"logits"} == set(HOOK_KINDS)


def test_block_identity_and_final_logits(tiny_model):
    """resid_pre[l+1] = resid_pre[l] + attn_out[l] + mlp_out[l]; logits match a plain forward."""
    ad = tiny_model.adapter
    ids = add_prompt_ids(tiny_model.tokenizer, PAIRS)
    pts = all_points(ad)
    values, logits = PatchingEngine(tiny_model).collect(ids, pts)
    for l in range(ad.n_layers):
        lhs = values[Point("resid_pre", l + 1, POS)]
        rhs = values[Point("resid_pre", l, POS)] + values[Point("attn_out", l, POS)] + values[Point("mlp_out", l, POS)]
        torch.testing.assert_close(lhs, rhs, atol=1e-5, rtol=1e-5)
        if not ad.parallel:
            torch.testing.assert_close(values[Point("resid_mid", l, POS)],
                                       values[Point("resid_pre", l, POS)] + values[Point("attn_out", l, POS)],
                                       atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        ref = tiny_model.hf(ids).logits[:, -1]
        hidden = tiny_model.hf(ids, output_hidden_states=True).hidden_states
    torch.testing.assert_close(logits, ref, atol=1e-5, rtol=1e-5)
    # resid_pre[l] is the input of block l, as transformers' hidden_states[l] (l < n_layers)
    for l in range(ad.n_layers):
        torch.testing.assert_close(values[Point("resid_pre", l, POS)], hidden[l][:, list(POS)], atol=1e-5, rtol=1e-5)


def test_heads_through_output_projection_sum_to_attn_out(tiny_model):
    ad = tiny_model.adapter
    ids = add_prompt_ids(tiny_model.tokenizer, PAIRS)
    pts = [Point(k, l, POS) for l in range(ad.n_layers) for k in ("head_out", "attn_out")]
    values, _ = PatchingEngine(tiny_model).collect(ids, pts, logits=False)
    for l in range(ad.n_layers):
        W = ad.head_weights(tiny_model.hf, l)  # [H, dh, d]
        per_head = torch.einsum("bphk,hkd->bphd", values[Point("head_out", l, POS)], W)
        total = per_head.sum(2)
        bias = ad.attn_bias(tiny_model.hf, l)
        if bias is not None:
            total = total + bias
        torch.testing.assert_close(total, values[Point("attn_out", l, POS)], atol=1e-5, rtol=1e-5)
        # every head contributes something: the split is not degenerate
        assert (per_head.abs().amax(dim=(0, 1, 3)) > 0).all()


def test_llama_grouped_query_attention_gives_one_output_per_query_head(tokenizer):
    from helixclock.models import wrap_model

    hf = tiny_hf_model("llama", len(tokenizer), heads=4)
    assert hf.config.num_key_value_heads == 2
    model = wrap_model(hf, tokenizer)
    v, _ = PatchingEngine(model).collect(add_prompt_ids(tokenizer, PAIRS), [Point("head_out", 0, POS)], logits=False)
    assert v[Point("head_out", 0, POS)].shape[2] == 4
    assert model.adapter.n_kv_heads == 2 and model.adapter.gated and not model.adapter.parallel


def test_unsupported_family_names_the_supported_ones(tokenizer):
    from transformers import GPT2Config, GPT2LMHeadModel

    hf = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=2))
    with pytest.raises(UnsupportedFamilyError, match="gptj, neox, llama"):
        make_adapter(hf)


def test_registry_family_must_match(tokenizer):
    hf = tiny_hf_model("gptj", len(tokenizer))
    with pytest.raises(UnsupportedFamilyError, match="registry says family 'llama'"):
        make_adapter(hf, "llama")


def test_hook_point_out_of_range(tiny_gptj):
    ad = tiny_gptj.adapter
    assert ad.site("resid_pre", ad.n_layers).path.endswith("ln_f")
    with pytest.raises(IndexError, match="out of range"):
        ad.site("mlp_out", ad.n_layers)
    with pytest.raises(KeyError, match="no resid_mid"):
        ad.site("resid_mid", 0)

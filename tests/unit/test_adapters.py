"""Adapters on tiny random-weight models of every supported family (tests/helpers/families.py)."""

import subprocess
import sys
import types

import pytest
import torch
import yaml
from helpers.families import ALL, DIGIT_SPLITTING, GEMMA2_SOFTCAP, tiny_hf_model
from helpers.hooks import capture, patched_logits
from helpers.paths import REPO
from helpers.prompts import GPTJ_PROMPTS, LAST, add_prompt_ids, digit_splitting_tokenizer, make_pairs

from helixclock.lm import adapters, families
from helixclock.lm.adapters import HOOK_KINDS, make_adapter
from helixclock.lm.families import UnsupportedFamilyError
from helixclock.lm.models import wrap_model
from helixclock.patching import Patch, PatchingEngine, Point, delta, direct_effects
from helixclock.prompts.tasks import TASKS, TokenisationError, check_task_tokens

PAIRS = [(3, 4), (12, 57), (99, 0), (41, 41), (7, 80)]
POS = (5, 6, 7, 8)  # a, "+", b, "="
POST_NORMED = ("olmo2", "gemma2", "gemma3")


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


# -- the table ------------------------------------------------------------------------------
def test_every_family_has_a_spec_a_schema_entry_and_a_tiny_model():
    from helixclock.lm import config

    assert tuple(adapters.FAMILIES) == ALL == config.FAMILIES
    schema = yaml.safe_load((REPO / "workflow/schemas/models.schema.yaml").read_text())
    assert tuple(schema["additionalProperties"]["properties"]["family"]["enum"]) == ALL
    assert set(families.MODEL_TYPES.values()) == set(ALL)
    assert families.MODEL_TYPES["gemma3_text"] == "gemma3" and families.MODEL_TYPES["gpt_neox"] == "neox"
    assert not hasattr(config, "MODEL_TYPES") and not hasattr(adapters, "MODEL_TYPES")  # one import home: families


def test_config_and_the_family_table_import_no_torch():
    code = "import sys, helixclock.lm.config, helixclock.lm.adapters; assert 'torch' not in sys.modules, 'torch'"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr


def test_a_spec_names_both_projections_of_a_gated_mlp():
    with pytest.raises(ValueError, match="family 'x': neuron_in \\('mlp.fc',\\) must name gate and up"):
        families.FamilySpec(
            "x",
            ("x",),
            "X",
            blocks="b",
            final_norm="n",
            unembed="u",
            attn_proj="a.o",
            mlp="mlp",
            neuron_in=("mlp.fc",),
            neuron_out="mlp.down",
            attn_norm="ln1",
            mlp_norm="ln2",
            parallel=False,
            gated=True,
        )


def test_the_model_class_is_the_one_the_table_names(family_model):
    spec = adapters.FAMILIES[family_model.adapter.family]
    assert type(family_model.hf).__name__ == spec.causal_lm
    assert family_model.hf.config.model_type in spec.model_types
    assert family_model.lm is not None and isinstance(family_model.hf, torch.nn.Module)


# -- hook points ----------------------------------------------------------------------------
def test_every_hook_point_has_its_shape(family_model):
    ad = family_model.adapter
    pts = all_points(ad)
    values, logits = PatchingEngine(family_model, progress=False).collect(
        add_prompt_ids(family_model.tokenizer, PAIRS), pts
    )
    n, p = len(PAIRS), len(POS)
    expected = {
        "resid_pre": (n, p, ad.d_model),
        "attn_out": (n, p, ad.d_model),
        "mlp_out": (n, p, ad.d_model),
        "resid_mid": (n, p, ad.d_model),
        "head_out": (n, p, ad.n_heads, ad.d_head),
        "neuron_pre": (n, p, ad.d_mlp),
        "neuron_up": (n, p, ad.d_mlp),
        "neuron_post": (n, p, ad.d_mlp),
    }
    for pt in pts:
        assert tuple(values[pt].shape) == expected[pt.kind], pt
    assert tuple(logits.shape) == (n, ad.vocab_size)
    assert set(expected) | {"logits"} == set(HOOK_KINDS)


def test_blocks_add_their_branches_and_the_final_residual_gives_the_logits(family_model):
    """resid_pre[l+1] = resid_pre[l] + attn_out[l] + mlp_out[l] (post-normed families: the
    norms' outputs are attn_out and mlp_out); logits (soft-capped where the family caps
    them) match a plain forward, and so do the logits of the final residual."""
    ad, hf = family_model.adapter, family_model.hf
    ids = add_prompt_ids(family_model.tokenizer, PAIRS)
    pts = all_points(ad)
    values, logits = PatchingEngine(family_model, progress=False).collect(ids, pts)
    for l in range(ad.n_layers):
        pre, attn, mlp = (values[Point(k, l, POS)] for k in ("resid_pre", "attn_out", "mlp_out"))
        torch.testing.assert_close(values[Point("resid_pre", l + 1, POS)], pre + attn + mlp, atol=1e-5, rtol=1e-5)
        if not ad.parallel:
            torch.testing.assert_close(values[Point("resid_mid", l, POS)], pre + attn, atol=1e-5, rtol=1e-5)
        assert attn.abs().amax() > 1e-4 and mlp.abs().amax() > 1e-4  # both branches write something
    with torch.no_grad():
        out = hf(ids, output_hidden_states=True)
        from_residual = ad.logits_from_final_residual(hf, values[Point("resid_pre", ad.n_layers, POS)][:, -1])
    ref = out.logits[:, -1]
    torch.testing.assert_close(logits, ref, atol=1e-5, rtol=1e-5)  # the model's output: after any soft-cap
    torch.testing.assert_close(from_residual, ref, atol=1e-5, rtol=1e-5)
    if ad.family == "gemma2":  # the cap really acts on these logits
        assert ad.final_softcap == GEMMA2_SOFTCAP
        assert (hf.get_submodule(ad.unembed)(out.hidden_states[-1][:, -1]) - ref).abs().max() > 1e-3
    # resid_pre[l] is the input of block l, as transformers' hidden_states[l] (l < n_layers)
    for l in range(ad.n_layers):
        torch.testing.assert_close(
            values[Point("resid_pre", l, POS)], out.hidden_states[l][:, list(POS)], atol=1e-5, rtol=1e-5
        )


def test_the_unembedding_reads_the_kept_positions_contiguously_and_gives_the_same_logits(family_model):
    """``logits_to_keep`` (greedy decoding; the answer positions of several-token numbers)
    slices the hidden states; the loaded model hands the unembedding a contiguous copy (a
    sliced input made ``linear`` multiply batch by batch: 4.5x slower for Gemma-3's
    vocabulary), and its logits are those of the full run at those positions."""
    hf = family_model.hf
    ids = add_prompt_ids(family_model.tokenizer, PAIRS)
    seen = []
    handle = hf.get_output_embeddings().register_forward_hook(lambda m, args, out: seen.append(args[0]))
    try:
        with torch.no_grad():
            full = hf(ids).logits
            kept = hf(ids, logits_to_keep=3).logits
    finally:
        handle.remove()
    assert [x.is_contiguous() for x in seen] == [True, True] and seen[1].shape[1] == 3
    torch.testing.assert_close(kept, full[:, -3:], atol=1e-5, rtol=1e-5)


def test_heads_through_output_projection_sum_to_its_output(family_model):
    """sum_h head_out[h] @ W_O[h] + bias is the output projection's output.  That output is
    attn_out, except in post-normed families (OLMo-2, Gemma-2/3), where attn_out is the
    post-attention norm of it: there the sum is compared with the projection's output read
    by a plain PyTorch hook, and attn_out with the norm applied to that output."""
    ad, hf = family_model.adapter, family_model.hf
    ids = add_prompt_ids(family_model.tokenizer, PAIRS)
    pts = [Point(k, l, POS) for l in range(ad.n_layers) for k in ("head_out", "attn_out")]
    values, _ = PatchingEngine(family_model, progress=False).collect(ids, pts, logits=False)
    assert (ad.attn_post_norm is not None) == (ad.family in POST_NORMED)
    for l in range(ad.n_layers):
        W = ad.head_weights(hf, l)  # [H, dh, d]
        per_head = torch.einsum("bphk,hkd->bphd", values[Point("head_out", l, POS)], W)
        total = per_head.sum(2)
        bias = ad.attn_bias(hf, l)
        if bias is not None:
            total = total + bias
        attn_out = values[Point("attn_out", l, POS)]
        if ad.attn_post_norm is None:
            torch.testing.assert_close(total, attn_out, atol=1e-5, rtol=1e-5)
        else:
            proj = capture(hf, f"{ad.block_path(l)}.{ad.attn_proj}", "output", ids)[:, list(POS)]
            torch.testing.assert_close(total, proj, atol=1e-5, rtol=1e-5)
            norm = hf.get_submodule(f"{ad.block_path(l)}.{ad.attn_post_norm}")
            torch.testing.assert_close(norm(proj), attn_out, atol=1e-5, rtol=1e-5)
            assert (proj - attn_out).abs().max() > 1e-3  # the norm does change it
        assert (per_head.abs().amax(dim=(0, 1, 3)) > 0).all()  # every head contributes


def test_last_layer_mlp_direct_effect_equals_total_effect(family_model):
    """The engine's direct path (final norm, unembedding) is the model's own, per family;
    and the adapter's logits of the patched final residual are the patched run's logits
    after the family's soft-cap."""
    ad, hf = family_model.adapter, family_model.hf
    pairs = make_pairs(family_model)
    engine = PatchingEngine(family_model, progress=False)
    p = Point("mlp_out", ad.n_layers - 1, (LAST,))
    te, de = engine.run(pairs, [[Patch(p)]]).metric[0], direct_effects(engine, pairs, [p])[0]
    assert te.abs().max() > 1e-3
    torch.testing.assert_close(de, te, atol=1e-5, rtol=1e-4)
    final = Point("resid_pre", ad.n_layers, (LAST,))
    residual = engine.corrupted_values(pairs, [final])[final][:, 0] + delta(engine, pairs, p)[:, -1]
    site = ad.site("mlp_out", ad.n_layers - 1)
    patched = patched_logits(hf, site.path, site.io, pairs.corrupted, LAST, engine.clean_values(pairs, [p])[p][:, 0])
    with torch.no_grad():
        torch.testing.assert_close(ad.logits_from_final_residual(hf, residual), patched, atol=1e-5, rtol=1e-5)


def test_llama_grouped_query_attention_gives_one_output_per_query_head(tokenizer):
    hf = tiny_hf_model("llama", len(tokenizer), heads=4)
    assert hf.config.num_key_value_heads == 2
    model = wrap_model(hf, tokenizer)
    v, _ = PatchingEngine(model, progress=False).collect(
        add_prompt_ids(tokenizer, PAIRS), [Point("head_out", 0, POS)], logits=False
    )
    assert v[Point("head_out", 0, POS)].shape[2] == 4
    assert model.adapter.n_kv_heads == 2 and model.adapter.gated and not model.adapter.parallel


def test_gemma_head_dim_is_read_from_the_config(tokenizer):
    """Gemma's heads are 16 wide on a 32-wide residual with 4 heads (H * dh != d)."""
    ad = make_adapter(tiny_hf_model("gemma2", len(tokenizer)))
    assert (ad.n_heads, ad.d_head, ad.d_model, ad.n_kv_heads) == (4, 16, 32, 2)
    assert ad.embed_scale == pytest.approx(32**0.5)


def test_attention_windows_are_read_from_the_config(tokenizer):
    V = len(tokenizer)
    windows = {f: make_adapter(tiny_hf_model(f, V)).sliding_window for f in ALL}
    assert windows == {**{f: None for f in ALL}, "mistral": 64, "gemma2": 32, "gemma3": 32, "gpt_neo": 4}
    # Qwen2 uses its window only when asked to; Gemma-3 with only global layers has none
    qwen = tiny_hf_model("qwen2", V, use_sliding_window=True, sliding_window=16, max_window_layers=1)
    assert make_adapter(qwen).sliding_window == 16
    assert make_adapter(tiny_hf_model("gemma3", V, layer_types=["full_attention"] * 2)).sliding_window is None


def test_neox_sequential_residual_follows_its_config(tokenizer):
    """use_parallel_residual=False makes a NeoX block sequential: resid_mid exists and the
    MLP reads resid_pre + attn_out."""
    model = wrap_model(tiny_hf_model("neox", len(tokenizer), use_parallel_residual=False), tokenizer)
    ad = model.adapter
    assert not ad.parallel
    pts = [Point(k, 0, POS) for k in ("resid_pre", "attn_out", "resid_mid")]
    v, _ = PatchingEngine(model, progress=False).collect(add_prompt_ids(tokenizer, PAIRS), pts, logits=False)
    torch.testing.assert_close(v[pts[2]], v[pts[0]] + v[pts[1]], atol=1e-5, rtol=1e-5)
    assert ad.site("resid_mid", 0).path == "gpt_neox.layers.0.post_attention_layernorm"


def test_post_normed_and_unnormed_families_read_their_own_modules(tokenizer):
    gemma = make_adapter(tiny_hf_model("gemma3", len(tokenizer)))
    assert gemma.site("attn_out", 1).path == "model.layers.1.post_attention_layernorm"
    assert gemma.site("mlp_out", 1).path == "model.layers.1.post_feedforward_layernorm"
    assert gemma.site("resid_mid", 1).path == "model.layers.1.pre_feedforward_layernorm"
    olmo2 = make_adapter(tiny_hf_model("olmo2", len(tokenizer)))
    assert olmo2.site("resid_mid", 0).path == "model.layers.0.mlp"  # no pre-norm: the MLP's own input
    gpt2 = make_adapter(tiny_hf_model("gpt2", len(tokenizer)))
    assert gpt2.site("head_out", 0).path == "transformer.h.0.attn.c_proj"


# -- errors -----------------------------------------------------------------------------------
def test_unsupported_family_names_the_supported_ones(tokenizer):
    from transformers import OPTConfig, OPTForCausalLM

    hf = OPTForCausalLM(
        OPTConfig(
            vocab_size=len(tokenizer),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            ffn_dim=32,
            word_embed_proj_dim=16,
        )
    )
    with pytest.raises(UnsupportedFamilyError) as err:
        make_adapter(hf)
    msg = str(err.value)
    assert "model type 'opt' is not supported" in msg
    assert (
        "supported families: gptj, neox, llama, gpt2, gpt_neo, olmo, olmo2, phi, qwen2, mistral, gemma2, "
        "gemma3 (model types gptj, gpt_neox, llama, gpt2, gpt_neo, olmo, olmo2, phi, qwen2, mistral, "
        "gemma2, gemma3_text)"
    ) in msg
    with pytest.raises(UnsupportedFamilyError, match="load the text-only Gemma3ForCausalLM"):
        families.detect_family(types.SimpleNamespace(model_type="gemma3"))


def test_registry_family_must_match(tokenizer):
    hf = tiny_hf_model("gptj", len(tokenizer))
    with pytest.raises(UnsupportedFamilyError, match="registry says family 'llama'"):
        make_adapter(hf, "llama")
    with pytest.raises(UnsupportedFamilyError, match="family 'bert' is not supported; supported families: gptj"):
        make_adapter(hf, "bert")


def test_a_config_that_disagrees_with_the_weights_is_refused(tokenizer):
    hf = tiny_hf_model("qwen2", len(tokenizer))
    hf.config.intermediate_size = 50
    with pytest.raises(
        UnsupportedFamilyError,
        match="model.layers.0.mlp.down_proj has weight shape \\(32, 48\\), expected \\(32, 50\\)",
    ):
        make_adapter(hf)


def test_hook_points_out_of_range_or_absent_are_refused(tiny_gptj, tokenizer):
    ad = tiny_gptj.adapter
    assert ad.site("resid_pre", ad.n_layers).path.endswith("ln_f")
    with pytest.raises(IndexError, match="out of range"):
        ad.site("mlp_out", ad.n_layers)
    with pytest.raises(KeyError, match="no resid_mid"):
        ad.site("resid_mid", 0)
    with pytest.raises(KeyError, match="gptj MLPs are not gated: there is no neuron_up"):
        ad.site("neuron_up", 0)
    with pytest.raises(KeyError, match="unknown hook point 'resid_post'; known: resid_pre"):
        ad.site("resid_post", 0)


def test_loaded_model_keeps_the_hugging_face_model(tokenizer):
    hf = tiny_hf_model("phi", len(tokenizer))
    model = wrap_model(hf, tokenizer)
    assert model.hf is hf
    assert all(not p.requires_grad for p in hf.parameters()) and not hf.training


# -- tokenisation and accuracy ------------------------------------------------------------------
@pytest.mark.parametrize("family_model", ["gpt2", "gpt_neo", "olmo", "olmo2", "phi"], indirect=True)
def test_word_level_families_run_the_accuracy_sweep(family_model):
    """With a tokenizer that keeps numbers whole, the sub23 sweep runs through the engine
    (prefix cache included) and its table agrees with plain forwards of every prompt."""
    from helixclock.stages.accuracy.sweep import task_accuracy

    task, template = TASKS["sub23"], GPTJ_PROMPTS["sub23"]
    found = check_task_tokens(family_model.tokenizer, family_model.name, task, template)
    assert found.positions.a == 5 and found.input_ids.shape == (77, found.positions.length)
    df, _ = task_accuracy(family_model, task, template, PatchingEngine(family_model, batch_size=32, progress=False))
    assert len(df) == 77 and (df["answer"] == df["a"] - 23).all()
    tok = family_model.tokenizer
    assert [tok.decode([t]).strip() for t in df["answer_token"]] == [str(a) for a in df["answer"]]
    with torch.no_grad():
        ref = family_model.hf(torch.from_numpy(found.input_ids)).logits[:, -1]
    answer = torch.tensor(df["answer_token"].to_numpy())
    torch.testing.assert_close(
        torch.tensor(df["answer_logit"].to_numpy()), ref.gather(1, answer[:, None])[:, 0], atol=1e-5, rtol=1e-5
    )
    assert (df["pred_token"].to_numpy() == ref.argmax(-1).numpy()).all()
    assert (df["rank"].to_numpy() == (ref > ref.gather(1, answer[:, None])).sum(-1).numpy()).all()


@pytest.mark.parametrize("family", DIGIT_SPLITTING)
def test_digit_splitting_families_load_but_their_numbers_are_refused(family):
    tok = digit_splitting_tokenizer()
    hf = tiny_hf_model(family, len(tok))
    model = wrap_model(hf, tok, name=f"digit-{family}")
    assert model.adapter.family == family and model.adapter.vocab_size == len(tok)
    ids = torch.tensor([tok("Output ONLY a number. 1 2+3 4=")["input_ids"]])
    _, logits = PatchingEngine(model, progress=False).collect(ids, [])
    with torch.no_grad():
        torch.testing.assert_close(logits, hf(ids).logits[:, -1], atol=1e-5, rtol=1e-5)
    with pytest.raises(TokenisationError) as err:
        check_task_tokens(tok, model.name, TASKS["add"], GPTJ_PROMPTS["add"])
    msg = str(err.value)
    assert f"digit-{family}" in msg and "number 10" in msg and "['1', '0']" in msg
    with pytest.raises(TokenisationError, match=r"number 23 \(operand a of task 'sub23'.*tokens \['2', '3'\]"):
        check_task_tokens(tok, model.name, TASKS["sub23"], "Output ONLY a number. {a}+23=")


@pytest.mark.parametrize("family", ALL)
def test_every_family_gets_its_model_card_or_a_clear_refusal(family, tokenizer, tmp_path):
    """The model_card job's function on a tiny saved model of each family, loaded from a local
    directory like a hub model: families whose tokenizers keep numbers whole get their card
    (shape, family, token positions); those that split numbers are refused with the number
    and its tokens."""
    from helixclock.lm.model_card import model_card

    tok = digit_splitting_tokenizer() if family in DIGIT_SPLITTING else tokenizer
    hf = tiny_hf_model(family, len(tok))
    hf.save_pretrained(tmp_path / family)
    tok.save_pretrained(tmp_path / family)
    spec = {
        "source": str(tmp_path / family),
        "family": family,
        "number_limit": 399,
        "prompts": {"add": GPTJ_PROMPTS["add"], "sub23": GPTJ_PROMPTS["sub23"]},
    }
    if family in DIGIT_SPLITTING:
        with pytest.raises(TokenisationError, match=r"number 10 .*\['1', '0'\]"):
            model_card(family, spec, ["add", "sub23"])
        return
    card = model_card(family, spec, ["add", "sub23"])
    assert card["family"] == family and card["n_layers"] == hf.config.num_hidden_layers
    assert card["positions"]["add"] == {"a": 5, "b": 7, "last": 8, "length": 9}

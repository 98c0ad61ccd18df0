"""Tiny random-weight models of every supported family, built from the real config classes.

Each builder gives a few layers of small width with at least two heads, grouped-query
attention where the family's attention supports it, no dropout, and the family's own
quirks switched on where a test can see them (GPT-Neo's local attention, Gemma's
head_dim != d_model / n_heads and Gemma-2's final logit soft-cap).  No network.
"""

from __future__ import annotations

import torch

# the families tokenised by the word-level toy tokenizer (numbers whole) and those whose
# real tokenizers split numbers into digits (tests use a digit-splitting tokenizer for them)
WORD_LEVEL = ("gptj", "neox", "llama", "gpt2", "gpt_neo", "olmo", "olmo2", "phi")
DIGIT_SPLITTING = ("qwen2", "mistral", "gemma2", "gemma3")
ALL = WORD_LEVEL + DIGIT_SPLITTING
GEMMA2_SOFTCAP = 2.0  # small, so that a missing soft-cap shows in every logit
# weights drawn 5x wider than transformers' default (0.02), so that logits reach the soft-cap
# and patching effects are far above float noise; GPT-J, NeoX and Llama keep the default the
# engine's tests were written against
INIT = 0.1


def _ids() -> dict:
    return dict(bos_token_id=2, eos_token_id=3, pad_token_id=0)


def _build(family: str, V: int, d: int, L: int, H: int):
    """(config class name, model class name, config kwargs) of one family."""
    kv = max(1, H // 2)
    common = dict(attention_dropout=0.0, initializer_range=INIT)
    if family == "gptj":
        return (
            "GPTJConfig",
            "GPTJForCausalLM",
            dict(
                vocab_size=V,
                n_positions=64,
                n_embd=d,
                n_layer=L,
                n_head=H,
                rotary_dim=4,
                n_inner=2 * d,
                resid_pdrop=0.0,
                embd_pdrop=0.0,
                attn_pdrop=0.0,
                bos_token_id=2,
                eos_token_id=3,
            ),
        )
    if family == "neox":
        return (
            "GPTNeoXConfig",
            "GPTNeoXForCausalLM",
            dict(
                vocab_size=V,
                hidden_size=d,
                num_hidden_layers=L,
                num_attention_heads=H,
                intermediate_size=3 * d,
                rotary_pct=0.25,
                max_position_embeddings=64,
                use_parallel_residual=True,
                bos_token_id=2,
                eos_token_id=3,
            ),
        )
    if family == "llama":
        return (
            "LlamaConfig",
            "LlamaForCausalLM",
            dict(
                vocab_size=V,
                hidden_size=d,
                intermediate_size=48,
                num_hidden_layers=L,
                num_attention_heads=H,
                num_key_value_heads=kv,
                max_position_embeddings=64,
                **_ids(),
            ),
        )
    if family == "gpt2":  # n_inner left None: the MLP is 4 * d wide
        return (
            "GPT2Config",
            "GPT2LMHeadModel",
            dict(
                vocab_size=V,
                n_positions=64,
                n_embd=d,
                n_layer=L,
                n_head=H,
                resid_pdrop=0.0,
                embd_pdrop=0.0,
                attn_pdrop=0.0,
                initializer_range=INIT,
                bos_token_id=2,
                eos_token_id=3,
            ),
        )
    if family == "gpt_neo":  # alternating global and local (window 4) attention
        return (
            "GPTNeoConfig",
            "GPTNeoForCausalLM",
            dict(
                vocab_size=V,
                max_position_embeddings=64,
                hidden_size=d,
                num_layers=L,
                num_heads=H,
                attention_types=[[["global", "local"], L // 2]],
                window_size=4,
                intermediate_size=3 * d,
                embed_dropout=0.0,
                resid_dropout=0.0,
                attention_dropout=0.0,
                initializer_range=INIT,
                bos_token_id=2,
                eos_token_id=3,
            ),
        )
    if family == "olmo":
        return (
            "OlmoConfig",
            "OlmoForCausalLM",
            dict(
                vocab_size=V,
                hidden_size=d,
                intermediate_size=48,
                num_hidden_layers=L,
                num_attention_heads=H,
                num_key_value_heads=kv,
                max_position_embeddings=64,
                clip_qkv=8.0,
                **common,
                **_ids(),
            ),
        )
    if family == "olmo2":
        return (
            "Olmo2Config",
            "Olmo2ForCausalLM",
            dict(
                vocab_size=V,
                hidden_size=d,
                intermediate_size=48,
                num_hidden_layers=L,
                num_attention_heads=H,
                num_key_value_heads=kv,
                max_position_embeddings=64,
                **common,
                **_ids(),
            ),
        )
    if family == "phi":
        return (
            "PhiConfig",
            "PhiForCausalLM",
            dict(
                vocab_size=V,
                hidden_size=d,
                intermediate_size=2 * d,
                num_hidden_layers=L,
                num_attention_heads=H,
                num_key_value_heads=kv,
                partial_rotary_factor=0.5,
                max_position_embeddings=64,
                resid_pdrop=0.0,
                embd_pdrop=0.0,
                **common,
                bos_token_id=2,
                eos_token_id=3,
            ),
        )
    if family == "qwen2":
        return (
            "Qwen2Config",
            "Qwen2ForCausalLM",
            dict(
                vocab_size=V,
                hidden_size=d,
                intermediate_size=48,
                num_hidden_layers=L,
                num_attention_heads=H,
                num_key_value_heads=kv,
                max_position_embeddings=64,
                **common,
                **_ids(),
            ),
        )
    if family == "mistral":
        return (
            "MistralConfig",
            "MistralForCausalLM",
            dict(
                vocab_size=V,
                hidden_size=d,
                intermediate_size=48,
                num_hidden_layers=L,
                num_attention_heads=H,
                num_key_value_heads=kv,
                max_position_embeddings=64,
                sliding_window=64,
                **common,
                **_ids(),
            ),
        )
    gemma = dict(
        vocab_size=V,
        hidden_size=d,
        intermediate_size=48,
        num_hidden_layers=L,
        num_attention_heads=H,
        num_key_value_heads=kv,
        head_dim=16,
        query_pre_attn_scalar=16,
        max_position_embeddings=64,
        sliding_window=32,
        **common,
        **_ids(),
    )
    if family == "gemma2":
        return (
            "Gemma2Config",
            "Gemma2ForCausalLM",
            dict(gemma, final_logit_softcapping=GEMMA2_SOFTCAP, attn_logit_softcapping=50.0),
        )
    if family == "gemma3":
        return (
            "Gemma3TextConfig",
            "Gemma3ForCausalLM",
            dict(gemma, layer_types=["sliding_attention", "full_attention"] * (L // 2)),
        )
    raise ValueError(f"no tiny builder for family {family!r}; families: {', '.join(ALL)}")


def tiny_hf_model(
    family: str, vocab_size: int, d: int = 32, layers: int = 2, heads: int = 4, seed: int = 0, **overrides
):
    """A random-weight model of the family's real architecture class (eval mode).
    ``overrides`` replace config keys (e.g. use_parallel_residual=False for NeoX)."""
    import transformers

    config_cls, model_cls, kwargs = _build(family, vocab_size, d, layers, heads)
    torch.manual_seed(seed)
    config = getattr(transformers, config_cls)(**{**kwargs, **overrides})
    return getattr(transformers, model_cls)(config).eval()

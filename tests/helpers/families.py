"""Tiny random-weight models of every supported family, built from the real config classes.

Each builder gives a few layers of small width with at least two heads, grouped-query
attention where the family's attention supports it, no dropout, and the family's own
quirks switched on where a test can see them (GPT-Neo's local attention, Gemma's
head_dim != d_model / n_heads and Gemma-2's final logit soft-cap).  No network.

The model class of each family is the family table's (``helixclock.lm.families.FAMILIES``,
``causal_lm``) and its config class is that model class's own; :data:`TINY` holds only what
the table does not: each family's config keys of the sizes and its quirks.
"""

from __future__ import annotations

import torch

from helixclock.lm.families import FAMILIES

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
POSITIONS = 64

# config keys of (width, layers, heads, positions), by the naming the family's config uses
GPT_KEYS = ("n_embd", "n_layer", "n_head", "n_positions")
NEO_KEYS = ("hidden_size", "num_layers", "num_heads", "max_position_embeddings")
HF_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings")

IDS = dict(bos_token_id=2, eos_token_id=3)
GPT_DROPOUT = dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
COMMON = dict(attention_dropout=0.0, initializer_range=INIT, pad_token_id=0, **IDS)


def _gated(d, L, kv, **quirks):
    """A Llama-like MLP of width 48 with grouped-query attention (kv heads)."""
    return dict(intermediate_size=48, num_key_value_heads=kv, **COMMON, **quirks)


def _gemma(d, L, kv, **quirks):
    return _gated(d, L, kv, head_dim=16, query_pre_attn_scalar=16, sliding_window=32, **quirks)


# family: (config keys of the sizes, the rest of its config from width d, layers L, kv heads)
TINY = {
    "gptj": (GPT_KEYS, lambda d, L, kv: dict(rotary_dim=4, n_inner=2 * d, **GPT_DROPOUT, **IDS)),
    "neox": (
        HF_KEYS,
        lambda d, L, kv: dict(intermediate_size=3 * d, rotary_pct=0.25, use_parallel_residual=True, **IDS),
    ),
    "llama": (HF_KEYS, lambda d, L, kv: dict(intermediate_size=48, num_key_value_heads=kv, pad_token_id=0, **IDS)),
    # n_inner left None: the MLP is 4 * d wide
    "gpt2": (GPT_KEYS, lambda d, L, kv: dict(**GPT_DROPOUT, initializer_range=INIT, **IDS)),
    "gpt_neo": (  # alternating global and local (window 4) attention
        NEO_KEYS,
        lambda d, L, kv: dict(
            attention_types=[[["global", "local"], L // 2]],
            window_size=4,
            intermediate_size=3 * d,
            embed_dropout=0.0,
            resid_dropout=0.0,
            attention_dropout=0.0,
            initializer_range=INIT,
            **IDS,
        ),
    ),
    "olmo": (HF_KEYS, lambda d, L, kv: _gated(d, L, kv, clip_qkv=8.0)),
    "olmo2": (HF_KEYS, _gated),
    "phi": (
        HF_KEYS,
        lambda d, L, kv: dict(
            intermediate_size=2 * d,
            num_key_value_heads=kv,
            partial_rotary_factor=0.5,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attention_dropout=0.0,
            initializer_range=INIT,
            **IDS,
        ),
    ),
    "qwen2": (HF_KEYS, _gated),
    "mistral": (HF_KEYS, lambda d, L, kv: _gated(d, L, kv, sliding_window=64)),
    "gemma2": (
        HF_KEYS,
        lambda d, L, kv: _gemma(d, L, kv, final_logit_softcapping=GEMMA2_SOFTCAP, attn_logit_softcapping=50.0),
    ),
    "gemma3": (
        HF_KEYS,
        lambda d, L, kv: _gemma(d, L, kv, layer_types=["sliding_attention", "full_attention"] * (L // 2)),
    ),
}


def tiny_config(family: str, vocab_size: int, d: int = 32, layers: int = 2, heads: int = 4) -> dict:
    """The config keywords of one family's tiny model."""
    if family not in TINY:
        raise ValueError(f"no tiny builder for family {family!r}; families: {', '.join(ALL)}")
    keys, quirks = TINY[family]
    return dict(
        vocab_size=vocab_size, **dict(zip(keys, (d, layers, heads, POSITIONS))), **quirks(d, layers, max(1, heads // 2))
    )


def tiny_hf_model(
    family: str, vocab_size: int, d: int = 32, layers: int = 2, heads: int = 4, seed: int = 0, **overrides
):
    """A random-weight model of the family's real architecture class (eval mode).
    ``overrides`` replace config keys (e.g. use_parallel_residual=False for NeoX)."""
    import transformers

    kwargs = tiny_config(family, vocab_size, d, layers, heads)
    model_cls = getattr(transformers, FAMILIES[family].causal_lm)
    torch.manual_seed(seed)
    return model_cls(model_cls.config_class(**{**kwargs, **overrides})).eval()

"""The family table: one row per architecture family (the models of paper section 3, GPT-J,
Pythia-6.9B and Llama3.1-8B, and the families the pipeline also runs the experiments on).

A :class:`FamilySpec` names, for one family, the module paths (relative to the model, or to
a block) behind each hook point of :mod:`helixclock.lm.adapters`, whether the block is parallel
or sequential, whether the MLP is gated, the post-norms, how the output projection's weight
is laid out and what the family does to its final logits.  :data:`FAMILIES` holds one spec
per family and :data:`MODEL_TYPES` maps Hugging Face ``model_type`` values onto them.
Adding a family is one table row (and a tiny test model in ``tests/helpers/families.py``).

This module imports no torch: :mod:`helixclock.lm.config` (used by the Snakefile) takes the
family names and the model-type map from here (through :mod:`helixclock.lm.adapters`).
"""

from __future__ import annotations

from dataclasses import dataclass

LAYOUTS = ("out_in", "in_out")  # nn.Linear stores weight [out, in]; GPT-2's Conv1D [in, out]


class UnsupportedFamilyError(ValueError):
    """A model's architecture has no adapter."""


@dataclass(frozen=True)
class FamilySpec:
    """Where one family keeps what the hook points read.

    Paths of whole-model modules (``blocks``, ``final_norm``, ``unembed``) are
    relative to the causal-LM model; all others are relative to one block
    (``{blocks}.{layer}``).  A norm given as None is absent: the component reads the raw
    residual (OLMo-2 has no pre-norms), or adds its output unnormalised (most families have
    no post-norms).
    """

    name: str
    model_types: tuple[str, ...]  # Hugging Face config.model_type values of the family
    causal_lm: str  # the transformers class the tests build (and from_pretrained returns)
    blocks: str  # ModuleList of blocks; resid_pre[l] is the input of block l
    final_norm: str  # resid_pre[n_layers] is its input
    unembed: str  # logits are its output
    attn_proj: str  # attention output projection: head_out is its input
    mlp: str  # MLP module
    neuron_in: tuple[str, ...]  # (input projection,) or gated (gate, up): neuron_pre, neuron_up
    neuron_out: str  # MLP output projection: neuron_post is its input
    attn_norm: str | None  # norm whose output attention reads
    mlp_norm: str | None  # norm whose output the MLP reads
    parallel: bool  # attention and MLP read the same residual (no resid_mid)
    gated: bool  # MLP is act(gate(x)) * up(x)
    attn_post_norm: str | None = None  # norm of the output projection's output: attn_out is its output
    mlp_post_norm: str | None = None  # norm of the MLP's output: mlp_out is its output
    parallel_key: str | None = None  # config attribute that overrides ``parallel`` (NeoX)
    proj_layout: str = "out_in"  # weight layout of attn_proj and neuron_out (see LAYOUTS)
    head_dim_key: str | None = "head_dim"  # config attribute with d_head; else d_model // n_heads
    d_mlp_key: str = "intermediate_size"  # config attribute with d_mlp; 4 * d_model when None
    embed_scale: bool = False  # the embedding module multiplies by sqrt(d_model) itself (Gemma)
    final_softcap_key: str | None = None  # config attribute: logits = c * tanh(unembed / c) (Gemma-2)
    window_key: str | None = None  # config attribute with the attention window of local layers

    def __post_init__(self):
        if self.proj_layout not in LAYOUTS:
            raise ValueError(
                f"family {self.name!r}: proj_layout {self.proj_layout!r} is not one of {', '.join(LAYOUTS)}"
            )
        if len(self.neuron_in) != (2 if self.gated else 1):
            raise ValueError(
                f"family {self.name!r}: neuron_in {self.neuron_in} must name "
                f"{'gate and up' if self.gated else 'one input projection'}"
            )


_LLAMA_LIKE = dict(
    blocks="model.layers",
    final_norm="model.norm",
    unembed="lm_head",
    attn_proj="self_attn.o_proj",
    mlp="mlp",
    neuron_in=("mlp.gate_proj", "mlp.up_proj"),
    neuron_out="mlp.down_proj",
    attn_norm="input_layernorm",
    mlp_norm="post_attention_layernorm",
    parallel=False,
    gated=True,
)
_GEMMA = dict(
    _LLAMA_LIKE,
    mlp_norm="pre_feedforward_layernorm",
    attn_post_norm="post_attention_layernorm",
    mlp_post_norm="post_feedforward_layernorm",
    embed_scale=True,
    final_softcap_key="final_logit_softcapping",
    window_key="sliding_window",
)
_LOCAL = ("sliding_attention", "local")  # windowed layers in config.layer_types / attention_layers

# What the rows encode, beyond module names (checked against transformers 5.23's sources):
# - parallel blocks: GPT-J, Phi (one norm feeds both), NeoX unless use_parallel_residual=False;
# - gated MLPs (gate, up): Llama, OLMo, OLMo-2, Qwen2, Mistral, Gemma-2/3 (none fuses gate and up);
# - post-norms: OLMo-2 (and no pre-norms), Gemma-2/3 (post_attention_layernorm is a post-norm there,
#   pre_feedforward_layernorm the MLP's pre-norm); attn_out/mlp_out are the post-norms' outputs;
# - GPT-2 stores attn.c_proj and mlp.c_proj as Conv1D, weight [in, out];
# - output-projection bias: GPT-2, GPT-Neo, NeoX, Phi always; Llama, OLMo(-2), Gemma when
#   config.attention_bias; never GPT-J, Qwen2, Mistral (attn_bias reads the module);
# - Phi's unembedding has a bias (kept: logits come from the module itself);
# - Gemma's embedding module multiplies by sqrt(d_model); Gemma-2 soft-caps the final logits.
_SPECS = (
    FamilySpec(
        "gptj",
        ("gptj",),
        "GPTJForCausalLM",
        blocks="transformer.h",
        final_norm="transformer.ln_f",
        unembed="lm_head",
        attn_proj="attn.out_proj",
        mlp="mlp",
        neuron_in=("mlp.fc_in",),
        neuron_out="mlp.fc_out",
        attn_norm="ln_1",
        mlp_norm="ln_1",
        parallel=True,
        gated=False,
        head_dim_key=None,
        d_mlp_key="n_inner",
    ),
    FamilySpec(
        "neox",
        ("gpt_neox",),
        "GPTNeoXForCausalLM",
        blocks="gpt_neox.layers",
        final_norm="gpt_neox.final_layer_norm",
        unembed="lm_head",
        attn_proj="attention.dense",
        mlp="mlp",
        neuron_in=("mlp.dense_h_to_4h",),
        neuron_out="mlp.dense_4h_to_h",
        attn_norm="input_layernorm",
        mlp_norm="post_attention_layernorm",
        parallel=True,
        gated=False,
        parallel_key="use_parallel_residual",
        head_dim_key=None,
    ),
    FamilySpec("llama", ("llama",), "LlamaForCausalLM", **_LLAMA_LIKE),
    FamilySpec(
        "gpt2",
        ("gpt2",),
        "GPT2LMHeadModel",
        blocks="transformer.h",
        final_norm="transformer.ln_f",
        unembed="lm_head",
        attn_proj="attn.c_proj",
        mlp="mlp",
        neuron_in=("mlp.c_fc",),
        neuron_out="mlp.c_proj",
        attn_norm="ln_1",
        mlp_norm="ln_2",
        parallel=False,
        gated=False,
        proj_layout="in_out",
        head_dim_key=None,
        d_mlp_key="n_inner",
    ),
    FamilySpec(
        "gpt_neo",
        ("gpt_neo",),
        "GPTNeoForCausalLM",
        blocks="transformer.h",
        final_norm="transformer.ln_f",
        unembed="lm_head",
        attn_proj="attn.attention.out_proj",
        mlp="mlp",
        neuron_in=("mlp.c_fc",),
        neuron_out="mlp.c_proj",
        attn_norm="ln_1",
        mlp_norm="ln_2",
        parallel=False,
        gated=False,
        head_dim_key=None,
        window_key="window_size",
    ),
    FamilySpec("olmo", ("olmo",), "OlmoForCausalLM", **_LLAMA_LIKE),
    FamilySpec(
        "olmo2",
        ("olmo2",),
        "Olmo2ForCausalLM",
        **dict(
            _LLAMA_LIKE,
            attn_norm=None,
            mlp_norm=None,
            attn_post_norm="post_attention_layernorm",
            mlp_post_norm="post_feedforward_layernorm",
        ),
    ),
    FamilySpec(
        "phi",
        ("phi",),
        "PhiForCausalLM",
        blocks="model.layers",
        final_norm="model.final_layernorm",
        unembed="lm_head",
        attn_proj="self_attn.dense",
        mlp="mlp",
        neuron_in=("mlp.fc1",),
        neuron_out="mlp.fc2",
        attn_norm="input_layernorm",
        mlp_norm="input_layernorm",
        parallel=True,
        gated=False,
    ),
    FamilySpec("qwen2", ("qwen2",), "Qwen2ForCausalLM", **dict(_LLAMA_LIKE, window_key="sliding_window")),
    FamilySpec("mistral", ("mistral",), "MistralForCausalLM", **dict(_LLAMA_LIKE, window_key="sliding_window")),
    FamilySpec("gemma2", ("gemma2",), "Gemma2ForCausalLM", **_GEMMA),
    FamilySpec("gemma3", ("gemma3_text",), "Gemma3ForCausalLM", **_GEMMA),
)
FAMILIES: dict[str, FamilySpec] = {s.name: s for s in _SPECS}
MODEL_TYPES: dict[str, str] = {t: s.name for s in _SPECS for t in s.model_types}  # HF model_type -> family


def detect_family(hf_config) -> str:
    """The family of a Hugging Face config, or an error naming the supported ones."""
    model_type = getattr(hf_config, "model_type", None)
    if model_type not in MODEL_TYPES:
        hint = (
            " (multimodal Gemma-3 checkpoints are not supported: load the text-only "
            "Gemma3ForCausalLM, model type 'gemma3_text')"
            if model_type == "gemma3"
            else ""
        )
        raise UnsupportedFamilyError(
            f"model type {model_type!r} is not supported{hint}; supported families: "
            f"{', '.join(FAMILIES)} (model types {', '.join(MODEL_TYPES)})"
        )
    return MODEL_TYPES[model_type]

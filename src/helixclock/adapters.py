"""Architecture adapters: one table row per model family, one class that reads it.

Every experiment speaks one vocabulary of hook points (the README, "The patching engine"):

=============  ==========================================================  ============
hook point     what                                                        shape
=============  ==========================================================  ============
resid_pre[l]   input of block l; l = n_layers is the final residual        [b, s, d]
head_out[l]    input of the attention output projection, split per head    [b, s, H, dh]
attn_out[l]    what attention adds to the residual: the output projection's [b, s, d]
               output, or its post-attention norm's output where the
               family normalises it before the residual add
resid_mid[l]   residual between attention and MLP (sequential blocks only) [b, s, d]
neuron_pre[l]  MLP input projection before the nonlinearity (gate if gated) [b, s, m]
neuron_up[l]   the up projection of a gated MLP                            [b, s, m]
neuron_post[l] input of the MLP output projection                          [b, s, m]
mlp_out[l]     what the MLP adds to the residual: the MLP's output, or its [b, s, d]
               post-feedforward norm's output where the family has one
logits         output of the unembedding (before any logit soft-cap)       [b, s, V]
=============  ==========================================================  ============

so that in every family resid_pre[l+1] = resid_pre[l] + attn_out[l] + mlp_out[l] (and
resid_mid[l] = resid_pre[l] + attn_out[l] in sequential blocks).

A :class:`FamilySpec` names, for one family, the module paths (relative to the model, or to
a block) behind each hook point, whether the block is parallel or sequential, whether the
MLP is gated, the post-norms, how the output projection's weight is laid out and what the
family does to its final logits.  :data:`FAMILIES` holds one spec per family and
:data:`MODEL_TYPES` maps Hugging Face ``model_type`` values onto them.  One
:class:`Adapter` reads a spec and a Hugging Face config and answers :meth:`Adapter.site`.
Adding a family is one table row (and a tiny test model in ``tests/helpers/families.py``).

This module imports no torch: :mod:`helixclock.config` (used by the Snakefile) takes the
family names and the model-type map from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

HOOK_KINDS = (
    "resid_pre",
    "head_out",
    "attn_out",
    "resid_mid",
    "neuron_pre",
    "neuron_up",
    "neuron_post",
    "mlp_out",
    "logits",
)
# position of each kind inside a block, in the order the forward pass reaches it
_STAGE = {
    "resid_pre": 0,
    "head_out": 1,
    "attn_out": 2,
    "resid_mid": 3,
    "neuron_pre": 4,
    "neuron_up": 5,
    "neuron_post": 6,
    "mlp_out": 7,
    "logits": 9,
}
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


@dataclass(frozen=True)
class Site:
    """Where a hook point lives: module path, input or output, and forward order."""

    kind: str
    layer: int
    path: str
    io: str  # "input" or "output"
    order: tuple[int, int]


def _int(cfg, key: str, family: str) -> int:
    value = getattr(cfg, key, None)
    if value is None:
        raise UnsupportedFamilyError(f"family {family!r}: the model's config has no {key!r}")
    return int(value)


class Adapter:
    """Maps the hook-point vocabulary onto one family, from its :class:`FamilySpec` and a
    Hugging Face config.  The shape attributes (n_layers, n_heads, n_kv_heads, d_model,
    d_head, d_mlp, vocab_size) come from the config; :meth:`check_model` confirms them
    against a model's weights."""

    def __init__(self, spec: FamilySpec, hf_config):
        self.spec = spec
        self.config = hf_config
        self.family = spec.name
        for key in (
            "blocks",
            "final_norm",
            "unembed",
            "attn_proj",
            "mlp",
            "neuron_in",
            "neuron_out",
            "attn_norm",
            "mlp_norm",
            "attn_post_norm",
            "mlp_post_norm",
            "gated",
        ):
            setattr(self, key, getattr(spec, key))
        self.parallel = spec.parallel
        if spec.parallel_key is not None and getattr(hf_config, spec.parallel_key, None) is not None:
            self.parallel = bool(getattr(hf_config, spec.parallel_key))
        self.n_layers = _int(hf_config, "num_hidden_layers", spec.name)
        self.n_heads = _int(hf_config, "num_attention_heads", spec.name)
        self.d_model = _int(hf_config, "hidden_size", spec.name)
        self.n_kv_heads = int(getattr(hf_config, "num_key_value_heads", None) or self.n_heads)
        head_dim = getattr(hf_config, spec.head_dim_key, None) if spec.head_dim_key else None
        self.d_head = int(head_dim) if head_dim else self.d_model // self.n_heads
        self.d_mlp = int(getattr(hf_config, spec.d_mlp_key, None) or 4 * self.d_model)
        self.vocab_size = _int(hf_config, "vocab_size", spec.name)
        self.embed_scale = self.d_model**0.5 if spec.embed_scale else 1.0
        cap = getattr(hf_config, spec.final_softcap_key, None) if spec.final_softcap_key else None
        self.final_softcap: float | None = float(cap) if cap else None
        self.sliding_window = self._window(hf_config)

    def _window(self, cfg) -> int | None:
        """The attention window of the family's local layers (Mistral, Qwen2 with
        use_sliding_window, Gemma-2/3, GPT-Neo), or None when every layer sees the whole
        prompt.  A prompt longer than it must not reuse a prefix key/value cache."""
        window = getattr(cfg, self.spec.window_key, None) if self.spec.window_key else None
        types = getattr(cfg, "layer_types", None) or getattr(cfg, "attention_layers", None)
        if window is None or (types is not None and not any(t in _LOCAL for t in types)):
            return None
        return int(window)

    # -- hook points -----------------------------------------------------------------
    def site(self, kind: str, layer: int | None = None) -> Site:
        """The module and input/output behind hook point ``kind[layer]``."""
        L = self.n_layers
        if kind not in HOOK_KINDS:
            raise KeyError(f"unknown hook point {kind!r}; known: {', '.join(HOOK_KINDS)}")
        if kind == "logits":
            return Site(kind, L, self.unembed, "output", (L, _STAGE[kind]))
        if layer is None or not (0 <= layer <= L) or (layer == L and kind != "resid_pre"):
            top = L if kind == "resid_pre" else L - 1
            raise IndexError(f"hook point {kind}[{layer}] out of range 0..{top}")
        if kind == "resid_pre" and layer == L:
            return Site(kind, L, self.final_norm, "input", (L, 0))
        if kind == "resid_mid" and self.parallel:
            raise KeyError(f"{self.family} blocks are parallel: there is no resid_mid")
        if kind == "neuron_up" and not self.gated:
            raise KeyError(f"{self.family} MLPs are not gated: there is no neuron_up")
        rel, io = self._relative(kind)
        b = self.block_path(layer)
        return Site(kind, layer, f"{b}.{rel}" if rel else b, io, (layer, _STAGE[kind]))

    def _relative(self, kind: str) -> tuple[str, str]:
        """(module path relative to the block, "input" or "output") of an in-block kind."""
        if kind == "resid_pre":
            return "", "input"
        if kind == "head_out":
            return self.attn_proj, "input"
        if kind == "attn_out":
            return (self.attn_post_norm, "output") if self.attn_post_norm else (self.attn_proj, "output")
        if kind == "resid_mid":  # what the MLP branch starts from
            return (self.mlp_norm, "input") if self.mlp_norm else (self.mlp, "input")
        if kind == "neuron_pre":
            return self.neuron_in[0], "output"
        if kind == "neuron_up":
            return self.neuron_in[1], "output"
        if kind == "neuron_post":
            return self.neuron_out, "input"
        return (self.mlp_post_norm, "output") if self.mlp_post_norm else (self.mlp, "output")

    # -- weights used by analyses ------------------------------------------------------
    def head_weights(self, hf_model: torch.nn.Module, layer: int) -> torch.Tensor:
        """W_O split per head: [n_heads, d_head, d_model] (head_out @ W_O[h] is head h's
        write into the output projection's output; in post-normed families that output is
        then normalised before it joins the residual)."""
        w = hf_model.get_submodule(f"{self.block_path(layer)}.{self.attn_proj}").weight
        w = w.T if self.spec.proj_layout == "out_in" else w  # [H*dh, d]
        return w.reshape(self.n_heads, self.d_head, self.d_model)

    def neuron_weights(self, hf_model: torch.nn.Module, layer: int) -> torch.Tensor:
        """The MLP output projection per neuron: [d_mlp, d_model] (post_n * W[n] is neuron n's
        write into the MLP's output; in post-normed families that output is then normalised)."""
        w = hf_model.get_submodule(f"{self.block_path(layer)}.{self.neuron_out}").weight
        return w.T if self.spec.proj_layout == "out_in" else w

    def attn_bias(self, hf_model: torch.nn.Module, layer: int) -> torch.Tensor | None:
        """Bias of the attention output projection, [d_model], or None."""
        return getattr(hf_model.get_submodule(f"{self.block_path(layer)}.{self.attn_proj}"), "bias", None)

    def block_path(self, layer: int) -> str:
        return f"{self.blocks}.{layer}"

    def receiver_norm(self, component: str, layer: int) -> str | None:
        """Module whose output a component ('attn' or 'mlp') reads; None where it reads the
        raw residual (OLMo-2: resid_pre for attention, resid_mid for the MLP)."""
        if component not in ("attn", "mlp"):
            raise ValueError(f"component {component!r}; allowed: attn, mlp")
        norm = self.attn_norm if component == "attn" else self.mlp_norm
        return f"{self.block_path(layer)}.{norm}" if norm else None

    def cap_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """The model's output logits from the unembedding's output: Gemma-2's tanh soft-cap
        c * tanh(logits / c) where the config sets one, the same tensor elsewhere."""
        if self.final_softcap is None:
            return logits
        c = self.final_softcap
        return (logits / c).tanh() * c

    def logits_from_final_residual(self, hf_model: torch.nn.Module, residual: torch.Tensor) -> torch.Tensor:
        """The model's output logits of final-residual vectors [..., d] -> [..., V]: final
        norm, unembedding (with its bias, if any), then the family's soft-cap."""
        norm = hf_model.get_submodule(self.final_norm)
        unembed = hf_model.get_submodule(self.unembed)
        return self.cap_logits(unembed(norm(residual.to(unembed.weight.dtype))))

    def check_model(self, hf_model: torch.nn.Module) -> None:
        """Confirm the table and the config agree with the model's weights (layer count,
        output-projection and MLP widths, vocabulary); an error names the module at fault."""
        n = len(hf_model.get_submodule(self.blocks))
        if n != self.n_layers:
            raise UnsupportedFamilyError(
                f"family {self.family!r}: {self.blocks} has {n} blocks but the "
                f"config says num_hidden_layers={self.n_layers}"
            )
        expected = {
            self.attn_proj: (self.n_heads * self.d_head, self.d_model),
            self.neuron_out: (self.d_mlp, self.d_model),
        }
        for rel, (fan_in, fan_out) in expected.items():
            w = hf_model.get_submodule(f"{self.block_path(0)}.{rel}").weight
            want = (fan_out, fan_in) if self.spec.proj_layout == "out_in" else (fan_in, fan_out)
            if tuple(w.shape) != want:
                raise UnsupportedFamilyError(
                    f"family {self.family!r}: {self.block_path(0)}.{rel} has weight shape {tuple(w.shape)}, "
                    f"expected {want} (layout {self.spec.proj_layout}) from the config"
                )
        V = hf_model.get_submodule(self.unembed).weight.shape[0]
        if V != self.vocab_size:
            raise UnsupportedFamilyError(
                f"family {self.family!r}: {self.unembed} has {V} rows but the config says vocab_size={self.vocab_size}"
            )

    def describe(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "parallel": self.parallel,
            "gated": self.gated,
            "post_norms": bool(self.attn_post_norm or self.mlp_post_norm),
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "d_model": self.d_model,
            "d_head": self.d_head,
            "d_mlp": self.d_mlp,
            "vocab_size": self.vocab_size,
            "embed_scale": self.embed_scale,
            "final_softcap": self.final_softcap,
            "sliding_window": self.sliding_window,
        }


def make_adapter(hf_model: torch.nn.Module, family: str | None = None) -> Adapter:
    """The adapter of a Hugging Face causal LM.  ``family`` (from the registry) must agree
    with the family its config declares."""
    detected = detect_family(hf_model.config)
    if family is not None and family != detected:
        if family not in FAMILIES:
            raise UnsupportedFamilyError(
                f"family {family!r} is not supported; supported families: {', '.join(FAMILIES)}"
            )
        raise UnsupportedFamilyError(f"registry says family {family!r} but the model's config says {detected!r}")
    adapter = Adapter(FAMILIES[detected], hf_model.config)
    adapter.check_model(hf_model)
    return adapter

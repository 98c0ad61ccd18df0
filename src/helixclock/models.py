"""Loading models through nnsight and the architecture adapters.

Every experiment speaks one vocabulary of hook points (design.md):

=============  ==========================================================  ============
hook point     what                                                        shape
=============  ==========================================================  ============
resid_pre[l]   input of block l; l = n_layers is the final residual        [b, s, d]
attn_out[l]    output of the attention output projection                   [b, s, d]
head_out[l]    input of the attention output projection, split per head    [b, s, H, dh]
mlp_out[l]     output of the MLP                                           [b, s, d]
neuron_pre[l]  MLP input projection before the nonlinearity (gate if gated) [b, s, m]
neuron_up[l]   the up projection of a gated MLP                            [b, s, m]
neuron_post[l] input of the MLP output projection                          [b, s, m]
resid_mid[l]   residual between attention and MLP (sequential blocks only) [b, s, d]
logits         output of the unembedding                                   [b, s, V]
=============  ==========================================================  ============

An :class:`Adapter` maps each hook point onto a module path of the Hugging Face model
(which is also the nnsight envoy path) and says whether the value is that module's
input or output.  Adding a family is one small subclass.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from .config import FAMILIES, TOY_SOURCE, UnsupportedFamilyError, detect_family, model_dir

HOOK_KINDS = ("resid_pre", "head_out", "attn_out", "resid_mid", "neuron_pre", "neuron_up",
              "neuron_post", "mlp_out", "logits")
# position of each kind inside a block, in the order the forward pass reaches it
_STAGE = {"resid_pre": 0, "head_out": 1, "attn_out": 2, "resid_mid": 3, "neuron_pre": 4,
          "neuron_up": 5, "neuron_post": 6, "mlp_out": 7, "logits": 9}


@dataclass(frozen=True)
class Site:
    """Where a hook point lives: module path, input or output, and forward order."""

    kind: str
    layer: int
    path: str
    io: str  # "input" or "output"
    order: tuple[int, int]


class Adapter:
    """Maps the hook-point vocabulary onto one architecture family."""

    family: str = ""
    parallel: bool = True  # attention and MLP read the same residual
    blocks: str = ""
    final_norm: str = ""
    unembed: str = "lm_head"
    embed: str = ""
    attn: str = ""
    attn_proj: str = ""  # attention output projection, relative to a block
    mlp: str = "mlp"
    neuron_in: tuple[str, ...] = ()
    neuron_out: str = ""
    attn_norm: str = ""  # norm whose output the attention reads
    mlp_norm: str = ""  # norm whose output the MLP reads
    gated: bool = False

    def __init__(self, hf_model: torch.nn.Module):
        cfg = hf_model.config
        self.config = cfg
        self.n_layers = int(cfg.num_hidden_layers)
        self.n_heads = int(cfg.num_attention_heads)
        self.d_model = int(cfg.hidden_size)
        self.n_kv_heads = int(getattr(cfg, "num_key_value_heads", None) or self.n_heads)
        proj = hf_model.get_submodule(f"{self.blocks}.0.{self.attn_proj}")
        self.d_head = proj.in_features // self.n_heads
        self.d_mlp = hf_model.get_submodule(f"{self.blocks}.0.{self.neuron_out}").in_features
        self.vocab_size = hf_model.get_submodule(self.unembed).out_features

    # -- hook points -----------------------------------------------------------------
    def site(self, kind: str, layer: int | None = None) -> Site:
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
        b = f"{self.blocks}.{layer}"
        order = (layer, _STAGE[kind])
        if kind == "resid_pre":
            return Site(kind, layer, b, "input", order)
        if kind in ("head_out", "attn_out"):
            return Site(kind, layer, f"{b}.{self.attn_proj}", "input" if kind == "head_out" else "output", order)
        if kind == "resid_mid":
            if self.parallel:
                raise KeyError(f"{self.family} blocks are parallel: there is no resid_mid")
            return Site(kind, layer, f"{b}.{self.mlp_norm}", "input", order)
        if kind == "neuron_pre":
            return Site(kind, layer, f"{b}.{self.neuron_in[0]}", "output", order)
        if kind == "neuron_up":
            if not self.gated:
                raise KeyError(f"{self.family} MLPs are not gated: there is no neuron_up")
            return Site(kind, layer, f"{b}.{self.neuron_in[1]}", "output", order)
        if kind == "neuron_post":
            return Site(kind, layer, f"{b}.{self.neuron_out}", "input", order)
        return Site(kind, layer, f"{b}.{self.mlp}", "output", order)

    # -- weights used by analyses ------------------------------------------------------
    def head_weights(self, hf_model: torch.nn.Module, layer: int) -> torch.Tensor:
        """W_O split per head: [n_heads, d_head, d_model] (head_out @ W_O[h] is head h's write)."""
        w = hf_model.get_submodule(f"{self.blocks}.{layer}.{self.attn_proj}").weight  # [d, H*dh]
        return w.T.reshape(self.n_heads, self.d_head, self.d_model)

    def neuron_weights(self, hf_model: torch.nn.Module, layer: int) -> torch.Tensor:
        """The MLP output projection per neuron: [d_mlp, d_model] (post_n * W[n] is neuron n's write)."""
        return hf_model.get_submodule(f"{self.blocks}.{layer}.{self.neuron_out}").weight.T

    def logits_from_final_residual(self, hf_model: torch.nn.Module, residual: torch.Tensor) -> torch.Tensor:
        """Logits of final-residual vectors [..., d]: the final norm, then the unembedding."""
        norm = hf_model.get_submodule(self.final_norm)
        unembed = hf_model.get_submodule(self.unembed)
        return unembed(norm(residual.to(next(unembed.parameters()).dtype)))

    def attn_bias(self, hf_model: torch.nn.Module, layer: int) -> torch.Tensor | None:
        return hf_model.get_submodule(f"{self.blocks}.{layer}.{self.attn_proj}").bias

    def block_path(self, layer: int) -> str:
        return f"{self.blocks}.{layer}"

    def receiver_norm(self, component: str, layer: int) -> str:
        """Module whose output a component reads ('attn' or 'mlp')."""
        return f"{self.blocks}.{layer}.{self.attn_norm if component == 'attn' else self.mlp_norm}"

    def describe(self) -> dict[str, Any]:
        return {"family": self.family, "parallel": self.parallel, "gated": self.gated,
                "n_layers": self.n_layers, "n_heads": self.n_heads, "n_kv_heads": self.n_kv_heads,
                "d_model": self.d_model, "d_head": self.d_head, "d_mlp": self.d_mlp,
                "vocab_size": self.vocab_size}


class GPTJAdapter(Adapter):
    family = "gptj"
    parallel = True
    blocks = "transformer.h"
    final_norm = "transformer.ln_f"
    embed = "transformer.wte"
    attn = "attn"
    attn_proj = "attn.out_proj"
    neuron_in = ("mlp.fc_in",)
    neuron_out = "mlp.fc_out"
    attn_norm = "ln_1"
    mlp_norm = "ln_1"


class NeoXAdapter(Adapter):
    family = "neox"
    parallel = True
    blocks = "gpt_neox.layers"
    final_norm = "gpt_neox.final_layer_norm"
    embed = "gpt_neox.embed_in"
    attn = "attention"
    attn_proj = "attention.dense"
    neuron_in = ("mlp.dense_h_to_4h",)
    neuron_out = "mlp.dense_4h_to_h"
    attn_norm = "input_layernorm"
    mlp_norm = "post_attention_layernorm"

    def __init__(self, hf_model):
        super().__init__(hf_model)
        if not getattr(hf_model.config, "use_parallel_residual", True):
            self.parallel = False


class LlamaAdapter(Adapter):
    family = "llama"
    parallel = False
    blocks = "model.layers"
    final_norm = "model.norm"
    embed = "model.embed_tokens"
    attn = "self_attn"
    attn_proj = "self_attn.o_proj"
    neuron_in = ("mlp.gate_proj", "mlp.up_proj")
    neuron_out = "mlp.down_proj"
    attn_norm = "input_layernorm"
    mlp_norm = "post_attention_layernorm"
    gated = True


ADAPTERS: dict[str, type[Adapter]] = {"gptj": GPTJAdapter, "neox": NeoXAdapter, "llama": LlamaAdapter}
assert tuple(ADAPTERS) == FAMILIES
def make_adapter(hf_model: torch.nn.Module, family: str | None = None) -> Adapter:
    detected = detect_family(hf_model.config)
    if family is not None and family != detected:
        if family not in ADAPTERS:
            raise UnsupportedFamilyError(f"family {family!r} is not supported; supported "
                                         f"families: {', '.join(FAMILIES)}")
        raise UnsupportedFamilyError(f"registry says family {family!r} but the model's "
                                     f"config says {detected!r}")
    return ADAPTERS[detected](hf_model)


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"config key 'device' is {device!r} but CUDA is not available")
    return torch.device(device)


@dataclass
class LoadedModel:
    """An nnsight-wrapped causal LM with its adapter and tokenizer."""

    name: str
    lm: Any  # nnsight TransformersModel
    adapter: Adapter
    tokenizer: Any
    device: torch.device
    source: str = ""
    dtype: torch.dtype = torch.float32
    info: dict = field(default_factory=dict)

    @property
    def hf(self) -> torch.nn.Module:
        return self.lm._module

    def envoy(self, path: str):
        node = self.lm
        for part in path.split("."):
            node = node[int(part)] if part.isdigit() else getattr(node, part)
        return node


def _quiet():
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*LanguageModel is deprecated.*")
    import transformers

    transformers.logging.set_verbosity_error()


def _freeze(hf_model: torch.nn.Module) -> None:
    """Inference only: no autograd graph over the weights (nnsight traces would build one)."""
    hf_model.eval()
    for p in hf_model.parameters():
        p.requires_grad_(False)


def wrap_model(hf_model: torch.nn.Module, tokenizer, name: str = "model",
               family: str | None = None, source: str = "") -> LoadedModel:
    """Wrap an already-built Hugging Face model (tests build tiny random ones)."""
    from nnsight import TransformersModel

    _quiet()
    _freeze(hf_model)
    adapter = make_adapter(hf_model, family)
    lm = TransformersModel(hf_model, task="text-generation", tokenizer=tokenizer)
    p = next(hf_model.parameters())
    return LoadedModel(name, lm, adapter, tokenizer, p.device, source or name, p.dtype)


def load_model(name: str, spec: dict, device: str = "auto", resources: str = "resources/models",
               attn_implementation: str | None = None) -> LoadedModel:
    """Load a registered model through nnsight: hub id, local directory or trained toy."""
    from nnsight import TransformersModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _quiet()
    path = model_dir(name, spec, resources)
    dev = resolve_device(device)
    dtype = getattr(torch, spec.get("dtype", "float32"))
    if dev.type == "cpu" and dtype in (torch.float16,):
        dtype = torch.float32  # half matmuls are slow or missing on CPU
    tokenizer = AutoTokenizer.from_pretrained(path)
    kwargs = {"attn_implementation": attn_implementation} if attn_implementation else {}
    if dev.type == "cuda":
        kwargs["device_map"] = str(dev)  # load straight onto the GPU
    hf_model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)
    hf_model.to(dev)
    _freeze(hf_model)
    adapter = make_adapter(hf_model, spec.get("family"))
    lm = TransformersModel(hf_model, task="text-generation", tokenizer=tokenizer)
    return LoadedModel(name, lm, adapter, tokenizer, dev, spec["source"] if spec["source"] != TOY_SOURCE else path,
                       dtype)

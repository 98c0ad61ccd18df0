"""Architecture adapters: one class that reads a row of the family table (:mod:`helixclock.lm.families`).

Every experiment speaks one vocabulary of hook points (the docs/patching-engine.md, "The patching engine"):

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

One :class:`Adapter` reads a :class:`~helixclock.lm.families.FamilySpec` (the family table,
:data:`~helixclock.lm.families.FAMILIES`, lives in :mod:`helixclock.lm.families`) and a Hugging
Face config and answers :meth:`Adapter.site`.

This module imports no torch: :mod:`helixclock.lm.config` (used by the Snakefile) takes the
family names and the model-type map from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .families import (
    _LOCAL,
    FAMILIES,
    FamilySpec,
    UnsupportedFamilyError,
    detect_family,
)

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

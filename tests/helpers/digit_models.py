"""Tiny random-weight models whose numbers are several tokens (a digit-splitting tokenizer), and
their patching engine with pairs of a+b prompts drawn as the stages draw them
(docs/several-tokens.md, "Numbers of several tokens")."""

from __future__ import annotations

import torch

from helixclock.causal.pairs import draw_pairs
from helixclock.lm.models import LoadedModel, wrap_model
from helixclock.patching import PatchingEngine
from helpers.families import tiny_hf_model
from helpers.prompts import GPTJ_PROMPTS, digit_splitting_tokenizer
from helpers.tables import correct_table

ADD = GPTJ_PROMPTS["add"]
# the correct prompts the engines' pairs are drawn from: one- and two-digit operands, answers of
# one to three tokens
GRID = [(a, b) for a in (3, 7, 12, 45, 61, 88) for b in (5, 21, 34, 56)]


def digit_model(
    family: str = "llama", layers: int = 3, seed: int = 3, name: str | None = None, answer_end: str | None = "."
) -> LoadedModel:
    """A digit-tokenised model of ``family`` (weights drawn 10x wider than transformers' default,
    so that patching effects are well above float noise), its numbers several tokens, its
    answers ending at ``answer_end``."""
    digits = digit_splitting_tokenizer()
    hf = tiny_hf_model(family, len(digits), layers=layers, seed=seed, initializer_range=0.2)
    return wrap_model(hf, digits, name=name or f"d-{family}", number_tokens="several", answer_end=answer_end)


def digit_engine(
    family: str = "llama",
    layers: int = 3,
    seed: int = 3,
    name: str | None = None,
    n_pairs: int = 10,
    grid=GRID,
    **draw,
) -> tuple[PatchingEngine, object, object]:
    """The engine of :func:`digit_model`, ``n_pairs`` pairs (vary a and b, seed 0, ``draw``: more
    of :func:`helixclock.causal.pairs.draw_pairs`'s keywords) drawn from the correct prompts ``grid``,
    and that accuracy table."""
    model = digit_model(family, layers, seed, name)
    correct = correct_table(grid)
    pairs = draw_pairs(correct, n_pairs, 0, model.tokenizer, ADD, ("a", "b"), several=True, end=".", **draw)
    return PatchingEngine(model, progress=False), pairs, correct


def planted_copy_head(offset: int, reader, name: str, scale: float = 40.0) -> LoadedModel:
    """A 2-block digit Llama (width 32, 2 heads, RoPE at rope_theta 2) with one working head,
    L0H0, planted by hand: every weight is 0 but the norms', every token carries a constant
    coordinate (4, dimension 0) and a one-hot of itself (dimensions 1..V), so its query and key
    are the same for every token; RoPE then makes L0H0 attend from each position to the token
    ``offset`` before it (a sum of cosines in phase only there, sharper with ``scale``) and copy
    that token's digit one-hot into residual dimensions 20-29.  ``reader(weights, digits)``
    plants what reads them (a block's MLP, the unembedding), in place, under ``torch.no_grad``."""
    digits = digit_splitting_tokenizer()
    V = len(digits)
    hf = tiny_hf_model("llama", V, d=32, layers=2, heads=2, seed=0, rope_theta=2.0, intermediate_size=32)
    weights = hf.state_dict()
    with torch.no_grad():
        for key, w in weights.items():
            if "norm" not in key:
                w.zero_()
        weights["model.embed_tokens.weight"][:, 0] = 4.0
        weights["model.embed_tokens.weight"][torch.arange(V), 1 + torch.arange(V)] = 1.0
        rms = (17 / 32) ** 0.5  # every token's embedding has this root mean square
        theta = 2.0 ** (-torch.arange(8) / 8)  # RoPE's angles per position at rope_theta 2, head width 16
        attn = "model.layers.0.self_attn"
        weights[f"{attn}.q_proj.weight"][:8, 0] = scale * rms / 4
        weights[f"{attn}.k_proj.weight"][:8, 0] = torch.cos(offset * theta) * rms / 4
        weights[f"{attn}.k_proj.weight"][8:16, 0] = torch.sin(offset * theta) * rms / 4
        for d in range(10):
            weights[f"{attn}.v_proj.weight"][d, 1 + digits.convert_tokens_to_ids(str(d))] = rms
            weights[f"{attn}.o_proj.weight"][20 + d, d] = 1.0
        reader(weights, digits)
    hf.load_state_dict(weights)
    return wrap_model(hf, digits, name=name, number_tokens="several", answer_end=".")

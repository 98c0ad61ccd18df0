"""The plan of every model job of the paper's models, counted rather than written as formulas.

What a model job computes on a GPU is its forward passes: how many, how many token-rows
through the blocks, how many rows through the unembedding, how many with a backward pass.  These
follow from the model's layers, heads and vocabulary, the prompts' tokens, the config's counts
and the batch size, not from the model's width or weights.  So the plan is counted by running
every model job's own library calls (counting.run_jobs, as the job's script makes them) on a
*narrow* random-weight model of the paper model's layers, heads and vocabulary (width twice the
heads, MLP 64 wide, float32, on the CPU), with GPT-2's tokenizer (GPT-J's own; for Pythia and
Llama a stand-in within a few tokens of theirs), config/config.yaml's counts and batch, and
accuracy tables fabricated at the paper's accuracies (Table A1, Table C1).  The neurons' top
share is scaled by the real MLP's width over the narrow one, so the top neurons are as many as
the real model's.  FLOPs then follow from the counted rows and the real shape (:func:`flops`).

The counting is checked against a GPU: the same calls at GPT-J-6B's and Llama-3.1-8B's full
shapes on an H200 (benchmarks/gpu_probe.py, benchmarks/measured/) made the passes and rows counted
here for seven of the ten jobs; for head_patching, neuron_attribution and neuron_fit_eval the
narrow model makes fewer (GPT-J-6B: 666 of 694, 82 of 113, 50 of 58): what they select by
effects, or how they chunk, differs at full width (not isolated; tests/unit/test_gpu_costs.py),
so a model not measured (Pythia-6.9B) has those three counted short.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml
from transformers import AutoModelForCausalLM, GPTJConfig, GPTNeoXConfig, LlamaConfig

from helixclock.patching import Point
from helixclock.patching.prefix import PrefixCache
from helixclock.prompts.tasks import check_task_tokens, get_task, number_token_ids

ROOT = Path(__file__).resolve().parents[1]
# the paper's accuracies (Table A1, Table C1; config/paper_values.yaml): correct prompts per task
PAPER_ACCURACY = {"add": 0.805, "sub23": 0.8961, "div5": 0.9778, "mul1p5": 0.80, "mod2": 0.9556, "solve_x": 0.9556}
ADD_ACCURACY = {"gptj": 0.805, "pythia": 0.772, "llama": 0.980}  # Table A1
NAMES = {"gptj": "GPT-J-6B", "pythia": "Pythia-6.9B", "llama": "Llama-3.1-8B"}
PARAMETERS = {"gptj": 6_050_882_784, "pythia": 6_857_302_016, "llama": 8_030_261_248}  # as the model card counts
NARROW_MLP = 64


@dataclass(frozen=True)
class Shape:
    n_layers: int
    n_heads: int
    d_model: int
    d_mlp: int
    vocab: int
    parallel: bool = True  # GPT-J, NeoX: attention and MLP read the same residual
    kv_ratio: float = 1.0  # key/value heads per query head (grouped-query attention: Llama-3 0.25)
    mlp_matrices: int = 2  # a gated MLP (Llama) has three

    def block_flops(self, ctx: int) -> float:
        """FLOPs of one token through one block: the projections and the attention over ``ctx``
        tokens (an upper bound: the prompt's length)."""
        d = self.d_model
        attention = (2 + 2 * self.kv_ratio) * d * d  # q, out; k, v
        return 2.0 * (attention + self.mlp_matrices * d * self.d_mlp) + 4.0 * ctx * d

    @property
    def unembed_flops(self) -> float:
        return 2.0 * self.d_model * self.vocab

    def backward_flops(self, ctx: int) -> float:
        """Input gradients (weights frozen) from the logits down to layer 0's MLP output projection."""
        return self.unembed_flops + (self.n_layers - 1) * self.block_flops(ctx) + 2.0 * self.d_model * self.d_mlp


# the paper's models: the shapes of their hub configs, and their families
SHAPES = {
    "gptj": (Shape(n_layers=28, n_heads=16, d_model=4096, d_mlp=16384, vocab=50400), "gptj"),
    "pythia": (Shape(n_layers=32, n_heads=32, d_model=4096, d_mlp=16384, vocab=50432), "neox"),
    "llama": (
        Shape(32, 32, 4096, 14336, 128256, parallel=False, kv_ratio=0.25, mlp_matrices=3),
        "llama",
    ),
}


def narrow(shape: Shape) -> Shape:
    """``shape``'s layers, heads and vocabulary at the least width its heads allow (2 a head,
    for the rotary embedding) and an MLP :data:`NARROW_MLP` wide."""
    return replace(shape, d_model=2 * shape.n_heads, d_mlp=NARROW_MLP)


def read_config(model: str = "gptj") -> tuple[dict, dict]:
    """config/config.yaml and the registry entry of ``model``."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    registry = yaml.safe_load((ROOT / cfg.get("registry", "config/models.yaml")).read_text())
    return cfg, registry[model]


def gpt2_tokenizer():
    """GPT-J's tokenizer (GPT-2's BPE), built offline from the files vendored in tests/data/gpt2."""
    if str(ROOT / "tests") not in sys.path:  # tests/helpers is a package of the tests' folder
        sys.path.insert(0, str(ROOT / "tests"))
    # deferred: tests/helpers imports only once the tests' folder is on sys.path (above)
    from helpers.gpt2_tokenizer import gpt2_tokenizer as build

    return build()


def fabricated_tables(
    tokenizer, tasks: Sequence[str], accuracy: dict[str, float], seed: int
) -> dict[str, pd.DataFrame]:
    """Accuracy tables with exactly round(accuracy x prompts) correct rows, at seeded places (a
    random-weight model gets nothing right)."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in tasks:
        pr = get_task(t).problems()
        n = len(pr)
        correct = np.zeros(n, dtype=bool)
        correct[rng.permutation(n)[: int(round(accuracy[t] * n))]] = True
        answer_token = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(str(int(x)))[0]) for x in pr.answer]
        out[t] = pd.DataFrame(
            {"task": t, "a": pr.a, "b": pr.b, "answer": pr.answer, "answer_token": answer_token, "correct": correct}
        )
    return out


@dataclass(frozen=True)
class Prompt:
    length: int  # tokens of every prompt of the task
    prefix: int  # tokens the engine runs once per job (shared by all prompts, before the operand a)

    @property
    def suffix(self) -> int:
        return self.length - self.prefix


def geometry(tokenizer, prompts: dict[str, str], tasks: Sequence[str], name: str) -> dict[str, Prompt]:
    """Each task's prompt length and the engine's shared prefix (by the engine's own rule)."""
    rule = PrefixCache(None)
    out = {}
    for t in tasks:
        found = check_task_tokens(tokenizer, name, get_task(t), prompts[t], answers=False)
        ids = torch.from_numpy(np.asarray(found.input_ids))
        out[t] = Prompt(found.positions.length, rule.length([ids], [Point("resid_pre", 0, (found.positions.a,))]))
    number_token_ids(tokenizer, name, range(2))  # the bare numbers are one token each (else it refuses)
    return out


def flops(counted: dict, shape: Shape, ctx: int) -> float:
    """FLOPs of a job's counted rows at ``shape``: token-rows through every block, rows through
    the unembedding, rows with a backward pass."""
    return (
        counted["block_rows"] * shape.n_layers * shape.block_flops(ctx)
        + counted["unembed_rows"] * shape.unembed_flops
        + counted["grad_rows"] * shape.backward_flops(ctx)
    )


def svd_flops(shape: Shape, correct: int, fit_prompts: int) -> float:
    """float64 SVDs of the big fits inside model jobs (analytic, thin SVD ~ 4 m n^2 + 8 n^3 for
    m >= n): the b-token and last-token fits over the correct prompts, every MLP's and every
    head's output over the fit prompts (the a-token fits collapse to one row per a)."""

    def one(m: int, n: int) -> float:
        m, n = max(m, n), min(m, n)
        return 4.0 * m * n * n + 8.0 * n**3

    d = shape.d_model
    return (
        2 * (shape.n_layers + 1) * one(correct, d)
        + shape.n_layers * one(fit_prompts, d)
        + shape.n_layers * shape.n_heads * one(fit_prompts, d // shape.n_heads)
    )


def hf_config(shape: Shape, family: str):
    """The transformers configuration of a model of ``shape`` in ``family`` (the hub models'
    other settings: GPT-J's rotary 64, Pythia's rotary share 0.25, Llama-3.1's untied unembedding)."""
    if family == "gptj":
        return GPTJConfig(
            vocab_size=shape.vocab,
            n_embd=shape.d_model,
            n_layer=shape.n_layers,
            n_head=shape.n_heads,
            n_inner=shape.d_mlp,
            rotary_dim=min(64, shape.d_model // shape.n_heads),
            bos_token_id=50256,
            eos_token_id=50256,
        )
    if family == "neox":
        return GPTNeoXConfig(
            vocab_size=shape.vocab,
            hidden_size=shape.d_model,
            num_hidden_layers=shape.n_layers,
            num_attention_heads=shape.n_heads,
            intermediate_size=shape.d_mlp,
            rotary_pct=0.25,
            use_parallel_residual=True,
            tie_word_embeddings=False,
        )
    return LlamaConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.d_model,
        num_hidden_layers=shape.n_layers,
        num_attention_heads=shape.n_heads,
        num_key_value_heads=round(shape.n_heads * shape.kv_ratio),
        intermediate_size=shape.d_mlp,
        tie_word_embeddings=False,
    )


def random_model(shape: Shape, family: str, device: torch.device, dtype: torch.dtype):
    """A random-weight model of ``shape`` and ``family``, built on ``device`` in ``dtype``
    (transformers' own initialisation: nothing reads the weights' values but the neuron ranking,
    and every job's work is the same for any values)."""
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            hf = AutoModelForCausalLM.from_config(hf_config(shape, family))
    finally:
        torch.set_default_dtype(prev)
    return hf.eval()


def plan_config(cfg: dict, shape: Shape, counted: Shape) -> dict:
    """``cfg`` with the neurons' top share scaled from ``shape``'s MLP to ``counted``'s, so that
    the top neurons are as many as ``shape``'s."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in cfg.items()}
    out["neurons"]["top_share"] = cfg["neurons"]["top_share"] * shape.d_mlp / counted.d_mlp
    return out

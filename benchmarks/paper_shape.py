"""The whole DAG on the real GPT-J-6B, estimated: FLOPs per model job and the time on one H100.

No GPU was available while the pipeline was built, so the paper model's run time is
extrapolated from the CPU, in three parts.

1. Workload formulas.  For every model job of the DAG (the rules with ``resources: gpu=1`` in
   workflow/rules; train_toy only runs for toy models; a rule without a formula stops the
   benchmark) a function below lists the forward passes the job's
   library code makes, as groups of :class:`Call`: rows (prompts, or pairs x patch variants
   stacked along the batch), the tokens each row runs (the engine runs the shared instruction
   prefix once per job and then only the tokens from the operand a on), the batch size,
   whether the pass carries gradients (attribution patching: a backward pass each), and the
   rows that go through the final norm and unembedding alone (direct effects).  A formula
   reads the model's shape, the token positions of each task's prompt and the counts of
   config/config.yaml (bootstrap resampling is no forward pass and does not appear).
2. The formulas are checked by counting, at every run: each model job's library calls (as its
   script makes them) run on a tiny random-weight GPT-J (3 layers, 4 heads) with scaled-down
   counts and fabricated accuracy tables, with forward hooks on the first block and on the
   unembedding that sum batch x tokens, the rows with gradients and the passes.  Each job's
   counts must equal its formula's at that shape, or the benchmark stops.  The data-dependent
   counts (correct prompts, pairs drawn, heads categorised, the path-patched heads' layers)
   are read from that run.
3. Timing.  A random-weight model of GPT-J's exact width (d 4096, 16 heads, MLP 16,384,
   rotary 64, vocabulary 50,400), float32 on the CPU, with 2 layers and with 1 (interleaved,
   best of a few): a plain forward of a few a+b prompts (GPT-J's prompt, GPT-2's tokenizer from
   tests/data/gpt2) gives the time per layer per token and of the rest (embedding, final norm,
   unembedding); with the analytic FLOPs that is this CPU's achieved FLOP/s (the unembedding is
   also timed alone, as a cross-check).  Two ratios on the same model test the FLOP model: the
   engine's patched run against plain forwards of the same rows in the same passes (FLOP model:
   1), and the attribution pass's backward against its forward (FLOP model: their FLOPs' ratio).
   (The 2 layers share one set of weights, and the embedding the unembedding's matrix: GPT-J's
   shapes and FLOPs with half the memory to fill; an 800 MB layer fits in no CPU cache either way.)

Extrapolation: FLOPs of every job on the real GPT-J (28 layers, bf16/fp16) with the config's
counts and the paper's accuracies (Table A1, Table C1), and the time on one H100 SXM at a
stated share of its 989 TFLOP/s dense bf16/fp16 peak (0.3; 0.1 as a pessimistic bound).
Not in the time: loading the weights (12.1 GB per model job), HDF5 reads and writes, the fits'
float64 SVDs, and Python/nnsight overhead per forward pass (the passes are counted and printed).

FLOP model, per token: a block 2 (4 d^2 + 2 d d_mlp) + 4 ctx d (scores and mixing over ctx
tokens, ctx = the prompt length, an upper bound); the unembedding 2 d V; a backward pass
(weights frozen, so input gradients only) from the logits down to the earliest neuron scored:
the unembedding, L - 1 blocks and layer 0's MLP output projection.

The last line is JSON: per-job GFLOPs, total PFLOPs, H100 hours at the stated utilisation,
the CPU's GFLOP/s, the timed/FLOP-model ratios and whether every formula check passed.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import math
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml
from common import emit, timed

ROOT = Path(__file__).resolve().parents[1]
H100_PEAK_TFLOPS = 989.0  # H100 SXM, dense bf16/fp16 tensor cores
GRID = 10_000  # the neuron grids run every a+b prompt, a, b in 0..99
ATTENTION_PROMPTS, ATTENTION_BATCH = 512, 256  # heads.patching.attention_to: prompts and its own batch
DE_CHUNK = 64  # PathPatching.direct_effects: components per unembedding chunk
# the paper's accuracies (Table A1, Table C1; config/paper_values.yaml): correct prompts per task
PAPER_ACCURACY = {"add": 0.805, "sub23": 0.8961, "div5": 0.9778, "mul1p5": 0.80, "mod2": 0.9556, "solve_x": 0.9556}
# the heads the paper path-patches (Fig. D7): senders L14H13 (a,b), L18H10 (mixed); receivers L24H10 (a+b), L18H10
PAPER_SENDERS, PAPER_RECEIVERS = (14, 18), (24, 18)


# -- shapes and FLOPs ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    n_layers: int
    n_heads: int
    d_model: int
    d_mlp: int
    vocab: int
    parallel: bool = True  # GPT-J: attention and MLP read the same residual

    def block_flops(self, ctx: int) -> float:
        d = self.d_model
        return 2.0 * (4 * d * d + 2 * d * self.d_mlp) + 4.0 * ctx * d

    @property
    def unembed_flops(self) -> float:
        return 2.0 * self.d_model * self.vocab

    def backward_flops(self, ctx: int) -> float:
        """Input gradients from the logits down to layer 0's MLP output projection."""
        return self.unembed_flops + (self.n_layers - 1) * self.block_flops(ctx) + 2.0 * self.d_model * self.d_mlp

    @property
    def params(self) -> int:
        d, m, L, V = self.d_model, self.d_mlp, self.n_layers, self.vocab
        block = 4 * d * d + 2 * d * m + m + d + 2 * d  # q, k, v, out; fc_in, fc_out (+ biases); ln
        return L * block + 2 * V * d + V + 2 * d  # embedding, unembedding (+ bias), final norm


GPTJ = Shape(n_layers=28, n_heads=16, d_model=4096, d_mlp=16384, vocab=50400)  # EleutherAI/gpt-j-6B's config


# -- token geometry --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prompt:
    length: int  # tokens of every prompt of the task
    prefix: int  # tokens the engine runs once per job (shared by all prompts, before the operand a)
    key: tuple  # the prefix's tokens: the engine memoises a prefix by them

    @property
    def suffix(self) -> int:
        return self.length - self.prefix


@dataclass(frozen=True)
class Geometry:
    prompts: dict[str, Prompt]
    number_length: int
    number_prefix: int


def geometry(tokenizer, prompts: dict[str, str], tasks: Sequence[str], max_number: int, name: str) -> Geometry:
    """Prompt lengths and engine prefixes per task, by the engine's own prefix rule."""
    from helixclock.patching import Point
    from helixclock.patching.prefix import PrefixCache
    from helixclock.tasks import check_task_tokens, get_task, number_token_ids

    rule = PrefixCache(None)
    out = {}
    for t in tasks:
        found = check_task_tokens(tokenizer, name, get_task(t), prompts[t], answers=False)
        ids = torch.from_numpy(np.asarray(found.input_ids))
        p = rule.length([ids], [Point("resid_pre", 0, (found.positions.a,))])
        out[t] = Prompt(found.positions.length, p, tuple(ids[0, :p].tolist()))
    num = torch.tensor(number_token_ids(tokenizer, name, range(max_number + 1)))
    return Geometry(out, num.shape[1], rule.length([num], [Point("resid_pre", 0, (num.shape[1] - 1,))]))


# -- counts -------------------------------------------------------------------------------------------
@dataclass
class Counts:
    """Everything a formula reads besides the shape and the geometry."""

    batch: int
    tasks: tuple[str, ...]
    problems: dict[str, int]  # prompts of each task
    correct: dict[str, int]  # correct prompts of each task
    numbers: int  # bare numbers cached (cache.max_number + 1)
    helix_pairs: int
    split_pairs: int  # train/test control: pairs whose clean a is held out
    b_pairs: int  # b-token control: pairs a+b' -> a+b
    task_pairs: dict[str, int]  # other_tasks_patching, per usable task
    clock_pairs: int
    fit_prompts: int
    top_share: float
    attribution_pairs: int
    de_pairs: int
    ablation_prompts: int
    mean_prompts: int
    top_heads: int = 20  # heads categorised (k)
    senders: tuple[int, ...] = PAPER_SENDERS  # layers of the path-patched heads
    receivers: tuple[int, ...] = PAPER_RECEIVERS
    bases: dict[str, int] = field(default_factory=dict)  # basis and PCA counts of the sweeps


def basis_counts(periods: Sequence[int], compat: str) -> dict[str, int]:
    from helixclock.experiments import patch_sweep
    from helixclock.fits import clock_bases, full_bases, standard_bases
    from helixclock.stages.last_token.patching import PCA_BASELINES

    pca_ks = inspect.signature(patch_sweep).parameters["pca_ks"].default
    return {"standard": len(standard_bases(periods, compat=compat)), "full": len(full_bases(periods, compat=compat)),
            "clock": len(clock_bases(periods)), "pca_ks": len(pca_ks), "pca_ns": len(PCA_BASELINES)}


def fabricated_tables(tokenizer, tasks: Sequence[str], accuracy: dict[str, float], seed: int
                      ) -> dict[str, pd.DataFrame]:
    """Accuracy tables with exactly round(accuracy x prompts) correct rows, at seeded places."""
    from helixclock.tasks import get_task

    rng = np.random.default_rng(seed)
    out = {}
    for t in tasks:
        pr = get_task(t).problems()
        n = len(pr)
        correct = np.zeros(n, dtype=bool)
        correct[rng.permutation(n)[: int(round(accuracy[t] * n))]] = True
        answer_token = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(str(int(x)))[0]) for x in pr.answer]
        out[t] = pd.DataFrame({"task": t, "a": pr.a, "b": pr.b, "answer": pr.answer, "answer_token": answer_token,
                               "correct": correct})
    return out


def counts_from(cfg: dict, entry: dict, tables: dict[str, pd.DataFrame], batch: int, **heads) -> Counts:
    """The counts the code draws from ``tables`` under config ``cfg`` (the pair draws are the
    pipeline's own, helixclock.pairs.pair_indices)."""
    from helixclock.pairs import pair_indices, split_values

    seed, helix, clock = cfg["seed"], cfg["helix"], cfg["clock"]
    neurons = {**cfg["neurons"], **entry.get("neurons", {})}  # a registry entry's neurons.top_share wins
    right = {t: df[df["correct"]] for t, df in tables.items()}
    add = right["add"]
    _, test_a = split_values(add["a"].to_numpy(), helix["test_fraction"], seed)
    n_pairs = lambda frame, n, vary, clean_a=None: len(pair_indices(frame, n, seed, vary, clean_a)[0])  # noqa: E731
    attribution = n_pairs(add, neurons["attribution_pairs"], ("a", "b"))
    return Counts(
        batch=batch, tasks=tuple(tables), problems={t: len(df) for t, df in tables.items()},
        correct={t: len(df) for t, df in right.items()}, numbers=cfg["cache"]["max_number"] + 1,
        helix_pairs=n_pairs(add, helix["n_pairs"], ("a",)), split_pairs=n_pairs(add, helix["n_pairs"], ("a",), test_a),
        b_pairs=n_pairs(add, helix["n_pairs"], ("b",)),
        task_pairs={t: n_pairs(df, helix["n_pairs"], ("a",)) for t, df in right.items()},
        clock_pairs=n_pairs(add, clock["n_pairs"], tuple(clock["corrupt"])),
        fit_prompts=min(clock["fit_prompts"], len(add)), top_share=neurons["top_share"],
        attribution_pairs=attribution, de_pairs=min(neurons["de_pairs"], attribution),
        ablation_prompts=min(neurons["ablation_prompts"], len(add)),
        mean_prompts=min(neurons["mean_prompts"], len(tables["add"])),
        bases=basis_counts(helix["periods"], cfg.get("compat", "corrected")), **heads)


# -- the formulas -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """``repeat`` groups of forward passes over ``rows`` rows of ``tokens`` tokens each, ``batch``
    rows a pass; kind "grad" adds a backward pass, kind "unembed" is rows through the final
    norm and unembedding alone (tokens unused)."""

    what: str
    rows: int
    tokens: int
    batch: int
    kind: str = "forward"
    repeat: int = 1

    @property
    def passes(self) -> int:
        return 0 if self.kind == "unembed" else self.repeat * math.ceil(self.rows / self.batch)


def prefixes(g: Geometry, tasks: Sequence[str]) -> list[Call]:
    """The shared prefix of each distinct prefix (by its tokens): one pass of one row per job."""
    seen: dict[tuple, int] = {}
    for t in tasks:
        if g.prompts[t].prefix:
            seen.setdefault(g.prompts[t].key, g.prompts[t].prefix)
    return [Call("shared prompt prefix, once", 1, n, 1) for n in seen.values()]


def unpatched(what: str, n: int, tokens: int, batch: int) -> list[Call]:
    return [Call(f"{what}: clean run", n, tokens, batch), Call(f"{what}: corrupted run", n, tokens, batch)]


def accuracy_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    return [Call(f"{t}: every prompt", c.problems[t], g.prompts[t].suffix, c.batch) for t in c.tasks] + \
        prefixes(g, c.tasks)


def residual_cache_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    calls = [Call("correct a+b prompts, resid_pre at a, b, last", c.correct["add"], g.prompts["add"].suffix, c.batch),
             Call("bare numbers", c.numbers, g.number_length - g.number_prefix, c.batch)]
    return calls + prefixes(g, ["add"]) + ([Call("numbers' prefix", 1, g.number_prefix, 1)] if g.number_prefix else [])


def helix_patching_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    L, S, bs, b = s.n_layers, g.prompts["add"].suffix, c.batch, c.bases
    n, nt, nb = c.helix_pairs, c.split_pairs, c.b_pairs
    sweep = 1 + b["pca_ks"] + b["standard"]  # layer patch, PCA 2k+1, every helix/circle/poly subset
    small = 2 + b["full"]  # layer patch, one PCA, full helix, circle, poly
    calls = unpatched("a'+b pairs", n, S, bs) + [Call("Fig. 4 sweep: every fit at every layer", sweep * L * n, S, bs)]
    if nt:
        calls += unpatched("held-out a pairs", nt, S, bs) + [Call("Fig. C5 train/test", small * L * nt, S, bs)]
    calls += [Call("Fig. C5 shuffled a", L * n, S, bs)]
    if nb:
        calls += unpatched("a+b' pairs", nb, S, bs) + [Call("Fig. C5 b token", small * L * nb, S, bs)]
    return calls + [Call("Fig. C6 ablations", 2 * L * n, S, bs)] + prefixes(g, ["add"])


def other_tasks_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    L, bs, small = s.n_layers, c.batch, 2 + c.bases["full"]
    calls = []
    for t, n in c.task_pairs.items():
        S = g.prompts[t].suffix
        calls += [Call(f"{t}: a-token residuals of correct prompts", c.correct[t], S, bs),
                  *unpatched(f"{t} pairs", n, S, bs), Call(f"{t}: Table 1 fits at every layer", small * L * n, S, bs)]
    return calls + prefixes(g, list(c.task_pairs))


def last_token_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    L, S, bs, n = s.n_layers, g.prompts["add"].suffix, c.batch, c.clock_pairs
    per_layer = 1 + c.bases["pca_ns"] + c.bases["clock"]
    return unpatched("a'+b' pairs", n, S, bs) + [
        Call("Fig. 5: last-token fits at every block output", per_layer * (L + 1) * n, S, bs),
        Call("Fig. 6: clean attention/MLP outputs", n, S, bs),
        Call("Fig. 6 TE: every attention and MLP output", 2 * L * n, S, bs),
        Call("Fig. 6 DE: corrupted final residual", n, S, bs),
        Call("Fig. 6 DE: corrupted attention/MLP outputs", n, S, bs),
        Call("Fig. 6 DE: unembedding", 2 * L * n, 0, bs, "unembed")] + prefixes(g, ["add"])


def path_counts(s: Shape, senders: Sequence[int], receivers: Sequence[int]) -> tuple[int, int]:
    """(paths, upstream MLP layers) of Fig. D7: a sender reaches every later head and MLP (and
    its own layer's MLP in a sequential block), a receiver reads every earlier one; each MLP
    layer a receiver reads needs its own clean and corrupted run."""
    H, L, own = s.n_heads, s.n_layers, 0 if s.parallel else 1
    paths = sum((L - 1 - l) * (H + 1) + own for l in senders) + sum(l * (H + 1) for l in receivers)
    return paths, max(receivers, default=0)


def head_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    L, H, S, bs, n, k = s.n_layers, s.n_heads, g.prompts["add"].suffix, c.batch, c.clock_pairs, c.top_heads
    LH = L * H
    paths, upstream = path_counts(s, c.senders, c.receivers)
    return [
        Call("Fig. D2 TE: clean head outputs", n, S, bs), Call("Fig. D2 TE: corrupted run", n, S, bs),
        Call("Fig. D2 TE: every head", LH * n, S, bs),
        Call("Fig. D2 DE: corrupted final residual", n, S, bs), Call("Fig. D2 DE: clean head outputs", n, S, bs),
        Call("Fig. D2 DE: corrupted head outputs", n, S, bs), Call("Fig. D2 DE: unembedding", LH * n, 0, bs, "unembed"),
        Call("Fig. D3: top-k heads, every k", (LH + 2) * n, S, bs),
        Call("head outputs of the fit prompts", c.fit_prompts, S, bs),
        Call("Fig. D4: helix fits of every head, 2 more per top head", (LH + 2 * k) * n, S, bs),
        Call("Fig. D5: corrupted top-head outputs", n, S, bs),
        Call("Fig. D5: m mixed heads, every m", (k + 2) * n, S, bs),
        Call("attention patterns (eager, whole prompts)", min(c.fit_prompts, ATTENTION_PROMPTS),
             g.prompts["add"].length, ATTENTION_BATCH),
        Call("Fig. D7: clean and corrupted runs of each upstream MLP", n, S, bs, repeat=2 * upstream),
        Call("Fig. D7 path patching, 2 passes", paths * n, S, bs, repeat=2)] + prefixes(g, ["add"])


def mlp_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    L, S, bs, n = s.n_layers, g.prompts["add"].suffix, c.batch, c.clock_pairs
    return unpatched("a'+b' pairs", n, S, bs) + [
        Call("Fig. D8: top-k MLPs, every k", (L + 2) * n, S, bs),
        Call("MLP outputs of the fit prompts", c.fit_prompts, S, bs),
        Call("Fig. 7: helix(a+b) fit of every MLP", L * n, S, bs)] + prefixes(g, ["add"])


def n_top(s: Shape, c: Counts) -> int:
    from helixclock.stages.neurons.patching import n_top as top

    return top(s.n_layers * s.d_mlp, c.top_share)


def neuron_attribution_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    from helixclock.stages.neurons.patching import powers_of_two

    S, bs, nA, nD, nAb = g.prompts["add"].suffix, c.batch, c.attribution_pairs, c.de_pairs, c.ablation_prompts
    ks = len(powers_of_two(s.n_layers * s.d_mlp))
    return [
        Call("attribution: clean neuron values", nA, S, bs),
        Call("attribution: corrupted run with gradients, backward", nA, S, bs, "grad"),
        Call("top-neuron DE: corrupted final residual", nD, S, bs), Call("DE: clean neurons", nD, S, bs),
        Call("DE: corrupted neurons", nD, S, bs),
        Call("DE: unembedding of each top neuron's write", n_top(s, c) * nD, 0, bs, "unembed"),
        Call("mean activations", c.mean_prompts, S, bs),
        Call("Fig. D9: unablated run", nAb, S, bs), Call("Fig. D9: keep the top k, every k", ks * nAb, S, bs),
    ] + prefixes(g, ["add"])


def neuron_grids_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    return [Call("N(a, b) of the top neurons, every a+b prompt", GRID, g.prompts["add"].suffix, c.batch)] + \
        prefixes(g, ["add"])


def neuron_fit_eval_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    from helixclock.stages.neurons.patching import powers_of_two

    S, nAb = g.prompts["add"].suffix, c.ablation_prompts
    return [Call("Fig. 9: unablated run", nAb, S, c.batch),
            Call("Fig. 9: actual and fitted preactivations, every k", 2 * len(powers_of_two(n_top(s, c))) * nAb, S,
                 c.batch)] + prefixes(g, ["add"])


JOBS: dict[str, Callable[[Shape, Geometry, Counts], list[Call]]] = {
    "accuracy": accuracy_job, "residual_cache": residual_cache_job, "helix_patching": helix_patching_job,
    "other_tasks_patching": other_tasks_job, "last_token_patching": last_token_job, "head_patching": head_job,
    "mlp_patching": mlp_job, "neuron_attribution": neuron_attribution_job, "neuron_grids": neuron_grids_job,
    "neuron_fit_eval": neuron_fit_eval_job,
}


def model_rules() -> list[str]:
    """Rules of workflow/rules that claim a GPU: those declared with ``model_job(...)`` and the
    ``staged_job(..., gpu=True)`` ones (workflow/rules/common.smk): the model jobs."""
    import re

    out = []
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for call in re.split(r"^(?=\w+\()", path.read_text(), flags=re.M):
            found = re.match(r'(model_job|staged_job)\(\s*"(\w+)"', call)
            if found and (found.group(1) == "model_job" or re.search(r"\bgpu=True", call)):
                out.append(found.group(2))
    return out


def totals(calls: Sequence[Call], s: Shape, ctx: int) -> dict:
    fwd = sum(c.rows * c.tokens * c.repeat for c in calls if c.kind != "unembed")
    grad = sum(c.rows * c.tokens * c.repeat for c in calls if c.kind == "grad")
    unembed = fwd + sum(c.rows * c.repeat for c in calls if c.kind == "unembed")
    flops = fwd * s.n_layers * s.block_flops(ctx) + unembed * s.unembed_flops + grad * s.backward_flops(ctx)
    return {"block_rows": fwd, "unembed_rows": unembed, "grad_rows": grad,
            "passes": sum(c.passes for c in calls), "flops": flops}


# -- counting on a tiny model ---------------------------------------------------------------------------
class Counter:
    """Token-rows through block 0 and the unembedding, rows with gradients, forward passes."""

    def __init__(self, hf):
        self.n = {"block_rows": 0, "unembed_rows": 0, "grad_rows": 0, "passes": 0}
        hf.transformer.h[0].register_forward_hook(self._block)
        hf.lm_head.register_forward_hook(self._unembed)
        self.t0 = time.perf_counter()

    def _block(self, module, args, out):
        h = out[0] if isinstance(out, tuple) else out
        rows = h.shape[0] * h.shape[1]
        self.n["block_rows"] += rows
        self.n["passes"] += 1
        if torch.is_grad_enabled() and h.requires_grad:
            self.n["grad_rows"] += rows

    def _unembed(self, module, args, out):
        self.n["unembed_rows"] += out.numel() // out.shape[-1]

    def take(self) -> dict:
        out = {**self.n, "seconds": time.perf_counter() - self.t0}
        self.n = dict.fromkeys(self.n, 0)
        self.t0 = time.perf_counter()
        return out


def tiny_config(cfg: dict) -> dict:
    """The config with counts small enough for a tiny model on the CPU in seconds."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in cfg.items()}
    out["helix"].update(n_pairs=10, pca_components=20)
    out["clock"].update(n_pairs=10, fit_prompts=60, pca_components=30)
    out["neurons"].update(attribution_pairs=40, de_pairs=12, ablation_prompts=24, mean_prompts=16, top_share=0.05)
    return out


def count_tiny(cfg: dict, entry: dict, batch: int, seed: int = 0) -> tuple[dict[str, dict], Shape, Geometry, Counts]:
    """Run every model job's library calls on a tiny random GPT-J; counts per job."""
    from transformers import GPTJConfig, GPTJForCausalLM

    from helixclock.cache import read_residual_cache, write_residual_cache
    from helixclock.fits import FitSettings, fit_token, standard_bases, to_device
    from helixclock.models import wrap_model
    from helixclock.pairs import draw_pairs, prompt_sample
    from helixclock.patching import PatchingEngine
    from helixclock.stages.accuracy.sweep import ANSWER_NUMBERS, task_accuracy
    from helixclock.stages.heads.patching import HeadSettings, head_stage
    from helixclock.stages.helix.patching import helix_stage, other_tasks_stage
    from helixclock.stages.last_token.patching import last_token_curves, layer_effects
    from helixclock.stages.mlps.patching import mlp_stage
    from helixclock.stages.neurons.fit import fit_neurons
    from helixclock.stages.neurons.patching import NeuronSettings, attribution_job, fit_eval_job, grids_job
    from helixclock.stages.neurons.patching import n_top as top_count
    from helixclock.statistics import pair_values
    from helixclock.tasks import check_all_tasks, check_task_tokens, get_task
    from helixclock.toy import build_tokenizer

    prompts, tasks = entry["prompts"], tuple(cfg["accuracy"]["tasks"])
    tok = build_tokenizer(prompts, 399, bos=False)
    shape = Shape(n_layers=3, n_heads=4, d_model=32, d_mlp=64, vocab=len(tok))
    torch.manual_seed(seed)
    hf = GPTJForCausalLM(GPTJConfig(vocab_size=shape.vocab, n_positions=64, n_embd=shape.d_model,
                                    n_layer=shape.n_layers, n_head=shape.n_heads, rotary_dim=4, n_inner=shape.d_mlp,
                                    bos_token_id=None, eos_token_id=None))
    model = wrap_model(hf.eval(), tok, name="tiny-gptj")
    name, template, device = model.name, prompts["add"], model.device
    geo = geometry(tok, prompts, tasks, cfg["cache"]["max_number"], name)
    helix, clock = cfg["helix"], cfg["clock"]
    fit = FitSettings(helix["periods"], helix["pca_components"], cfg.get("compat", "corrected"))
    neurons = NeuronSettings(**{k: cfg["neurons"][k] for k in ("attribution_pairs", "de_pairs", "ablation_prompts",
                                                                "mean_prompts", "top_share")}, seed=cfg["seed"])
    positions = check_task_tokens(tok, name, get_task("add"), template, answers=False).positions.as_dict()
    last = positions["last"]
    counter = Counter(hf)
    engine = lambda: PatchingEngine(model, batch_size=batch, progress=False)  # noqa: E731  (one per job, as the scripts)
    got: dict[str, dict] = {}

    check_all_tasks(tok, name, prompts, tasks)
    eng = engine()
    counter.take()
    for t in tasks:
        task_accuracy(model, get_task(t), prompts[t], eng, keep=ANSWER_NUMBERS if t == "add" else None)
    got["accuracy"] = counter.take()
    tables = fabricated_tables(tok, tasks, PAPER_ACCURACY, seed)  # a random model gets nothing right
    acc = tables["add"]
    correct = acc[acc["correct"]]

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "residuals.h5"
        write_residual_cache(model, template, correct["a"].to_numpy(), correct["b"].to_numpy(), path,
                             dtype="float32", max_number=cfg["cache"]["max_number"], engine=engine())
        got["residual_cache"] = counter.take()
        cache = read_residual_cache(path)
    H = torch.from_numpy(cache.a).transpose(0, 1)  # helix_fits, a CPU job
    fits = fit_token(H, cache.ab[:, 0], standard_bases(fit.periods, compat=fit.compat), fit.pca_components)

    counter.take()
    helix_stage(engine(), correct, cache, to_device(fits, device), template, fit, n_pairs=helix["n_pairs"],
                seed=cfg["seed"], test_fraction=helix["test_fraction"])
    got["helix_patching"] = counter.take()
    other_tasks_stage(engine(), tables, prompts, fit, n_pairs=helix["n_pairs"], seed=cfg["seed"])
    got["other_tasks_patching"] = counter.take()

    def clock_pairs():
        return draw_pairs(correct, clock["n_pairs"], cfg["seed"], tok, template, tuple(clock["corrupt"]), device=device)

    eng = engine()
    pairs = clock_pairs()
    last_token_curves(eng, pairs, cache, fit.periods, clock["pca_components"])
    effects = layer_effects(eng, pairs)
    got["last_token_patching"] = counter.take()

    ids, a, b = prompt_sample(tok, correct, template, clock["fit_prompts"], cfg["seed"])
    heads = head_stage(engine(), clock_pairs(), ids, a, b, positions,
                       HeadSettings(clock["top_heads"], clock["mixed_heads"], fit.periods, fit.pca_components))
    got["head_patching"] = counter.take()
    paths = heads["paths"]
    role_layers = lambda side: tuple(int(h.split("H")[0][1:]) for h in  # noqa: E731
                                     paths[paths["analysis"] == side].drop_duplicates("role")["head"])
    observed = {"top_heads": len(heads["categories"]), "senders": role_layers("sender"),
                "receivers": role_layers("receiver")}
    want = path_counts(shape, observed["senders"], observed["receivers"])[0]
    if want != len(paths):
        raise AssertionError(f"Fig. D7 paths: the formula says {want}, the job patched {len(paths)}")

    mlp = effects[(effects["component"] == "MLP") & (effects["effect"] == "te")].sort_values("layer")
    mlp_stage(engine(), clock_pairs(), ids, a, b, last, pair_values(mlp).mean(1), fit.periods, fit.pca_components)
    got["mlp_patching"] = counter.take()

    out = attribution_job(engine(), acc, template, last, neurons)
    got["neuron_attribution"] = counter.take()
    scores = out["attribution"]
    top = scores.iloc[:top_count(len(scores), neurons.top_share)]
    grids = grids_job(engine(), acc, template, last, top)
    got["neuron_grids"] = counter.take()
    nf = fit_neurons(grids["pre"], fit.periods, layer=grids["layer"], neuron=grids["neuron"])  # neuron_fits, CPU
    counter.take()
    fit_eval_job(engine(), acc, template, last, pd.DataFrame({"layer": nf.layer, "neuron": nf.neuron}), nf.predict(),
                 out["means"], neurons)
    got["neuron_fit_eval"] = counter.take()

    counts = counts_from(cfg, entry, tables, batch, **observed)
    return got, shape, geo, counts


def check_formulas(got: dict[str, dict], shape: Shape, geo: Geometry, counts: Counts) -> list[str]:
    """Each job's counted rows and passes against its formula; returns the mismatches."""
    bad = []
    for job, fn in JOBS.items():
        want = totals(fn(shape, geo, counts), shape, geo.prompts["add"].length)
        for key in ("block_rows", "unembed_rows", "grad_rows", "passes"):
            if want[key] != got[job][key]:
                bad.append(f"{job}: {key} counted {got[job][key]}, formula {want[key]}")
    return bad


# -- timing at GPT-J's width ------------------------------------------------------------------------------
def gpt2_tokenizer():
    """GPT-J's tokenizer (GPT-2's BPE), built offline from the files vendored in tests/data/gpt2."""
    spec = importlib.util.spec_from_file_location("gpt2_tokenizer", ROOT / "tests" / "gpt2_tokenizer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gpt2_tokenizer()


def wide_model(tok, n_layers: int, seed: int = 0):
    """A random-weight GPT-J of GPT-J-6B's width with ``n_layers`` blocks (sharing one set of
    weights; the embedding shares the unembedding's matrix), float32."""
    from transformers import GPTJConfig, GPTJForCausalLM
    from transformers.initialization import no_init_weights

    from helixclock.models import wrap_model

    s = GPTJ
    cfg = GPTJConfig(vocab_size=s.vocab, n_positions=2048, n_embd=s.d_model, n_layer=n_layers, n_head=s.n_heads,
                     rotary_dim=64, n_inner=s.d_mlp, bos_token_id=50256, eos_token_id=50256)
    with no_init_weights():
        hf = GPTJForCausalLM(cfg)
    first = dict(hf.transformer.h[0].named_modules())
    for block in hf.transformer.h[1:]:
        for name, module in block.named_modules():
            for p, _ in list(module.named_parameters(recurse=False)):
                setattr(module, p, getattr(first[name], p))  # one shared tensor for every block
    hf.transformer.wte.weight = hf.lm_head.weight
    block = torch.randn(1 << 20, generator=torch.Generator().manual_seed(seed)) * 0.02
    with torch.no_grad():
        for name, p in hf.named_parameters():  # each shared tensor once
            if p.dim() == 1:
                p.fill_(1.0 if ".ln" in f".{name}" and name.endswith("weight") else 0.0)
                continue
            flat = p.view(-1)
            for i in range(0, flat.numel(), block.numel()):
                k = min(block.numel(), flat.numel() - i)
                flat[i:i + k].copy_(block[:k])
    return wrap_model(hf.eval(), tok, name=f"random-gptj-width-{n_layers}L")


def saved_bytes(fn, params) -> int:
    """Bytes autograd saves for the backward pass during ``fn`` (weights left out)."""
    skip = {p.data_ptr() for p in params}
    seen: dict[int, int] = {}

    def pack(t):
        if t.data_ptr() not in skip:
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(seen.values())


def time_width(prompts: dict[str, str], n_prompts: int, n_layers: int, repeats: int) -> dict:
    """Plain forward at n_layers and at 1 layer (interleaved, best of ``repeats``); the engine's
    patched run against a plain forward of the same rows; the attribution backward against its
    forward, beside the FLOP model's ratio."""
    from helixclock.patching import Pairs, Patch, PatchingEngine, Point
    from helixclock.stages.neurons.patching import neuron_sites
    from helixclock.tasks import render

    cpu = torch.device("cpu")
    tok = gpt2_tokenizer()
    t0 = time.perf_counter()
    model = wide_model(tok, n_layers)
    build_s = time.perf_counter() - t0
    hf = model.hf
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 100, n_prompts), rng.integers(0, 100, n_prompts)
    a2, b2 = (a + rng.integers(1, 100, n_prompts)) % 100, (b + rng.integers(1, 100, n_prompts)) % 100
    ids = lambda x, y: torch.tensor(tok([render(prompts["add"], i, j) for i, j in zip(x, y)])["input_ids"])  # noqa: E731
    clean, corrupted = ids(a, b), ids(a2, b2)
    ans = torch.tensor([tok(str(i + j))["input_ids"][0] for i, j in zip(a, b)])
    B, T = clean.shape
    pos_a = 6  # "Output ONLY a number.\n" is 6 GPT-2 tokens: the engine runs the 4 after it
    S = T - pos_a
    s = replace(GPTJ, n_layers=n_layers)
    fresh = lambda: Pairs(clean, corrupted, ans, ans)  # noqa: E731  (no cached runs)

    def forward(x: torch.Tensor) -> Callable[[], None]:
        def fn():
            with torch.no_grad():
                hf(x, use_cache=False)
        return fn

    # 1. a plain forward at n_layers and at 1 layer, interleaved against the load of a shared machine
    blocks, one = hf.transformer.h, torch.nn.ModuleList(hf.transformer.h[:1])
    t_full = t_one = float("inf")
    for _ in range(repeats):
        t_full = min(t_full, timed(forward(clean), cpu, 1))
        hf.transformer.h = one
        t_one = min(t_one, timed(forward(clean), cpu, 1))
        hf.transformer.h = blocks
    tokens = B * T
    per_layer = (t_full - t_one) / (n_layers - 1) / tokens  # s per token per block
    rest = max(t_one / tokens - per_layer, 1e-12)  # s per token: embedding, final norm, unembedding
    x = torch.randn(B * T, s.d_model)
    t_unembed = timed(lambda: hf.lm_head(x), cpu, repeats) / tokens  # the unembedding alone, as a cross-check

    # 2. the engine's patched run (its clean run, corrupted run and one pass of every variant) vs
    # plain forwards of the same rows in the same passes (the suffix tokens the engine runs)
    eng = PatchingEngine(model, batch_size=4096, progress=False)
    variants = [[Patch(Point("resid_pre", l, (pos_a,)))] for l in range(n_layers)]
    passes = [forward(clean[:, pos_a:]), forward(corrupted[:, pos_a:]),
              forward(corrupted[:, pos_a:].repeat(len(variants), 1))]
    t_floor = timed(lambda: [f() for f in passes], cpu, repeats)
    t_run = timed(lambda: eng.run(fresh(), variants), cpu, repeats)

    # 3. attribution: the forward with gradients and the backward vs a plain engine forward of the
    # same rows at the same sites (the clean run cached, as attribute reads it)
    sites = neuron_sites(model.adapter, T - 1)
    pairs = fresh()
    eng.clean_values(pairs, sites)
    t_collect = timed(lambda: eng.collect(corrupted, sites), cpu, repeats)
    t_attr = timed(lambda: eng.attribute(pairs, sites), cpu, repeats)
    saved = saved_bytes(lambda: eng.attribute(pairs, sites), hf.parameters())
    flop_ratio = s.backward_flops(T) / (n_layers * s.block_flops(T) + s.unembed_flops)
    return {
        "threads": torch.get_num_threads(), "prompts": B, "tokens": T, "layers": n_layers, "build_s": round(build_s, 1),
        "forward_s": round(t_full, 3), "forward_1_layer_s": round(t_one, 3),
        "ms_per_token_per_layer": round(per_layer * 1e3, 3), "ms_per_token_rest": round(rest * 1e3, 3),
        "gflops_per_s_layers": round(s.block_flops(T) / per_layer / 1e9, 1),
        "gflops_per_s_rest": round(s.unembed_flops / rest / 1e9, 1),
        "gflops_per_s_unembed_alone": round(s.unembed_flops / t_unembed / 1e9, 1),
        "gflops_per_s_forward": round((n_layers * s.block_flops(T) + s.unembed_flops) * tokens / t_full / 1e9, 1),
        "engine_run_vs_plain_forward": round(t_run / t_floor, 3),
        "backward_over_forward": round((t_attr - t_collect) / t_collect, 3),
        "backward_over_forward_flop_model": round(flop_ratio, 3),
        "saved_kb_per_token_layer_fp32": round(saved / (B * S) / n_layers / 1024, 1),
    }


def svd_flops(s: Shape, c: Counts) -> float:
    """float64 SVDs of the big fits inside model jobs (analytic, thin SVD ~ 4 m n^2 + 8 n^3 for
    m >= n); the a-token fits collapse to one row per a and are left out."""
    def one(m: int, n: int) -> float:
        m, n = max(m, n), min(m, n)
        return 4.0 * m * n * n + 8.0 * n ** 3

    C, F, d = c.correct["add"], c.fit_prompts, s.d_model
    return (2 * (s.n_layers + 1) * one(C, d)  # b-token fits (helix_patching), last-token fits (last_token_patching)
            + s.n_layers * one(F, d)  # every MLP's output (mlp_patching)
            + s.n_layers * s.n_heads * one(F, d // s.n_heads))  # every head's output (head_patching)


# -- the estimate ------------------------------------------------------------------------------------------
def read_config() -> tuple[dict, dict]:
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    registry = yaml.safe_load((ROOT / cfg.get("registry", "config/models.yaml")).read_text())
    return cfg, registry["gptj"]


MEMORY = {"weights_gb": "weights", "forward_batch_logits_gb": "logits of one forward batch",
          "de_chunk_logits_gb": "one direct-effect chunk's logits (bf16 + float32)",
          "helix_job_cache_tensors_gb": "a- and b-token cache on the GPU (helix_patching, float32)",
          "residual_cache_file_gb": "residual cache file (float32, on disk)",
          "attribution_saved_activations_gb": "one attribution batch's activations kept for backward"}


def memory(s: Shape, c: Counts, g: Geometry, saved_kb_fp32: float | None) -> dict:
    """Analytic memory of the big items (bf16/fp16 model, GB = 1e9 bytes); the attribution
    batch from the bytes autograd saved on the CPU model (float32, halved)."""
    S, L1, d = g.prompts["add"].suffix, s.n_layers + 1, s.d_model
    out = {"weights_gb": s.params * 2 / 1e9,
           "forward_batch_logits_gb": c.batch * S * s.vocab * 2 / 1e9,
           "de_chunk_logits_gb": DE_CHUNK * max(c.de_pairs, c.clock_pairs) * s.vocab * (2 + 4) / 1e9,
           "helix_job_cache_tensors_gb": 2 * c.correct["add"] * L1 * d * 4 / 1e9,
           "residual_cache_file_gb": (3 * c.correct["add"] + c.numbers) * L1 * d * 4 / 1e9}
    if saved_kb_fp32:
        out["attribution_saved_activations_gb"] = c.batch * S * s.n_layers * saved_kb_fp32 * 1024 / 2 / 1e9
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2, help="blocks of the GPT-J-width model timed (and 1)")
    parser.add_argument("--prompts", type=int, default=8, help="a+b prompts of the timed batch")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (best kept, after one warm-up)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--utilisation", type=float, default=0.3, help="share of the H100's peak assumed")
    parser.add_argument("--pessimistic", type=float, default=0.1, help="a second, pessimistic share")
    parser.add_argument("--peak-tflops", type=float, default=H100_PEAK_TFLOPS, help="H100 dense bf16/fp16 peak")
    parser.add_argument("--check-batch", type=int, default=128, help="engine batch of the tiny counting run")
    parser.add_argument("--no-timing", action="store_true", help="skip the GPT-J-width timing")
    parser.add_argument("--calls", action="store_true", help="print every pass group of every job")
    args = parser.parse_args()
    if args.layers < 2:
        parser.error("--layers must be at least 2 (the per-layer time is the difference to 1 layer)")
    torch.set_num_threads(args.threads)
    cfg, entry = read_config()
    unmodelled = sorted(set(model_rules()) - set(JOBS) - {"train_toy"})
    if unmodelled:
        raise SystemExit(f"model jobs without a workload formula here: {', '.join(unmodelled)}")

    t0 = time.perf_counter()
    got, tiny, tiny_geo, tiny_counts = count_tiny(tiny_config(cfg), entry, args.check_batch)
    bad = check_formulas(got, tiny, tiny_geo, tiny_counts)
    tiny_passes = sum(v["passes"] for v in got.values())
    tiny_ms_per_pass = 1e3 * sum(v["seconds"] for v in got.values()) / max(1, tiny_passes)
    print(f"formula check on a tiny GPT-J ({tiny.n_layers} layers, {tiny.n_heads} heads, d {tiny.d_model}, "
          f"MLP {tiny.d_mlp}; {len(JOBS)} jobs, {tiny_passes} passes, {time.perf_counter() - t0:.0f} s): "
          + ("every job's token-rows, unembedding rows, gradient rows and passes equal its formula" if not bad
             else "MISMATCH\n  " + "\n  ".join(bad)), flush=True)
    if bad:
        raise SystemExit(1)

    tok = gpt2_tokenizer()
    tasks = tuple(cfg["accuracy"]["tasks"])
    geo = geometry(tok, entry["prompts"], tasks, cfg["cache"]["max_number"], "gptj")
    tables = fabricated_tables(tok, tasks, PAPER_ACCURACY, cfg["seed"])
    counts = counts_from(cfg, entry, tables, cfg["batch_size"], top_heads=cfg["clock"]["top_heads"])
    ctx = geo.prompts["add"].length
    rate = args.peak_tflops * 1e12
    rows, per_job = [], {}
    for job, fn in JOBS.items():
        calls = fn(GPTJ, geo, counts)
        t = totals(calls, GPTJ, ctx)
        per_job[job] = t
        rows.append({"job": job, "token-rows": t["block_rows"], "unembed rows": t["unembed_rows"],
                     "grad rows": t["grad_rows"], "passes": t["passes"], "PFLOP": t["flops"] / 1e15,
                     f"H100 s @{args.utilisation:g}": t["flops"] / (rate * args.utilisation),
                     f"H100 s @{args.pessimistic:g}": t["flops"] / (rate * args.pessimistic)})
        if args.calls:
            print(f"\n{job}:")
            for c in calls:
                print(f"  {c.what}: {c.repeat} x {c.rows} rows x {c.tokens} tokens ({c.kind}, {c.passes} passes)")
    table = pd.DataFrame(rows)
    total = table.drop(columns="job").sum()
    table.loc[len(table)] = {"job": "total", **total.to_dict()}
    flops = float(total["PFLOP"]) * 1e15
    hours = flops / (rate * args.utilisation) / 3600
    hours_low = flops / (rate * args.pessimistic) / 3600
    print(f"\nGPT-J-6B ({GPTJ.n_layers} layers, d {GPTJ.d_model}, {GPTJ.n_heads} heads, MLP {GPTJ.d_mlp}, vocab "
          f"{GPTJ.vocab}; {GPTJ.params / 1e9:.2f} B parameters), a+b prompt {ctx} tokens, the engine runs "
          f"{geo.prompts['add'].suffix} after the shared prefix; batch {counts.batch}; correct a+b prompts "
          f"{counts.correct['add']} ({PAPER_ACCURACY['add']:.1%}); top neurons {n_top(GPTJ, counts)}; Fig. D7 paths "
          f"{path_counts(GPTJ, counts.senders, counts.receivers)[0]}")
    fmt = {"PFLOP": "{:.3f}".format}
    print(table.to_string(index=False, formatters={**fmt, **{c: "{:.0f}".format for c in table.columns
                                                              if c.startswith("H100")}}))
    print(f"total: {flops / 1e15:.1f} PFLOP; one H100 at {args.utilisation:.0%} of {args.peak_tflops:g} TFLOP/s: "
          f"{hours * 60:.1f} min of compute ({args.pessimistic:.0%}: {hours_low * 60:.1f} min)")

    timing = None if args.no_timing else time_width(entry["prompts"], args.prompts, args.layers, args.repeats)
    if timing:
        print(f"\nGPT-J width on this CPU ({timing['threads']} thread(s), float32, {timing['prompts']} prompts x "
              f"{timing['tokens']} tokens; model built in {timing['build_s']} s): "
              f"{timing['ms_per_token_per_layer']} ms per token per block = {timing['gflops_per_s_layers']} GFLOP/s; "
              f"embedding + final norm + unembedding "
              f"{timing['ms_per_token_rest']} ms per token = {timing['gflops_per_s_rest']} GFLOP/s; whole "
              f"{timing['layers']}-layer forward {timing['gflops_per_s_forward']} GFLOP/s")
        print(f"unembedding alone {timing['gflops_per_s_unembed_alone']} GFLOP/s; the engine's patched run takes "
              f"{timing['engine_run_vs_plain_forward']}x plain forwards of the same rows (FLOP model: 1); the "
              f"attribution backward {timing['backward_over_forward']}x its forward (FLOP model: "
              f"{timing['backward_over_forward_flop_model']}); autograd saves "
              f"{timing['saved_kb_per_token_layer_fp32']} kB per token per block (float32)")
    mem = memory(GPTJ, counts, geo, timing and timing["saved_kb_per_token_layer_fp32"])
    print("memory (analytic, bf16/fp16): " + "; ".join(f"{MEMORY[k]} {v:.2f} GB" for k, v in mem.items()))
    passes = int(total["passes"])
    print(f"not in the estimate: {passes} forward passes, each with Python/nnsight overhead ({tiny_ms_per_pass:.0f} ms "
          f"a pass on this CPU for the 3-layer toy, job time / passes: "
          f"{passes * tiny_ms_per_pass / 1e3 / 60:.1f} min at that rate); "
          f"loading {mem['weights_gb']:.1f} GB of weights in each of {len(JOBS)} model jobs; HDF5 I/O (the residual "
          f"cache alone is {mem['residual_cache_file_gb']:.1f} GB); the fits' float64 SVDs, about "
          f"{svd_flops(GPTJ, counts) / 1e12:.0f} TFLOP (analytic)")

    emit({"benchmark": "paper_shape", "formula_checks_passed": not bad, "jobs_checked": len(JOBS),
          "gflops_per_job": {k: round(v["flops"] / 1e9) for k, v in per_job.items()},
          "total_pflops": round(flops / 1e15, 2), "utilisation": args.utilisation, "peak_tflops": args.peak_tflops,
          "h100_hours": round(hours, 4), "h100_hours_pessimistic": round(hours_low, 4),
          "pessimistic_utilisation": args.pessimistic, "forward_passes": passes,
          "tiny_ms_per_pass": round(tiny_ms_per_pass, 1),
          "cpu_gflops_per_s": timing and timing["gflops_per_s_forward"],
          "svd_tflops_fp64_analytic": round(svd_flops(GPTJ, counts) / 1e12),
          "assumptions": {"accuracy": PAPER_ACCURACY, "top_heads": counts.top_heads, "senders": counts.senders,
                          "receivers": counts.receivers, "backward": "input gradients only (weights frozen)"},
          "memory_gb": {k: round(v, 2) for k, v in mem.items()}, "timing": timing})


if __name__ == "__main__":
    main()

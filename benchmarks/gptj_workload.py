"""The workload model of benchmarks/paper_shape.py: GPT-J's shape, each task's token geometry,
the config's counts, one FLOP formula per model job, and the analytic memory of the big items."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from helixclock import outputs
from helixclock.bases import clock_bases, full_bases, standard_bases
from helixclock.experiments import patch_sweep
from helixclock.patching import Point
from helixclock.patching.prefix import PrefixCache
from helixclock.sampling import pair_indices, split_values
from helixclock.stages.last_token.patching import PCA_BASELINES
from helixclock.stages.neurons.patching import n_top as top
from helixclock.stages.neurons.patching import powers_of_two
from helixclock.tasks import check_task_tokens, get_task, number_token_ids

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
    kv_ratio: float = 1.0  # key/value heads per query head (grouped-query attention: Llama-3 0.25)
    mlp_matrices: int = 2  # a gated MLP (Llama) has three

    def block_flops(self, ctx: int) -> float:
        d = self.d_model
        attention = (2 + 2 * self.kv_ratio) * d * d  # q, out; k, v
        return 2.0 * (attention + self.mlp_matrices * d * self.d_mlp) + 4.0 * ctx * d

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


def geometry(tokenizer, prompts: dict[str, str], tasks: Sequence[str], largest_bare_number: int, name: str) -> Geometry:
    """Prompt lengths and engine prefixes per task, by the engine's own prefix rule."""
    rule = PrefixCache(None)
    out = {}
    for t in tasks:
        found = check_task_tokens(tokenizer, name, get_task(t), prompts[t], answers=False)
        ids = torch.from_numpy(np.asarray(found.input_ids))
        p = rule.length([ids], [Point("resid_pre", 0, (found.positions.a,))])
        out[t] = Prompt(found.positions.length, p, tuple(ids[0, :p].tolist()))
    num = torch.tensor(number_token_ids(tokenizer, name, range(largest_bare_number + 1)))
    return Geometry(out, num.shape[1], rule.length([num], [Point("resid_pre", 0, (num.shape[1] - 1,))]))


# -- counts -------------------------------------------------------------------------------------------
@dataclass
class Counts:
    """Everything a formula reads besides the shape and the geometry."""

    batch: int
    tasks: tuple[str, ...]
    problems: dict[str, int]  # prompts of each task
    correct: dict[str, int]  # correct prompts of each task
    numbers: int  # bare numbers cached (cache.largest_bare_number + 1)
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
    pca_ks = inspect.signature(patch_sweep).parameters["pca_ks"].default
    return {
        "standard": len(standard_bases(periods, compat=compat)),
        "full": len(full_bases(periods, compat=compat)),
        "clock": len(clock_bases(periods)),
        "pca_ks": len(pca_ks),
        "pca_ns": len(PCA_BASELINES),
    }


def fabricated_tables(
    tokenizer, tasks: Sequence[str], accuracy: dict[str, float], seed: int
) -> dict[str, pd.DataFrame]:
    """Accuracy tables with exactly round(accuracy x prompts) correct rows, at seeded places."""
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


def counts_from(cfg: dict, entry: dict, tables: dict[str, pd.DataFrame], batch: int, **heads) -> Counts:
    """The counts the code draws from ``tables`` under config ``cfg`` (the pair draws are the
    pipeline's own, helixclock.pairs.pair_indices)."""
    seed, helix, clock = cfg["seed"], cfg["helix"], cfg["clock"]
    neurons = {**cfg["neurons"], **entry.get("neurons", {})}  # a registry entry's neurons.top_share wins
    right = {t: df[df["correct"]] for t, df in tables.items()}
    add = right["add"]
    _, test_a = split_values(add["a"].to_numpy(), helix["test_fraction"], seed)
    n_pairs = lambda frame, n, vary, clean_a=None: len(pair_indices(frame, n, seed, vary, clean_a)[0])  # noqa: E731
    attribution = n_pairs(add, neurons["attribution_pairs"], ("a", "b"))
    return Counts(
        batch=batch,
        tasks=tuple(tables),
        problems={t: len(df) for t, df in tables.items()},
        correct={t: len(df) for t, df in right.items()},
        numbers=cfg["cache"]["largest_bare_number"] + 1,
        helix_pairs=n_pairs(add, helix["n_pairs"], ("a",)),
        split_pairs=n_pairs(add, helix["n_pairs"], ("a",), test_a),
        b_pairs=n_pairs(add, helix["n_pairs"], ("b",)),
        task_pairs={t: n_pairs(df, helix["n_pairs"], ("a",)) for t, df in right.items()},
        clock_pairs=n_pairs(add, clock["n_pairs"], tuple(clock["corrupt"])),
        fit_prompts=min(clock["fit_prompts"], len(add)),
        top_share=neurons["top_share"],
        attribution_pairs=attribution,
        de_pairs=min(neurons["de_pairs"], attribution),
        ablation_prompts=min(neurons["ablation_prompts"], len(add)),
        mean_prompts=min(neurons["mean_prompts"], len(tables["add"])),
        bases=basis_counts(helix["periods"], cfg.get("compat", "corrected")),
        **heads,
    )


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
    return [Call(f"{t}: every prompt", c.problems[t], g.prompts[t].suffix, c.batch) for t in c.tasks] + prefixes(
        g, c.tasks
    )


def residual_cache_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    calls = [
        Call("correct a+b prompts, resid_pre at a, b, last", c.correct["add"], g.prompts["add"].suffix, c.batch),
        Call("bare numbers", c.numbers, g.number_length - g.number_prefix, c.batch),
    ]
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
        calls += [
            Call(f"{t}: a-token residuals of correct prompts", c.correct[t], S, bs),
            *unpatched(f"{t} pairs", n, S, bs),
            Call(f"{t}: Table 1 fits at every layer", small * L * n, S, bs),
        ]
    return calls + prefixes(g, list(c.task_pairs))


def last_token_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    L, S, bs, n = s.n_layers, g.prompts["add"].suffix, c.batch, c.clock_pairs
    per_layer = 1 + c.bases["pca_ns"] + c.bases["clock"]
    return (
        unpatched("a'+b' pairs", n, S, bs)
        + [
            Call("Fig. 5: last-token fits at every block output", per_layer * (L + 1) * n, S, bs),
            Call("Fig. 6: clean attention/MLP outputs", n, S, bs),
            Call("Fig. 6 TE: every attention and MLP output", 2 * L * n, S, bs),
            Call("Fig. 6 DE: corrupted final residual", n, S, bs),
            Call("Fig. 6 DE: corrupted attention/MLP outputs", n, S, bs),
            Call("Fig. 6 DE: unembedding", 2 * L * n, 0, bs, "unembed"),
        ]
        + prefixes(g, ["add"])
    )


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
        Call("Fig. D2 TE: clean head outputs", n, S, bs),
        Call("Fig. D2 TE: corrupted run", n, S, bs),
        Call("Fig. D2 TE: every head", LH * n, S, bs),
        Call("Fig. D2 DE: corrupted final residual", n, S, bs),
        Call("Fig. D2 DE: clean head outputs", n, S, bs),
        Call("Fig. D2 DE: corrupted head outputs", n, S, bs),
        Call("Fig. D2 DE: unembedding", LH * n, 0, bs, "unembed"),
        Call("Fig. D3: top-k heads, every k", (LH + 2) * n, S, bs),
        Call("head outputs of the fit prompts", c.fit_prompts, S, bs),
        Call("Fig. D4: helix fits of every head, 2 more per top head", (LH + 2 * k) * n, S, bs),
        Call("Fig. D5: corrupted top-head outputs", n, S, bs),
        Call("Fig. D5: m mixed heads, every m", (k + 2) * n, S, bs),
        Call(
            "attention patterns (eager, whole prompts)",
            min(c.fit_prompts, ATTENTION_PROMPTS),
            g.prompts["add"].length,
            ATTENTION_BATCH,
        ),
        Call("Fig. D7: clean and corrupted runs of each upstream MLP", n, S, bs, repeat=2 * upstream),
        Call("Fig. D7 path patching, 2 passes", paths * n, S, bs, repeat=2),
    ] + prefixes(g, ["add"])


def mlp_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    L, S, bs, n = s.n_layers, g.prompts["add"].suffix, c.batch, c.clock_pairs
    return (
        unpatched("a'+b' pairs", n, S, bs)
        + [
            Call("Fig. D8: top-k MLPs, every k", (L + 2) * n, S, bs),
            Call("MLP outputs of the fit prompts", c.fit_prompts, S, bs),
            Call("Fig. 7: helix(a+b) fit of every MLP", L * n, S, bs),
        ]
        + prefixes(g, ["add"])
    )


def n_top(s: Shape, c: Counts) -> int:
    return top(s.n_layers * s.d_mlp, c.top_share)


def neuron_attribution_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    S, bs, nA, nD, nAb = g.prompts["add"].suffix, c.batch, c.attribution_pairs, c.de_pairs, c.ablation_prompts
    ks = len(powers_of_two(s.n_layers * s.d_mlp))
    return [
        Call("attribution: clean neuron values", nA, S, bs),
        Call("attribution: corrupted run with gradients, backward", nA, S, bs, "grad"),
        Call("top-neuron DE: corrupted final residual", nD, S, bs),
        Call("DE: clean neurons", nD, S, bs),
        Call("DE: corrupted neurons", nD, S, bs),
        Call("DE: unembedding of each top neuron's write", n_top(s, c) * nD, 0, bs, "unembed"),
        Call("mean activations", c.mean_prompts, S, bs),
        Call("Fig. D9: unablated run", nAb, S, bs),
        Call("Fig. D9: keep the top k, every k", ks * nAb, S, bs),
    ] + prefixes(g, ["add"])


def neuron_grids_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    return [Call("N(a, b) of the top neurons, every a+b prompt", GRID, g.prompts["add"].suffix, c.batch)] + prefixes(
        g, ["add"]
    )


def neuron_fit_eval_job(s: Shape, g: Geometry, c: Counts) -> list[Call]:
    S, nAb = g.prompts["add"].suffix, c.ablation_prompts
    return [
        Call("Fig. 9: unablated run", nAb, S, c.batch),
        Call(
            "Fig. 9: actual and fitted preactivations, every k", 2 * len(powers_of_two(n_top(s, c))) * nAb, S, c.batch
        ),
    ] + prefixes(g, ["add"])


JOBS: dict[str, Callable[[Shape, Geometry, Counts], list[Call]]] = {
    "accuracy": accuracy_job,
    "residual_cache": residual_cache_job,
    "helix_patching": helix_patching_job,
    "other_tasks_patching": other_tasks_job,
    "last_token_patching": last_token_job,
    "head_patching": head_job,
    "mlp_patching": mlp_job,
    "neuron_attribution": neuron_attribution_job,
    "neuron_grids": neuron_grids_job,
    "neuron_fit_eval": neuron_fit_eval_job,
}


def model_rules() -> list[str]:
    """The rules whose jobs load a model: helixclock.outputs.MODEL_JOBS (the rule files check that
    these are their GPU jobs)."""
    return list(outputs.MODEL_JOBS)


def totals(calls: Sequence[Call], s: Shape, ctx: int) -> dict:
    fwd = sum(c.rows * c.tokens * c.repeat for c in calls if c.kind != "unembed")
    grad = sum(c.rows * c.tokens * c.repeat for c in calls if c.kind == "grad")
    unembed = fwd + sum(c.rows * c.repeat for c in calls if c.kind == "unembed")
    flops = fwd * s.n_layers * s.block_flops(ctx) + unembed * s.unembed_flops + grad * s.backward_flops(ctx)
    return {
        "block_rows": fwd,
        "unembed_rows": unembed,
        "grad_rows": grad,
        "passes": sum(c.passes for c in calls),
        "flops": flops,
    }


def svd_flops(s: Shape, c: Counts) -> float:
    """float64 SVDs of the big fits inside model jobs (analytic, thin SVD ~ 4 m n^2 + 8 n^3 for
    m >= n); the a-token fits collapse to one row per a and are left out."""

    def one(m: int, n: int) -> float:
        m, n = max(m, n), min(m, n)
        return 4.0 * m * n * n + 8.0 * n**3

    C, F, d = c.correct["add"], c.fit_prompts, s.d_model
    return (
        2 * (s.n_layers + 1) * one(C, d)  # b-token fits (helix_patching), last-token fits (last_token_patching)
        + s.n_layers * one(F, d)  # every MLP's output (mlp_patching)
        + s.n_layers * s.n_heads * one(F, d // s.n_heads)
    )  # every head's output (head_patching)


def read_config(model: str = "gptj") -> tuple[dict, dict]:
    """config/config.yaml and the registry entry of ``model``."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    registry = yaml.safe_load((ROOT / cfg.get("registry", "config/models.yaml")).read_text())
    return cfg, registry[model]


MEMORY = {
    "weights_gb": "weights",
    "forward_batch_logits_gb": "logits of one forward batch",
    "de_chunk_logits_gb": "one direct-effect chunk's logits (bf16 + float32)",
    "helix_job_cache_tensors_gb": "a- and b-token cache on the GPU (helix_patching, float32)",
    "residual_cache_file_gb": "residual cache file (float32, on disk)",
    "attribution_saved_activations_gb": "one attribution batch's activations kept for backward",
}


def memory(s: Shape, c: Counts, g: Geometry, saved_kb_fp32: float | None) -> dict:
    """Analytic memory of the big items (bf16/fp16 model, GB = 1e9 bytes); the attribution
    batch from the bytes autograd saved on the CPU model (float32, halved)."""
    S, L1, d = g.prompts["add"].suffix, s.n_layers + 1, s.d_model
    out = {
        "weights_gb": s.params * 2 / 1e9,
        "forward_batch_logits_gb": c.batch * S * s.vocab * 2 / 1e9,
        "de_chunk_logits_gb": DE_CHUNK * max(c.de_pairs, c.clock_pairs) * s.vocab * (2 + 4) / 1e9,
        "helix_job_cache_tensors_gb": 2 * c.correct["add"] * L1 * d * 4 / 1e9,
        "residual_cache_file_gb": (3 * c.correct["add"] + c.numbers) * L1 * d * 4 / 1e9,
    }
    if saved_kb_fp32:
        out["attribution_saved_activations_gb"] = c.batch * S * s.n_layers * saved_kb_fp32 * 1024 / 2 / 1e9
    return out

"""What each job asks of a cluster (README, "Sending the DAG to a Slurm cluster"): the host
memory and runtime of the jobs that run a model (``outputs.MODEL_JOBS``, which also claim one
GPU), and the memory of the jobs that read the residual cache, from numbers known while the DAG
is built and exact once the model card exists.

**The model's size.**  A model job's memory is what it holds at its peak (docs/memory.md):
:mod:`helixclock.jobs.memory` sums each job's items (weights, a forward batch's keys, values and
logits, the cache's tensors, fits' chunks, the attribution's backward) from the model's shape,
the batch and the config's counts (:func:`job_work`).  On a GPU that is the job's ``gpu_mem_mb``
(:func:`gpu_job_mb`), and its host memory is :data:`HOST_GPU_MB` (the CUDA context and
libraries), the weights and the cache datasets it reads; on the CPU every item lives in host
memory (:func:`model_job_mb`).  The parameters and shape are read, first found first:

1. the model card (``results/{model}/model.json``; it counts them exactly on PyTorch's meta
   device, and knows the prompts' token lengths).  Every model job but train_toy reads the card,
   so when Snakemake sizes a job it is about to submit (it evaluates resources again once a job's
   inputs exist) the card is there and the size is exact;
2. the model's own ``config.json``: a local directory's, the Hugging Face cache's snapshot of the
   registry ``revision`` (after download_model), a package's converted GGUF, a toy's checkpoint
   (:func:`config_parameters`: the matrices of the architecture, within about 0.1% for the
   families here);
3. the registry's ``parameters`` (what a dry run of a hub model shows before anything of it is
   downloaded; its layers and width are GPT-J's scaled to the count);
4. a toy's registry architecture.

A model none of these describes yet (a GGUF before its installation, a hub model without
``parameters`` before download_model) gets :data:`MIN_MODEL_MB` in a dry run; its jobs are
sized from the card when they are submitted.  Before the card, the prompt's tokens are bounded
by its characters (a token holds at least one), so a dry run never shows less than the job gets.

**Retries.**  Memory and runtime are multiplied by the attempt (Snakemake's ``attempt``, 1 on the
first try): a job that ran out of memory or time is resubmitted with twice, then three times as
much (``retries`` in the profile).

**Runtime** is :data:`GPTJ_MINUTES` (a generous bound from the forward passes each job makes on
GPT-J-6B, docs/gpu-costs.md) scaled by parameters x layers (a sweep patches every layer), with
:data:`MIN_MINUTES` as a floor.

**Readers of the residual cache** need the datasets they read (:data:`CACHE_DATASETS`) in
memory, :data:`CACHE_COPIES` times (float32 as read, and float64 copies of the fits), plus
:data:`CPU_OVERHEAD_MB`: the datasets' shapes from the cache file once it exists, else bounded by
every a+b prompt (all correct) at every layer of the model's width.

Imports nothing beyond the standard library (h5py once a cache exists): the DAG's build reads it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..lm.config import source_kind
from . import memory

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
MB = 1_000_000  # Snakemake's mem_mb (Slurm reads --mem in MiB: a little more)
HOST_CPU_MB = 500  # a model job's Python, torch, transformers, nnsight and pandas (the tiny run's peak 460-620 MB)
HOST_GPU_MB = 1800  # ... and the CUDA context and its libraries (the toys' H200 run: 0.8-1.75 GB)
# what a job asks beyond what it holds: the allocator keeps freed pages.  On make real's host peaks
# (benchmarks/measured/host_peaks_make_real.csv, tests/unit/test_host_peaks.py) every SmolLM2 and
# Gemma-3 model job lands within 1.0-2.0 x for a margin of 1.32 (Gemma-3's head_patching, 8,313 MB
# true) to 1.41 (SmolLM2's head_patching, 2 x its sampled 4,294 MB): 1.4
HOST_MARGIN = 1.4
MIN_MODEL_MB = 1500  # the least a model job asks for: a toy's helix_patching and last_token_patching peak at
# 1,019-1,029 MB in make run (ru_maxrss; their benchmark files, sampling every 0.5 s, saw 646-766)
ANSWER_TOKENS = 3  # answer positions whose logits a job on numbers of several tokens reads
CPU_OVERHEAD_MB = 1000  # a table job's Python, numpy, pandas
MIN_MEM_MB = 4000
MIN_MINUTES = 30
CACHE_COPIES = 3
ADD_PROMPTS = 10_000  # every a+b prompt (a, b in 0..99): the cache's most rows

# Minutes of a first try on one A100/H100-class GPU for GPT-J-6B (6.05e9 parameters, 28 layers) at
# config/config.yaml's counts: ten times the pessimistic estimate of docs/gpu-costs.md
# (benchmarks/gpu_costs.py: the job's FLOPs at 10% of an H100's peak, its passes' overhead and
# the weights' loading), and 15 minutes for what the estimate leaves out (imports, HDF5, the fits'
# float64 SVDs), rounded up to half hours; helix_patching, which also reads the whole cache and
# fits at every layer, an hour.  train_toy runs for toys alone (a CPU trains one in 20 minutes).
GPTJ_MINUTES = {
    "train_toy": 60,
    "accuracy": 30,
    "residual_cache": 30,
    "helix_patching": 60,
    "other_tasks_patching": 30,
    "last_token_patching": 30,
    "head_patching": 60,
    "mlp_patching": 30,
    "neuron_attribution": 30,
    "neuron_grids": 30,
    "neuron_fit_eval": 30,
    "answer_scores": 30,
}
GPTJ_PARAMETERS = 6_050_882_784  # GPT-J-6B's, counted (its 28 layers: GPTJ_SIZE)
GPTJ_SIZE = GPTJ_PARAMETERS * 28

# The datasets of the residual cache each reader reads (helixclock.project.cache; its scripts say so)
CACHE_DATASETS = {
    "clock_coordinates": ("last", "ab"),
    "helix_figure_tables": ("a", "ab"),
    "helix_fits": ("a", "ab"),
    "number_structure": ("numbers",),
    "number_bases": ("numbers",),
    "linear_addition": ("numbers",),
    "helix_patching": ("a", "b", "last", "ab", "numbers"),
    "last_token_patching": ("last", "ab"),
}


@dataclass(frozen=True)
class Size:
    """What a job's resources are computed from: parameters, layers, width, vocabulary, the
    longest prompt's tokens (None: unknown) and where they were read; the MLP's width, the keys'
    and values' width, the heads, whether the MLP is gated and the heads' outputs' width where a
    config.json says (else GPT-J's proportions: 4 x d_model, d_model, 64-wide heads, not gated,
    d_model)."""

    parameters: int
    n_layers: int
    d_model: int
    vocab: int
    tokens: int | None
    read_from: str
    d_mlp: int | None = None
    kv_width: int | None = None
    n_heads: int | None = None
    gated: bool = False
    prefix: int = 0  # tokens every a+b prompt shares before its first number (the card's), run once
    head_width: int | None = None  # heads x head size where config.json says (Gemma-3: head_dim 256 x 4 heads)

    def shape(self, act_bytes: int) -> memory.Shape:
        """The :class:`helixclock.jobs.memory.Shape` of the model with activations of ``act_bytes``."""
        d = self.d_model
        return memory.Shape(
            self.n_layers,
            d,
            self.d_mlp or 4 * d,
            self.kv_width or d,
            self.vocab,
            self.n_heads or max(1, d // 64),
            self.gated,
            act_bytes,
            self.head_width,
        )


def _get(cfg: dict, *keys, default=None):
    for k in keys:
        if cfg.get(k) is not None:
            return cfg[k]
    return default


GATED = ("llama", "mistral", "qwen2", "olmo", "olmo2", "gemma", "gemma2", "gemma3", "gemma3_text", "phi3")


def config_parameters(cfg: dict) -> int:
    """The parameters of the model a transformers ``config.json`` (as a dict) describes: the
    embedding (and an untied unembedding), attention (grouped-query too) and MLP matrices of
    every layer (gated MLPs have three); norms and biases, well under 0.1%, are left out."""
    cfg = cfg.get("text_config", cfg) if "hidden_size" not in cfg and "n_embd" not in cfg else cfg
    d = _get(cfg, "hidden_size", "n_embd", "d_model")
    layers = _get(cfg, "num_hidden_layers", "n_layer", "num_layers")
    heads = _get(cfg, "num_attention_heads", "n_head", "num_heads")
    kv = _get(cfg, "num_key_value_heads", default=heads)
    head_dim = _get(cfg, "head_dim", default=d // heads)
    mlp = _get(cfg, "intermediate_size", "n_inner", "ffn_dim", default=4 * d)
    vocab = cfg["vocab_size"]
    matrices = 3 if cfg.get("model_type") in GATED else 2
    attention = 2 * d * heads * head_dim + 2 * d * kv * head_dim
    tied = cfg.get("tie_word_embeddings", True)
    return vocab * d * (1 if tied else 2) + layers * (attention + matrices * d * mlp)


def config_size(cfg: dict, read_from: str) -> Size:
    inner = cfg.get("text_config", cfg) if "hidden_size" not in cfg and "n_embd" not in cfg else cfg
    d = _get(inner, "hidden_size", "n_embd", "d_model")
    heads = _get(inner, "num_attention_heads", "n_head", "num_heads")
    head_dim = _get(inner, "head_dim", default=d // heads if heads else None)
    kv = _get(inner, "num_key_value_heads", default=heads)
    return Size(
        parameters=config_parameters(cfg),
        n_layers=_get(inner, "num_hidden_layers", "n_layer", "num_layers"),
        d_model=d,
        vocab=inner["vocab_size"],
        tokens=None,
        read_from=read_from,
        d_mlp=_get(inner, "intermediate_size", "n_inner", "ffn_dim", default=4 * d),
        kv_width=kv * head_dim if kv and head_dim else None,
        n_heads=heads,
        gated=inner.get("model_type") in GATED,
        head_width=heads * head_dim if heads and head_dim else None,
    )


def card_tokens(card: dict) -> int | None:
    """The longest a+b prompt's tokens a card records (one-token numbers: each task's length;
    several tokens: the a+b prompts' classes), None where it records none."""
    lengths = [p["length"] for p in card.get("positions", {}).values() if p.get("length")]
    lengths += [n for c in card.get("classes", {}).get("add", []) for n in c.get("prompt_lengths", [])]
    return max(lengths) if lengths else None


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _hub_config(source: str, revision: str | None) -> Path | None:
    """config.json of a hub model's revision in the local Hugging Face cache, without the hub."""
    # deferred: huggingface_hub (a cache lookup: files only) only for a hub model, while the DAG is built
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(source, "config.json", revision=revision)
    return Path(found) if isinstance(found, str) else None


def card_prefix(card: dict) -> int:
    """Tokens every a+b prompt shares before its first number, which the engine runs once (the
    card's position of a, or the first token of a's spans with numbers of several tokens); 0
    where the card does not say."""
    add = card.get("positions", {}).get("add") or {}
    if add.get("a") is not None:
        return int(add["a"])
    spans = [c["example_spans"]["a"][0] for c in card.get("classes", {}).get("add", []) if c.get("example_spans")]
    return min(spans) if spans else 0


def model_size(name: str, spec: dict, card: str | Path, model_folder: str | Path | None = None) -> Size | None:
    """The size of model ``name`` (registry entry ``spec``): from its card at ``card`` where it
    exists, else its config.json (a local directory, the hub cache at its revision, or
    ``model_folder``: the folder its toy or converted GGUF is in), else registry ``parameters``,
    else a toy's registry architecture; None where nothing describes it yet.  The MLP's and the
    keys' widths come from config.json (or the toy's architecture) where one is found."""
    kind = source_kind(spec["source"])
    candidates = []
    if kind == "local":
        candidates.append(Path(spec["source"]) / "config.json")
    elif kind == "hub":
        candidates.append(_hub_config(spec["source"], spec.get("revision")))
    if model_folder is not None:
        candidates.append(Path(model_folder) / "config.json")
    shape = None
    for path in candidates:
        cfg = _read_json(path) if path is not None else None
        if cfg and cfg.get("vocab_size"):
            shape = config_size(cfg, f"config.json ({path})")
            break
    if shape is None and kind == "toy":
        shape = _toy_size(spec)
    found = _read_json(Path(card))
    if found and found.get("parameters"):
        widths = {k: getattr(shape, k) for k in ("d_mlp", "kv_width", "gated", "head_width")} if shape else {}
        return Size(
            found["parameters"],
            found["n_layers"],
            found["d_model"],
            found["vocab"],
            card_tokens(found),
            "model card",
            n_heads=found.get("n_heads"),
            prefix=card_prefix(found),
            **widths,
        )
    if shape is not None:
        return shape
    if spec.get("parameters"):
        # layers and width unknown: GPT-J's, scaled to the count (a cube root: both grow with it)
        scale = (spec["parameters"] / GPTJ_PARAMETERS) ** (1 / 3)
        shape = round(28 * scale), round(4096 * scale), 50_400
        return Size(int(spec["parameters"]), *shape, None, "registry key parameters")
    return None


def _toy_size(spec: dict) -> Size:
    """A toy's size from its registry architecture."""
    arch = spec["toy"]
    d, L = arch["d_model"], arch["n_layers"]
    vocab = spec.get("number_limit", 399) + 1 + 256  # the numbers and the prompts' words
    cfg = {
        "hidden_size": d,
        "num_hidden_layers": L,
        "num_attention_heads": arch["n_heads"],
        "num_key_value_heads": arch.get("n_kv_heads", arch["n_heads"]),
        "intermediate_size": arch.get("d_mlp", 4 * d),
        "vocab_size": vocab,
        "model_type": spec.get("family"),
        "tie_word_embeddings": arch.get("tie_embeddings", False),
    }
    return config_size(cfg, "registry toy architecture")


def prompt_tokens(spec: dict) -> int:
    """An upper bound on a prompt's tokens before the card counts them: the longest template
    with its numbers at the most digits, one token a character, and a BOS."""
    digits = len(str(spec.get("number_limit", 999)))
    longest = max(len(t.replace("{a}", "9" * digits).replace("{b}", "9" * digits)) for t in spec["prompts"].values())
    return longest + 1


def runs_on_gpu(device: str) -> bool:
    """Whether model jobs run on a GPU under config key ``device``: cuda, or auto on a machine
    with an NVIDIA driver (the Slurm profile sets cuda)."""
    return device == "cuda" or (device == "auto" and Path("/proc/driver/nvidia").exists())


def run_bytes(spec: dict, on_gpu: bool) -> int:
    """Bytes of a weight or activation as the model runs (helixclock.lm.models.run_dtype): the
    registry's dtype, float16 as float32 on the CPU."""
    dtype = spec.get("dtype", "float32")
    return 4 if dtype == "float16" and not on_gpu else DTYPE_BYTES[dtype]


def job_work(size: Size | None, spec: dict, batch_size: int, counts: dict) -> memory.Work:
    """The :class:`helixclock.jobs.memory.Work` of a model's jobs: ``counts`` (config keys, the
    registry's overrides applied, and ``add_rows``/``task_rows``: correct prompts) with the
    prompt's tokens from ``size`` (bounded by its characters before the card)."""
    several = spec.get("number_tokens") == "several"
    tokens = (size.tokens if size is not None else None) or prompt_tokens(spec)
    fields = set(memory.Work.__dataclass_fields__)
    return memory.Work(
        batch=batch_size,
        tokens=tokens,
        prefix=size.prefix if size is not None else 0,
        answer=ANSWER_TOKENS if several else 1,
        several=several,
        **{k: v for k, v in counts.items() if k in fields and v is not None},
    )


def _peak(rule: str, size: Size, spec: dict, work: memory.Work, on_gpu: bool) -> tuple[int, int, dict]:
    """(weights, items beside them, resident items) of a model job in bytes on the GPU or the CPU."""
    nbytes = run_bytes(spec, on_gpu)
    weights = size.parameters * nbytes
    resident, _ = memory.job_items(rule, size.shape(nbytes), work)
    return weights, memory.job_peak_bytes(rule, size.shape(nbytes), work, weights) - weights, resident


def gpu_job_mb(rule: str, size: Size | None, spec: dict, work: memory.Work) -> int:
    """A model job's GPU memory (MB, resource ``gpu_mem_mb``): the sum of what it holds there at
    once (:func:`helixclock.jobs.memory.job_peak_bytes`), whatever the attempt (a retry holds no more
    on the GPU: on CUDA out-of-memory the engine halves its batch itself); 0 where the size is
    unknown."""
    if size is None or rule == "train_toy":
        return 0
    weights, items, _ = _peak(rule, size, spec, work, on_gpu=True)
    return math.ceil((weights + items) / MB)


def model_job_mb(
    rule: str, size: Size | None, spec: dict, work: memory.Work, on_gpu: bool, attempt: int, extra_bytes: int = 0
) -> int:
    """A model job's host memory (MB, resource ``mem_mb``), :data:`HOST_MARGIN` x what it holds,
    :data:`MIN_MODEL_MB` at least, times the attempt.  On the CPU: :data:`HOST_CPU_MB`, the
    weights and every item of :func:`helixclock.jobs.memory.job_peak_bytes` (activations live in host
    memory), and the cache datasets it reads (``extra_bytes``) beyond those items.  On a GPU
    (``on_gpu``): :data:`HOST_GPU_MB` (the CUDA context and libraries), the weights (read through
    host memory while loading) and the cache datasets it reads."""
    if size is None:
        return MIN_MODEL_MB * attempt
    weights, items, resident = _peak(rule, size, spec, work, on_gpu)
    if on_gpu:
        held = HOST_GPU_MB * MB + weights + extra_bytes
    else:
        cached = sum(v for k, v in resident.items() if k.startswith("cache"))
        held = HOST_CPU_MB * MB + weights + items + max(0, extra_bytes - cached)
    return max(MIN_MODEL_MB, math.ceil(HOST_MARGIN * held / MB)) * attempt


def model_job_minutes(rule: str, size: Size | None, attempt: int) -> int:
    """A model job's runtime (minutes): :data:`GPTJ_MINUTES` of its rule scaled by parameters x
    layers, :data:`MIN_MINUTES` at least, times the attempt."""
    scale = size.parameters * size.n_layers / GPTJ_SIZE if size is not None else 0.0
    return max(MIN_MINUTES, math.ceil(GPTJ_MINUTES[rule] * scale)) * attempt


# -- the residual cache ------------------------------------------------------------------------------
def cache_dataset_bytes(path: str | Path, datasets, size: Size | None, numbers: int, dtype: str) -> int:
    """Bytes of ``datasets`` of the residual cache: their shapes in the file where it exists,
    else every a+b prompt (or the ``numbers`` bare numbers) at every layer of ``size``'s width in
    ``dtype``; 0 where neither is known."""
    path = Path(path)
    if path.exists():
        # deferred: h5py only once a cache exists (its datasets' shapes, no data read)
        import h5py

        with h5py.File(path, "r") as f:
            return sum(int(math.prod(f[k].shape)) * f[k].dtype.itemsize for k in datasets if k in f)
    if size is None:
        return 0
    per_row = (size.n_layers + 1) * size.d_model * DTYPE_BYTES[dtype]
    rows = {"a": ADD_PROMPTS, "b": ADD_PROMPTS, "last": ADD_PROMPTS, "numbers": numbers}
    return sum(rows[k] * per_row if k in rows else ADD_PROMPTS * 2 * 8 for k in datasets)


def reader_mb(data_bytes: int, attempt: int) -> int:
    """A table job's memory (MB) for ``data_bytes`` it reads: :data:`CACHE_COPIES` copies and
    :data:`CPU_OVERHEAD_MB`, :data:`MIN_MEM_MB` at least, times the attempt."""
    return max(MIN_MEM_MB, math.ceil(CACHE_COPIES * data_bytes / MB) + CPU_OVERHEAD_MB) * attempt


GGUF_UNKNOWN_MB = 16_000  # install_gguf of a model whose registry entry gives no parameters


def gguf_mb(parameters: float | None, attempt: int) -> int:
    """install_gguf's memory (MB): :data:`HOST_MARGIN` x (:data:`HOST_CPU_MB` and the model
    dequantised to float32 twice, the model and the copy it saves), from the registry's
    ``parameters``, :data:`MIN_MODEL_MB` at least; :data:`GGUF_UNKNOWN_MB` without them.

    Held against the true peaks (``ru_maxrss``, not the benchmark file's samples, which come every
    30 s after a job's first 15 s and missed SmolLM2's conversion): SmolLM2-135M 1,195 MB asked
    2,207 (1.85 x), Gemma-3-270M 3,265 MB asked 3,703 (1.13 x; its 262,144-token vocabulary is
    rebuilt in Python beside the weights)."""
    if not parameters:
        return GGUF_UNKNOWN_MB * attempt
    held = HOST_CPU_MB * MB + 2 * DTYPE_BYTES["float32"] * parameters
    return max(MIN_MODEL_MB, math.ceil(HOST_MARGIN * held / MB)) * attempt


def check_rules(model_jobs, readers) -> None:
    """Every model job has a runtime here and every reader of the cache its datasets (the
    Snakefile calls this with the rules that declare them)."""
    missing = sorted(set(model_jobs) - set(GPTJ_MINUTES)) + sorted(set(readers) - set(CACHE_DATASETS))
    if missing:
        raise ValueError(f"helixclock.jobs.placement has no runtime or cache datasets for rule(s) {', '.join(missing)}")

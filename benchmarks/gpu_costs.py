"""What the paper's models cost on a GPU: GPU memory, host memory, disk and GPU time of the
whole DAG for GPT-J-6B, Pythia-6.9B and Llama-3.1-8B, written to docs/gpu-costs.md.

From the workload model of benchmarks/paper_shape.py (benchmarks/gptj_workload.py: the forward
passes each model job makes, as formulas of the model's shape, the prompts' tokens and the
config's counts), in four steps:

1. Counting.  Every model job's library calls run on a tiny random GPT-J (gptj_counting.py), with
   hooks summing the token-rows through the blocks and the unembedding, the rows with gradients
   and the passes.  Where a job's counts differ from its formula (the code has moved on since the
   formula was written), its FLOPs are scaled by counted/formula FLOPs at the tiny shape: the
   correction column of the job table.
2. Each model's shape: its layers, width, heads, MLP (gated for Llama), vocabulary and
   grouped-query attention (Llama-3: 8 key/value heads of 32), its parameters as the model card
   counts them (on the meta device), its prompts' token lengths (GPT-2's BPE, GPT-J's own
   tokenizer; for Pythia and Llama a stand-in: within a few tokens of their own) and its a+b
   accuracy in the paper (Table A1; the other tasks' at GPT-J's).
3. GPU time: FLOPs on one H100 SXM (989 TFLOP/s dense bf16) at 30% of its peak and, as a
   pessimistic bound, 10%, plus loading the weights in each model job (at an assumed 1 GB/s) and
   each forward pass's Python/nnsight overhead (the tiny model's measured seconds a pass on this
   CPU, an upper bound of what a GPU job spends outside its kernels).
4. Memory and disk, analytic: GPU memory is the weights and the largest activations of a job
   (gptj_workload.memory: a forward batch's logits, a direct-effect chunk, the helix job's cache
   tensors); host memory is what the workflow asks of Slurm for the job (helixclock.placement,
   from the card); disk is the residual cache (float32, every layer of the correct a+b prompts' a,
   b and last tokens and of the bare numbers).

Nothing here ran on a GPU (none was available): the counts and the tiny model's seconds a pass are
measured; every GPU figure is an estimate.  Run from the repository root:
``.venv/bin/python benchmarks/gpu_costs.py`` (about 30 s; --out - prints the page instead).
The last line is JSON.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from common import emit
from gptj_counting import count_tiny, tiny_config
from gptj_timing import gpt2_tokenizer
from gptj_workload import (
    H100_PEAK_TFLOPS,
    JOBS,
    PAPER_ACCURACY,
    Shape,
    counts_from,
    fabricated_tables,
    geometry,
    memory,
    read_config,
    svd_flops,
    totals,
)

from helixclock import placement
from helixclock.config import load_registry

ROOT = Path(__file__).resolve().parents[1]
# the paper's models: shapes of their hub configs, parameters as their model cards count them
SHAPES = {
    "gptj": Shape(n_layers=28, n_heads=16, d_model=4096, d_mlp=16384, vocab=50400),
    "pythia": Shape(n_layers=32, n_heads=32, d_model=4096, d_mlp=16384, vocab=50432),
    "llama": Shape(
        n_layers=32, n_heads=32, d_model=4096, d_mlp=14336, vocab=128256, parallel=False, kv_ratio=0.25, mlp_matrices=3
    ),
}
PARAMETERS = {"gptj": 6_050_882_784, "pythia": 6_857_302_016, "llama": 8_030_261_248}
NAMES = {"gptj": "GPT-J-6B", "pythia": "Pythia-6.9B", "llama": "Llama-3.1-8B"}
ADD_ACCURACY = {"gptj": 0.805, "pythia": 0.772, "llama": 0.980}  # Table A1
LOAD_GB_PER_S = 1.0  # reading the weights in each model job (a shared file system's rate, assumed)
UTILISATION, PESSIMISTIC = 0.3, 0.1


def flops_of(counted: dict, shape: Shape, ctx: int) -> float:
    """FLOPs of counted rows (gptj_workload.totals' formula, from rows instead of calls)."""
    return (
        counted["block_rows"] * shape.n_layers * shape.block_flops(ctx)
        + counted["unembed_rows"] * shape.unembed_flops
        + counted["grad_rows"] * shape.backward_flops(ctx)
    )


def corrections(cfg: dict, entry: dict, batch: int) -> tuple[dict[str, float], float, list[str]]:
    """Counted over formula FLOPs of each job on the tiny GPT-J, the measured seconds a pass, and
    the jobs whose formula no longer matches the code."""
    got, tiny, geo, counts = count_tiny(tiny_config(cfg), entry, batch)
    ctx = geo.prompts["add"].length
    out, drifted = {}, []
    for job, fn in JOBS.items():
        want = totals(fn(tiny, geo, counts), tiny, ctx)
        out[job] = flops_of(got[job], tiny, ctx) / want["flops"]
        if any(want[k] != got[job][k] for k in ("block_rows", "unembed_rows", "grad_rows", "passes")):
            drifted.append(job)
    passes = sum(v["passes"] for v in got.values())
    return out, sum(v["seconds"] for v in got.values()) / max(1, passes), drifted


def model_costs(name: str, cfg: dict, registry: dict, correction: dict, s_per_pass: float) -> dict:
    shape, entry = SHAPES[name], registry[name]
    tok = gpt2_tokenizer()
    tasks = tuple(cfg["accuracy"]["tasks"])
    geo = geometry(tok, entry["prompts"], tasks, cfg["cache"]["largest_bare_number"], name)
    accuracy = {**PAPER_ACCURACY, "add": ADD_ACCURACY[name]}
    tables = fabricated_tables(tok, tasks, accuracy, cfg["seed"])
    counts = counts_from(cfg, entry, tables, cfg["batch_size"], top_heads=cfg["clock"]["top_heads"])
    ctx = max(g.length for g in geo.prompts.values())
    weights_gb = PARAMETERS[name] * 2 / 1e9  # bf16 / fp16
    size = placement.Size(PARAMETERS[name], shape.n_layers, shape.d_model, shape.vocab, ctx, "benchmark")
    jobs = {}
    for job, fn in JOBS.items():
        calls = fn(shape, geo, counts)
        t = totals(calls, shape, geo.prompts["add"].length)
        flops = t["flops"] * correction[job]
        cache = 0
        if job in placement.CACHE_DATASETS:
            per_row = (shape.n_layers + 1) * shape.d_model * 4
            rows = {"a": counts.correct["add"], "b": counts.correct["add"], "last": counts.correct["add"]}
            rows["numbers"] = counts.numbers
            cache = sum(rows.get(k, 0) * per_row for k in placement.CACHE_DATASETS[job])
        jobs[job] = {
            "passes": t["passes"],
            "pflop": flops / 1e15,
            "correction": correction[job],
            "gpu_s": flops / (H100_PEAK_TFLOPS * 1e12 * UTILISATION),
            "gpu_s_pessimistic": flops / (H100_PEAK_TFLOPS * 1e12 * PESSIMISTIC),
            "overhead_s": t["passes"] * s_per_pass + weights_gb / LOAD_GB_PER_S,
            "host_mb": placement.model_job_mb(size, entry, cfg["batch_size"], 1, cache),
            "runtime_min": placement.model_job_minutes(job, size, 1),
        }
    mem = memory(shape, counts, geo, None)
    activations = max(v for k, v in mem.items() if k not in ("weights_gb", "residual_cache_file_gb"))
    return {
        "name": NAMES[name],
        "parameters": PARAMETERS[name],
        "weights_gb": weights_gb,
        "gpu_gb": weights_gb + activations,
        "largest_activations": max((k for k in mem if k not in ("weights_gb", "residual_cache_file_gb")), key=mem.get),
        "host_mb": max(j["host_mb"] for j in jobs.values()),
        "cache_gb": mem["residual_cache_file_gb"],
        "correct_add": counts.correct["add"],
        "prompt_tokens": geo.prompts["add"].length,
        "pflop": sum(j["pflop"] for j in jobs.values()),
        "svd_tflop": svd_flops(shape, counts) / 1e12,
        "gpu_min": sum(j["gpu_s"] for j in jobs.values()) / 60,
        "gpu_min_pessimistic": sum(j["gpu_s_pessimistic"] for j in jobs.values()) / 60,
        "overhead_min": sum(j["overhead_s"] for j in jobs.values()) / 60,
        "jobs": jobs,
    }


def page(costs: dict, s_per_pass: float, drifted: list[str], cfg: dict) -> str:
    rows = [
        "| model | parameters | GPU memory | host memory (largest job) | disk: residual cache | GPU time, whole DAG |",
        "|---|---|---|---|---|---|",
    ]
    for c in costs.values():
        rows.append(
            f"| {c['name']} | {c['parameters'] / 1e9:.2f} B | {c['gpu_gb']:.0f} GB ({c['weights_gb']:.1f} GB weights) "
            f"| {c['host_mb'] / 1000:.0f} GB | {c['cache_gb']:.1f} GB | {c['gpu_min']:.0f} min compute "
            f"({c['gpu_min_pessimistic']:.0f} at 10%) + {c['overhead_min']:.0f} min loading and overhead |"
        )
    jobs = [
        "| job | "
        + " | ".join(f"{c['name']} passes | PFLOP | min (30% / 10%) | runtime asked" for c in costs.values())
        + " |",
        "|---|" + "---|---|---|---|" * len(costs),
    ]
    for job in JOBS:
        cells = []
        for c in costs.values():
            j = c["jobs"][job]
            cells.append(
                f"{j['passes']} | {j['pflop']:.2f} | {(j['gpu_s'] + j['overhead_s']) / 60:.1f} / "
                f"{(j['gpu_s_pessimistic'] + j['overhead_s']) / 60:.1f} | {j['runtime_min']} min"
            )
        jobs.append(f"| {job} | " + " | ".join(cells) + " |")
    corrected = ", ".join(f"{job} ×{next(iter(costs.values()))['jobs'][job]['correction']:.2f}" for job in drifted)
    return "\n".join(
        [
            "# What the paper's models cost on a GPU",
            "",
            "<!-- generated by benchmarks/gpu_costs.py: edit that script, not this page -->",
            "",
            "The whole DAG for one model (`--config models='[\"gptj\"]'`, and likewise `pythia` and `llama`)",
            f"with the default config (`config/config.yaml`: batch {cfg['batch_size']}, "
            f"{cfg['helix']['n_pairs']} helix pairs, {cfg['clock']['n_pairs']} clock pairs, "
            f"{cfg['neurons']['attribution_pairs']} attribution pairs), one job at a time on one H100-class GPU.",
            "**Every GPU figure is an estimate** (no GPU was at hand when this was written); what is",
            "measured is the forward passes each job makes (counted by hooks on a tiny GPT-J running the",
            "jobs' own library calls) and the parameters (counted on PyTorch's meta device).",
            "",
            *rows,
            "",
            "- **GPU memory**: the weights in bfloat16/float16 and the largest activations any job holds",
            "  (analytic: a forward batch's logits, a direct-effect chunk, the helix job's cache tensors). An",
            "  80 GB card holds each model with room; a 24 GB card holds GPT-J and Pythia at a smaller",
            "  `batch_size` (a job halves its batch on CUDA out-of-memory by itself).",
            "- **Host memory**: what the workflow asks Slurm for the largest model job (`mem_mb`,",
            "  `helixclock.placement`, from the model card: weights, a forward batch's float32 logits and",
            "  residuals, the cache datasets it reads, 3 GB); a retry asks for twice as much.",
            "- **Disk**: the residual cache, float32, every layer of the correct a+b prompts' a, b and last",
            "  tokens and of the bare numbers 0..360 (correct prompts at the paper's accuracy); the Hugging",
            "  Face cache holds the weights besides (their files' size: float32 or bfloat16 as published).",
            "- **GPU time**: the jobs' FLOPs on one H100 SXM at 30% of its 989 TFLOP/s bf16 peak (10% in",
            "  brackets), then, the larger part, each job's loading of the weights (assumed 1 GB/s) and each",
            f"  forward pass's Python/nnsight overhead (the tiny model's {s_per_pass * 1e3:.0f} ms a pass, measured on",
            "  this CPU: an upper bound). Not in it: the fits' float64 SVDs "
            + ", ".join(f"({c['name']} {c['svd_tflop']:.0f} TFLOP)" for c in costs.values())
            + " and HDF5 I/O.",
            "- Prompt lengths are GPT-2's BPE (GPT-J's own tokenizer; Pythia's and Llama's within a few",
            "  tokens). Correct a+b prompts: "
            + ", ".join(f"{c['name']} {c['correct_add']:,}" for c in costs.values())
            + " (Table A1's accuracies); the other tasks at GPT-J's (Table C1).",
            *(
                [
                    f"- The workload formulas of {', '.join(drifted)} no longer match the counts of the code",
                    f"  they describe; their FLOPs are scaled by counted/formula at the tiny shape ({corrected}).",
                ]
                if drifted
                else []
            ),
            "",
            "## Per model job",
            "",
            "Forward passes, PFLOP and minutes (compute at 30% / 10% of the peak, with loading and overhead);",
            "`runtime asked`: the first try's Slurm time limit the rule declares (a retry asks for twice).",
            "",
            *jobs,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "gpu-costs.md"), help="the page ('-': print it)")
    parser.add_argument("--check-batch", type=int, default=128, help="engine batch of the tiny counting run")
    args = parser.parse_args()
    cfg, gptj = read_config()
    registry = load_registry(ROOT / "config" / "models.yaml")
    correction, s_per_pass, drifted = corrections(cfg, gptj, args.check_batch)
    costs = {m: model_costs(m, cfg, registry, correction, s_per_pass) for m in SHAPES}
    text = page(costs, s_per_pass, drifted, cfg)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(text)
    emit(
        {
            "benchmark": "gpu_costs",
            "drifted_formulas": drifted,
            "s_per_pass_tiny": round(s_per_pass, 4),
            "models": {
                m: {k: (round(v, 3) if isinstance(v, float) else v) for k, v in c.items() if k != "jobs"}
                for m, c in costs.items()
            },
            "jobs": {
                m: {j: {k: round(v, 3) for k, v in d.items()} for j, d in c["jobs"].items()} for m, c in costs.items()
            },
            "minutes_check": {m: math.ceil(c["gpu_min"] + c["overhead_min"]) for m, c in costs.items()},
        }
    )


if __name__ == "__main__":
    main()

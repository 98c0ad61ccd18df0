"""What the paper's models cost on a GPU: GPU memory, host memory, disk and GPU time of the whole
DAG for GPT-J-6B, Pythia-6.9B and Llama-3.1-8B, written to docs/gpu-costs.md.

From three committed inputs, each written by a command:

1. The plan (benchmarks/measured/plan_counts.json, ``--count``): every model job's forward passes,
   token-rows, unembedding rows and rows with a backward pass, counted by running the job's own
   library calls on a narrow model of each paper model's layers, heads and vocabulary at the
   config's counts (benchmarks/plan.py), and the same for the tiny GPT-J of benchmarks/counting.py,
   which tests/unit/test_gpu_costs.py recounts: when the code changes a job's plan, that test
   fails until the plan and this page are regenerated.
2. Measured on a lent NVIDIA H200 (benchmarks/measured/gpu_probe_h200_*.jsonl,
   benchmarks/gpu_session.sh): every job's library calls at GPT-J-6B's and Llama-3.1-8B's full
   shapes, their seconds, passes, rows and the GPU memory allocated at their peak.  Where a model
   was measured the page takes its passes from the measurement: the narrow plan makes the same
   passes and rows for seven of the ten jobs and fewer for head_patching, neuron_attribution and
   neuron_fit_eval (what they select or how they chunk differs at full width; not isolated):
   tests/unit/test_gpu_costs.py checks which.
3. The residual cache's size from its datasets' shapes.  What each job holds in GPU and host
   memory, summed from its items and set against the measured peaks, is docs/memory.md's
   (benchmarks/memory_table.py); this page gives the measured GPU peaks.

GPU time of a job: its measured seconds where it was measured; else (Pythia, and Llama's
head_patching, which the measuring call's time limit left out) the measured seconds of the same
job of the nearest measured model scaled by the FLOPs of the two plans.  Each model job also
starts a process, imports and loads its weights: :data:`START_S` (what the embedded default's
model jobs took on the H200 beside their work: 13.6-20.3 s a job) and the weights at
:data:`LOAD_GB_PER_S` (assumed: a shared file system's rate).

Run from the repository root: ``.venv/bin/python benchmarks/gpu_costs.py`` (the page, seconds);
``--count`` counts the plan first (the models plan_counts.json lacks; ``--again`` all of them).  The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

from common import emit
from plan import (
    ADD_ACCURACY,
    NAMES,
    PAPER_ACCURACY,
    PARAMETERS,
    ROOT,
    SHAPES,
    fabricated_tables,
    flops,
    geometry,
    gpt2_tokenizer,
    read_config,
    svd_flops,
)

MEASURED = ROOT / "benchmarks" / "measured"
PLAN = MEASURED / "plan_counts.json"
PROBES = {"gptj": MEASURED / "gpu_probe_h200_gptj.jsonl", "llama": MEASURED / "gpu_probe_h200_llama.jsonl"}
PAGE = ROOT / "docs" / "gpu-costs.md"
START_S = 15.0  # a model job's process start, imports and CUDA context (the toys' jobs on the H200)
LOAD_GB_PER_S = 1.0  # reading the weights in each model job (a shared file system's rate, assumed)
KEYS = ("passes", "block_rows", "unembed_rows", "grad_rows")


def count_all(cfg: dict, order: tuple[str, ...], again: bool) -> None:
    """Count the plan of the tiny GPT-J and of the paper models ``order`` names, writing
    benchmarks/measured/plan_counts.json after each (a model takes tens of minutes on 2 cores:
    an interrupted count keeps the models it finished, and a rerun counts only the rest, unless
    ``again``)."""
    # deferred: counting imports every stage (only --count needs it)
    from counting import count_plan, count_tiny, tiny_config

    done = {} if again or not PLAN.exists() else json.loads(PLAN.read_text())
    done.setdefault("commit", commit())
    for name in ("tiny", *order):
        if name in done:
            continue
        if name == "tiny":
            counts = count_tiny(tiny_config(cfg), read_config("gptj")[1], 128)
            done[name] = {job: {k: int(c[k]) for k in KEYS} for job, c in counts.items()}
        else:
            done[name] = count_plan(name, cfg)
        PLAN.write_text(json.dumps(done, indent=1) + "\n")
        print(f"counted {name}", flush=True)


def read_probe(path: Path) -> dict[str, dict]:
    """The measured rows of one model (job -> row), without the skipped ones."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["job"]: r for r in rows if r.get("part") != "tiny" and "skipped" not in r}


def plan_differences(plan: dict, probes: dict[str, dict]) -> list[str]:
    """Where a measured job's passes or rows are not the narrow plan's (each a line; models whose
    plan was not counted are left out)."""
    return [
        f"{NAMES[name]} {job} {k}: measured {row[k]:,}, narrow plan {plan[name][job][k]:,}"
        for name, rows in probes.items()
        if name in plan
        for job, row in rows.items()
        if job in plan[name]
        for k in KEYS
        if row[k] != plan[name][job][k]
    ]


def add_length(name: str) -> int:
    """Tokens of model ``name``'s a+b prompt (GPT-2's BPE)."""
    return geometry(gpt2_tokenizer(), read_config(name)[1]["prompts"], ("add",), name)["add"].length


def model_costs(name: str, cfg: dict, plan: dict, probes: dict[str, dict]) -> dict | None:
    """One model's page rows: per job passes, PFLOP, GPU seconds (measured or scaled) and peak
    GPU memory measured; the model's weights, cache, correct prompts and totals.  None for a model
    neither measured nor counted; a job neither measured nor counted is None and out of the totals."""
    measured = probes.get(name, {})
    if not measured and name not in plan:
        return None
    shape = SHAPES[name][0]
    entry = read_config(name)[1]
    tok = gpt2_tokenizer()
    tasks = tuple(cfg["accuracy"]["tasks"])
    geo = geometry(tok, entry["prompts"], tasks, name)
    ctx = geo["add"].length
    tables = fabricated_tables(tok, tasks, {**PAPER_ACCURACY, "add": ADD_ACCURACY[name]}, cfg["seed"])
    correct = int(tables["add"]["correct"].sum())
    weights_gb = PARAMETERS[name] * 2 / 1e9  # bfloat16 / float16
    jobs = {}
    for job in plan["tiny"]:  # every model job, in the plan's order
        row, narrow = measured.get(job), plan.get(name, {}).get(job)
        if row:
            # a measured model's passes and rows are the measurement's (the narrow count falls short
            # on three jobs: plan_differences)
            counted, seconds, how = {k: row[k] for k in KEYS}, row["seconds"], "measured"
        elif narrow and job in plan.get("gptj", {}):
            ref = "gptj"  # the nearest measured model with this job measured
            # scaled by the two narrow plans' FLOPs (like with like: both fall short alike)
            ratio = flops(narrow, shape, ctx) / flops(plan[ref][job], SHAPES[ref][0], add_length(ref))
            counted, seconds, how = narrow, probes[ref][job]["seconds"] * ratio, f"{NAMES[ref]}'s × FLOPs"
        else:
            jobs[job] = None
            continue
        jobs[job] = {
            **counted,
            "pflop": flops(counted, shape, ctx) / 1e15,
            "seconds": seconds,
            "how": how,
            "gpu_peak_gb": row["gpu_peak_allocated_gb"] if row else None,
        }
    done = {j: c for j, c in jobs.items() if c}
    numbers = cfg["cache"]["largest_bare_number"] + 1
    cache_gb = (3 * correct + numbers) * (shape.n_layers + 1) * shape.d_model * 4 / 1e9
    work = sum(j["seconds"] for j in done.values())
    overhead = len(jobs) * (START_S + weights_gb / LOAD_GB_PER_S)
    peaks = {j: c["gpu_peak_gb"] for j, c in done.items() if c["gpu_peak_gb"]}
    return {
        "name": NAMES[name],
        "parameters": PARAMETERS[name],
        "weights_gb": weights_gb,
        "gpu_peak_gb": max(peaks.values()) if peaks else None,
        "gpu_peak_job": max(peaks, key=peaks.get) if peaks else None,
        "cache_gb": cache_gb,
        "correct_add": correct,
        "prompt_tokens": ctx,
        "pflop": sum(j["pflop"] for j in done.values()),
        "svd_tflop": svd_flops(shape, correct, min(cfg["clock"]["fit_prompts"], correct)) / 1e12,
        "work_min": work / 60,
        "overhead_min": overhead / 60,
        "passes": sum(j["passes"] for j in done.values()),
        "left_out": [j for j, c in jobs.items() if c is None],
        "jobs": jobs,
    }


def _gb(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} GB"


def page(costs: dict, cfg: dict, differences: list[str], commit: str, counted: tuple[str, ...] = ()) -> str:
    """docs/gpu-costs.md (``counted``: the paper models whose narrow plan was counted)."""
    summary = [
        "| model | parameters | weights | GPU memory, largest job (measured) | disk: residual cache "
        "| GPU time, whole DAG |",
        "|---|---|---|---|---|---|",
    ]
    absent = [NAMES[m] for m, c in costs.items() if c is None]
    costs = {m: c for m, c in costs.items() if c is not None}
    for c in costs.values():
        peak = f"{_gb(c['gpu_peak_gb'])} ({c['gpu_peak_job']})" if c["gpu_peak_gb"] else "not measured"
        without = f"; without {', '.join(c['left_out'])}, neither measured nor counted" if c["left_out"] else ""
        summary.append(
            f"| {c['name']} | {c['parameters'] / 1e9:.2f} B | {c['weights_gb']:.1f} GB | {peak} "
            f"| {c['cache_gb']:.1f} GB "
            f"| {c['work_min'] + c['overhead_min']:.0f} min ({c['work_min']:.1f} of work, "
            f"{c['overhead_min']:.1f} starting and loading{without}) |"
        )
    for name in absent:
        summary.append(f"| {name} | not measured, its plan not counted (below) | | | | |")
    header = " | ".join(f"{c['name']} passes | PFLOP | s on the H200 | GPU peak" for c in costs.values())
    rows = [f"| job | {header} |", "|---|" + "---|---|---|---|" * len(costs)]
    first = next(iter(costs.values()))
    for job in first["jobs"]:
        cells = []
        for c in costs.values():
            j = c["jobs"][job]
            if j is None:
                cells.append("— | — | not measured | —")
                continue
            s = f"{j['seconds']:.1f}" if j["how"] == "measured" else f"({j['seconds']:.0f})"
            cells.append(f"{j['passes']} | {j['pflop']:.2f} | {s} | {_gb(j['gpu_peak_gb'])}")
        rows.append(f"| {job} | " + " | ".join(cells) + " |")
    return "\n".join(
        [
            "# What the paper's models cost on a GPU",
            "",
            "<!-- generated by benchmarks/gpu_costs.py: edit that script, not this page -->",
            "",
            "Each job's GPU and host memory, summed from what it holds at once and set against measured peaks,",
            "with what a 24, 40 or 80 GB card holds: [Memory](memory.md).",
            "",
            "The whole DAG for one model (`--config models='[\"gptj\"]'`, and likewise `pythia` and `llama`)",
            f"with the default config (`config/config.yaml`: batch {cfg['batch_size']}, "
            f"{cfg['helix']['n_pairs']} helix pairs, {cfg['clock']['n_pairs']} clock pairs, "
            f"{cfg['neurons']['attribution_pairs']} attribution pairs), one job at a time on one GPU.",
            "Measured on a lent NVIDIA H200 (torch 2.11.0+cu130, bfloat16): every model job's own library",
            "calls at GPT-J-6B's and Llama-3.1-8B's full shapes with random weights, at the config's counts,",
            "on accuracy tables fabricated at the paper's accuracies (`benchmarks/gpu_probe.py`; the rows in",
            "`benchmarks/measured/`); their passes and rows are the measurement's. The plan counted on a narrow",
            "model of a paper model's layers, heads and vocabulary (`benchmarks/plan.py`, at commit "
            f"{commit}: {', '.join(NAMES[m] for m in SHAPES if m in counted) or 'none'}) is set against them below.",
            "",
            *summary,
            "",
            "- **GPU memory**: what torch allocated at the job's peak (`torch.cuda.max_memory_allocated`),",
            "  the weights included; Pythia-6.9B was not measured ([Memory](memory.md) sums its jobs' items).",
            "  Llama-3.1-8B was measured with GPT-J's a+b accuracy (80.5%, 8,050 correct prompts); at its",
            "  own 98% the residual cache holds 9,800 and the jobs that keep cache tensors on the GPU hold more.",
            "- **Disk**: the residual cache, float32, every layer of the correct a+b prompts' a, b and last",
            "  tokens and of the bare numbers (correct prompts at the paper's accuracy); the Hugging Face",
            "  cache holds the weights besides (about 54 GB for the three models as published).",
            "- **GPU time**: the measured seconds of each job's work (in brackets where scaled from the",
            "  nearest measured model by the two plans' FLOPs), and for each job a process start, imports",
            f"  and CUDA context ({START_S:.0f} s, what the embedded default's model jobs took on the H200)",
            f"  and loading the weights (at an assumed {LOAD_GB_PER_S:g} GB/s). The work includes the fits'",
            "  float64 SVDs on the GPU ("
            + ", ".join(f"{c['name']} {c['svd_tflop']:.0f} TFLOP" for c in costs.values())
            + ") and the HDF5 I/O.",
            "- Prompt lengths are GPT-2's BPE (GPT-J's own tokenizer; Pythia's and Llama's within a few",
            "  tokens). Correct a+b prompts: "
            + ", ".join(f"{c['name']} {c['correct_add']:,}" for c in costs.values())
            + " (Table A1's accuracies); the other tasks at GPT-J's (Table C1).",
            *(
                [
                    "- **The narrow count is not the full width's everywhere.** Where a model was measured,",
                    "  its passes and rows are the measurement's; the narrow model's count differs on:",
                    *(f"  - {d}" for d in differences),
                    "  Two causes. neuron_attribution, neuron_fit_eval and head_patching follow what they select",
                    "  or how they cut their work (heads and neurons chosen by their effects, chunks of a",
                    "  width-dependent size), which the narrow random model does not share with the full-width",
                    "  one; which of these it is was not isolated. helix_patching (the causal nested T = 100",
                    "  test), last_token_patching, mlp_patching and head_patching also changed their plans after",
                    "  the H200 measured them (the plan counted at a53d556 matched the probes but for three jobs):",
                    "  their measured rows are of the older code until a GPU measures them again. A model not",
                    "  measured takes the narrow count's passes and GPT-J-6B's measured seconds scaled by the two",
                    "  narrow plans' FLOPs (like with like).",
                ]
                if differences
                else ["- Every measured job made exactly its narrow plan's passes and rows."]
            ),
            *(
                [
                    f"- **{', '.join(absent)}: neither measured nor counted.** The lent GPU's 15 minutes went to",
                    "  GPT-J-6B and Llama-3.1-8B (Llama's head_patching did not fit in them). Counting a narrow plan",
                    "  runs every job's calls with the full vocabulary's logits: GPT-J-6B's took about 40 minutes",
                    "  on 2 cores beside other work, and Llama-3.1-8B's (128,256 tokens) was killed for memory at",
                    "  20 GB on a 24 GB machine. `benchmarks/gpu_costs.py --count pythia` counts it elsewhere.",
                ]
                if absent
                else []
            ),
            "",
            "## Per model job",
            "",
            "Forward passes, PFLOP, seconds of work on the H200 (in brackets: scaled) and the GPU memory",
            "allocated at the job's peak.",
            "",
            *rows,
            "",
        ]
    )


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return out.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(PAGE), help="the page ('-': print it)")
    parser.add_argument(
        "--count",
        nargs="*",
        metavar="MODEL",
        help="count the plan of these paper models (none named: all) and the tiny GPT-J",
    )
    parser.add_argument("--again", action="store_true", help="with --count: count every model again")
    args = parser.parse_args()
    cfg = read_config()[0]
    if args.count is not None:
        unknown = sorted(set(args.count) - set(SHAPES))
        if unknown:
            raise SystemExit(f"--count: no paper model {unknown}; the models are {sorted(SHAPES)}")
        count_all(cfg, tuple(args.count or SHAPES), args.again)
    if not PLAN.exists() or "tiny" not in json.loads(PLAN.read_text()):
        raise SystemExit(f"{PLAN.relative_to(ROOT)} lacks the tiny GPT-J's plan: count it first (--count gptj)")
    plan = json.loads(PLAN.read_text())
    probes = {name: read_probe(path) for name, path in PROBES.items()}
    costs = {name: model_costs(name, cfg, plan, probes) for name in SHAPES}
    counted = tuple(m for m in SHAPES if m in plan)
    text = page(costs, cfg, plan_differences(plan, probes), plan["commit"], counted)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
    emit(
        {
            "benchmark": "gpu_costs",
            "models": {m: c and {k: v for k, v in c.items() if k != "jobs"} for m, c in costs.items()},
        }
    )


if __name__ == "__main__":
    main()

"""Every model job's library calls on a GPU, measured: time, forward passes and the GPU memory
resident at each job's peak (``torch.cuda.max_memory_allocated``), for docs/gpu-costs.md.

Two parts, on the device given (``--device``; a GPU where one is lent, the CPU to try the script):

1. ``tiny``: the tiny random GPT-J of benchmarks/counting.py with every job on the device: each
   job runs there at all, and its counted passes and rows equal the CPU's.
2. ``gptj``: a random-weight model of GPT-J-6B's exact shape (28 layers, d 4096, 16 heads, MLP
   16,384, vocabulary 50,400; GPT-2's tokenizer, vendored in tests/data/gpt2) in the registry's
   dtype (bfloat16), each job's library calls at config/config.yaml's counts on accuracy tables
   fabricated at the paper's accuracies (Table A1, Table C1; GPT-J's a+b accuracy for every
   model): the calls benchmarks/plan.py counts, at full size.  Per job: seconds, forward passes,
   the GPU memory allocated at its peak (weights included) and reserved, and the process's
   resident host memory at its peak (sampled; the process holds the residual cache throughout).
   ``--budget`` seconds bound the part: a job that would start after it is skipped and says so.
   The helix fits (a CPU job in the DAG) are made on the device here, and not measured.

Each job's row is appended to ``--out`` (JSON lines) as soon as it ends, so an interrupted run
keeps what it measured; the last line printed is the whole result as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import torch
from counting import Counter, TinyRun, count_tiny, job_settings, run_jobs, tiny_config
from plan import PAPER_ACCURACY, SHAPES, fabricated_tables, gpt2_tokenizer, random_model, read_config

from helixclock.lm.models import run_dtype, wrap_model

GB = 1e9


class Skip(Exception):
    """A job not started: the part's time budget is spent."""


class HostPeak:
    """The process's resident memory, sampled every ``every`` seconds; :meth:`take` returns the
    largest since the last take."""

    def __init__(self, every: float = 0.05):
        self.proc, self.every, self.peak = psutil.Process(), every, 0
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.every)

    def take(self) -> int:
        out, self.peak = max(self.peak, self.proc.memory_info().rss), self.proc.memory_info().rss
        return out


class Meter:
    """``measure(job, fn)`` for :func:`counting.run_jobs`: runs ``fn`` with the device's peak
    statistics reset, records seconds and memory, appends the row to ``out``."""

    def __init__(self, part: str, device: torch.device, out: Path, budget: float):
        self.part, self.device, self.out, self.budget = part, device, out, budget
        self.t0, self.host, self.rows = time.perf_counter(), HostPeak(), []

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def __call__(self, job: str, fn):
        elapsed = time.perf_counter() - self.t0
        if elapsed > self.budget:
            self._write({"job": job, "skipped": f"budget of {self.budget:.0f} s spent ({elapsed:.0f} s)"})
            raise Skip(job)
        self._sync()
        if self.device.type == "cuda":
            gc.collect()
            torch.cuda.empty_cache()  # each job's reserved peak its own (a job is a process in the DAG)
            torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated() if self.device.type == "cuda" else 0
        self.host.take()
        t = time.perf_counter()
        result = fn()
        self._sync()
        row = {"job": job, "seconds": round(time.perf_counter() - t, 2)}
        counts = result[0] if isinstance(result, tuple) else result
        row |= {k: counts[k] for k in ("passes", "block_rows", "unembed_rows", "grad_rows")}
        if self.device.type == "cuda":
            row |= {
                "gpu_allocated_at_start_gb": round(before / GB, 3),
                "gpu_peak_allocated_gb": round(torch.cuda.max_memory_allocated() / GB, 3),
                "gpu_peak_reserved_gb": round(torch.cuda.max_memory_reserved() / GB, 3),
            }
        row["host_peak_rss_gb"] = round(self.host.take() / GB, 3)
        self._write(row)
        return result

    def _write(self, row: dict):
        row = {"part": self.part, **row}
        self.rows.append(row)
        with self.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


def tiny_part(cfg: dict, entry: dict, device: torch.device, out: Path) -> dict:
    """Part 1: the tiny counting run on ``device``, against the same run on the CPU."""
    t = time.perf_counter()
    got = count_tiny(tiny_config(cfg), entry, 128, device=str(device))
    seconds = time.perf_counter() - t
    cpu = count_tiny(tiny_config(cfg), entry, 128) if device.type != "cpu" else got
    keys = ("passes", "block_rows", "unembed_rows", "grad_rows")
    row = {
        "part": "tiny",
        "device": str(device),
        "seconds": round(seconds, 1),
        "passes": {job: c["passes"] for job, c in got.items()},
        "differ_from_cpu": [f"{job} {k}" for job in got for k in keys if got[job][k] != cpu[job][k]],
    }
    with out.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)
    return row


def model_part(
    name: str, cfg: dict, entry: dict, device: torch.device, out: Path, budget: float, small: bool = False
) -> list[dict]:
    """Part 2: every job at the shape of the paper's model ``name`` (gptj, pythia, llama; with
    ``small``, 2 narrow layers, to try the script on a CPU), its registry dtype and prompts and
    the config's counts on ``device``.  GPT-2's tokenizer stands in for Pythia's and Llama's (its
    prompts are within a few tokens of theirs; the vocabulary is the model's)."""
    shape, family = SHAPES[name]
    if small:
        shape = replace(shape, n_layers=2, n_heads=4, d_model=64, d_mlp=128)
    tok = gpt2_tokenizer()
    dtype = run_dtype(entry.get("dtype", "float32"), device)
    t = time.perf_counter()
    hf = random_model(shape, family, device, dtype)
    if device.type == "cuda":
        torch.cuda.synchronize()
    model = wrap_model(hf, tok, name=f"random-{name}", family=family)
    weights = sum(p.numel() * p.element_size() for p in hf.parameters())
    meter = Meter(name, device, out, budget)
    meter._write(
        {
            "job": "model",
            "seconds": round(time.perf_counter() - t, 1),
            "dtype": str(dtype),
            "parameters": sum(p.numel() for p in hf.parameters()),
            "weights_gb": round(weights / GB, 3),
            "batch_size": cfg["batch_size"],
        }
    )
    tasks = tuple(cfg["accuracy"]["tasks"])
    tables = fabricated_tables(tok, tasks, PAPER_ACCURACY, cfg["seed"])
    fit, neurons = job_settings(cfg)
    run = TinyRun(cfg, entry["prompts"], tok, shape, model, Counter(hf, model.adapter), cfg["batch_size"], fit, neurons)
    try:
        run_jobs(run, tables, meter)
    except Skip:
        pass
    return meter.rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--parts", default="tiny,gptj", help="comma list of tiny, gptj, pythia, llama")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds after which no gptj job starts")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/gpu_probe.jsonl"))
    parser.add_argument("--batch-size", type=int, default=None, help="the engine's batch (default: the config's)")
    parser.add_argument("--small", action="store_true", help="2 narrow layers and tiny counts (a try)")
    args = parser.parse_args()
    device = torch.device(args.device)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cfg, _ = read_config()
    if args.batch_size:
        cfg["batch_size"] = args.batch_size
    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": str(device)}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_total_gb"] = round(torch.cuda.get_device_properties(0).total_memory / GB, 1)
    print(json.dumps(info), flush=True)
    result = {"info": info}
    parts = args.parts.split(",")
    for part in parts:
        entry = read_config(part if part in SHAPES else "gptj")[1]
        if part == "tiny":
            result["tiny"] = tiny_part(cfg, entry, device, args.out)
        else:
            counts = tiny_config(cfg) if args.small else cfg
            result[part] = model_part(part, counts, entry, device, args.out, args.budget, args.small)
            gc.collect()
    print(json.dumps(result))


if __name__ == "__main__":
    main()

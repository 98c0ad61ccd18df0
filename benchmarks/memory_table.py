"""docs/memory.md: what each model job declares (mem_mb, gpu_mem_mb: the plan's resources, as a
dry run of the finished run's folder evaluates them with every input there) against what it used
(the peak its log records, or else max_rss of its benchmark file,
logs/{model}/{rule}-<hash>.benchmark.tsv), and the GPU model (helixclock.jobs.memory) against the
peaks measured on an H200 (benchmarks/measured/).

    python benchmarks/memory_table.py --run TITLE=FOLDER=CONFIG=MODEL,MODEL ... [--keep TITLE ...] [--out FILE]

Each run folder is planned through a temporary folder of links to its results/, resources/ and
logs/ (the run's own folder is only read).  ``--keep TITLE`` keeps the section of the page now at
``--out`` whose title starts with TITLE, as it is (a run whose folder is not here: the CI's tiny
run), with the command that wrote it.

    python benchmarks/memory_table.py --measured FOLDER=CONFIG=MODEL,MODEL

writes the model jobs' measured host peaks of a finished run and what its plan sizes them from
(benchmarks/measured/host_peaks_make_real.csv and host_plan_make_real.json,
helpers.memory.write_measured), which tests/unit/test_host_peaks.py holds the formula to.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))

from helpers.memory import MEASURED_PEAKS, MEASURED_PLAN, declared, measured_with_source, within, write_measured  # noqa: E402

from helixclock.jobs import memory, placement  # noqa: E402
from helixclock.project.outputs import MODEL_JOBS  # noqa: E402

MEASURED = REPO / "benchmarks" / "measured"


def host_rows(run: Path, configfile: Path, models: list[str]) -> list[str]:
    plan, peaks = declared(run, configfile, models), measured_with_source(run)
    rows = [
        "| model | job | declares mem_mb | peak (MB) | ratio | gpu_mem_mb |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (model, rule), (peak, source) in sorted(peaks.items()):
        if (model, rule) not in plan:
            continue
        res = plan[(model, rule)]
        mark = "" if within(res["mem_mb"], peak) else " ✗"
        how = "" if source == "log" else " (sampled)"
        rows.append(
            f"| {model} | {rule} | {res['mem_mb']:,} | {peak:,.0f}{how} | {res['mem_mb'] / peak:.2f}{mark} | "
            f"{res.get('gpu_mem_mb', '')} |"
        )
    return rows


# -- the paper's models on a GPU --------------------------------------------------------------------
CONFIGS = {  # their hub config.json's shapes, as helixclock.jobs.placement.config_size reads them
    "gptj": {
        "n_embd": 4096,
        "n_layer": 28,
        "n_head": 16,
        "vocab_size": 50400,
        "model_type": "gptj",
        "tie_word_embeddings": False,
    },
    "pythia": {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "intermediate_size": 16384,
        "vocab_size": 50432,
        "model_type": "gpt_neox",
        "tie_word_embeddings": False,
    },
    "llama": {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "model_type": "llama",
        "tie_word_embeddings": False,
    },
}
PROBE_TOKENS = {"gptj": (10, 6), "llama": (14, 10), "pythia": (10, 6)}  # the probe's a+b prompt: tokens, shared prefix
PROBE_ROWS = 8050  # the probe's correct a+b prompts (GPT-J's accuracy, Table A1)
JOBS = [r for r in MODEL_JOBS if r not in ("train_toy",)]


def paper_work(name: str, batch: int, dag: bool) -> memory.Work:
    """The probe's counts (config/config.yaml's, 8,050 correct prompts); ``dag``: other_tasks
    on the other tasks' correct prompts as the DAG's job (the probe's call also ran a+b)."""
    tokens, prefix = PROBE_TOKENS[name]
    return memory.Work(
        batch=batch, tokens=tokens, prefix=prefix, add_rows=PROBE_ROWS, task_rows=100 if dag else PROBE_ROWS
    )


def paper_size(name: str) -> placement.Size:
    return placement.config_size(CONFIGS[name], name)


def probe_rows() -> list[str]:
    rows = ["| model | job | measured (GB) | model (GB) | error |", "|---|---|---:|---:|---:|"]
    for name in ("gptj", "llama"):
        lines = [json.loads(x) for x in (MEASURED / f"gpu_probe_h200_{name}.jsonl").read_text().splitlines()]
        weights = next(r["weights_gb"] for r in lines if r.get("job") == "model") * 1e9
        size = paper_size(name)
        for r in lines:
            if "gpu_peak_allocated_gb" not in r:
                continue
            got = memory.job_peak_bytes(r["job"], size.shape(2), paper_work(name, 512, False), int(weights)) / 1e9
            peak = r["gpu_peak_allocated_gb"]
            rows.append(f"| {name} | {r['job']} | {peak:.2f} | {got:.2f} | {100 * (got / peak - 1):+.1f}% |")
    return rows


def card_rows() -> list[str]:
    rows = [
        "| model | job | GPU at 512 (GB) | at 256 | host on a GPU node (GB) | 24 GB | 40 GB | 80 GB |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    spec = {"dtype": "bfloat16"}
    for name in ("gptj", "pythia", "llama"):
        size = paper_size(name)
        spec = {"dtype": "float16" if name == "pythia" else "bfloat16"}
        for rule in JOBS:
            full, half = (placement.gpu_job_mb(rule, size, spec, paper_work(name, b, True)) / 1000 for b in (512, 256))
            extra = placement.cache_dataset_bytes("-", placement.CACHE_DATASETS.get(rule, ()), size, 361, "float32")
            host = placement.model_job_mb(rule, size, spec, paper_work(name, 512, True), True, 1, extra) / 1000

            def fits(card, full=full, half=half):
                return "yes" if full <= card else ("at 256" if half <= card else "no")

            rows.append(
                f"| {name} | {rule} | {full:.1f} | {half:.1f} | {host:.1f} | {fits(24)} | {fits(40)} | {fits(80)} |"
            )
    return rows


def kept_section(page: Path, title: str) -> list[str]:
    """The lines of the section of ``page`` whose ``### `` title starts with ``title``, up to the
    next heading (its table and the command line that wrote it)."""
    lines = page.read_text().splitlines() if page.exists() else []
    start = next((i for i, line in enumerate(lines) if line.startswith("### " + title)), None)
    if start is None:
        raise SystemExit(f"--keep {title!r}: no section of {page} starts with it")
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:stop]


def command_line(argv: list[str]) -> str:
    return shlex.join(["python", "benchmarks/memory_table.py", *argv])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", default=[], help="TITLE=FOLDER=CONFIG=MODEL,MODEL")
    parser.add_argument("--keep", action="append", default=[], help="TITLE: keep that section of --out as it is")
    parser.add_argument("--measured", help="FOLDER=CONFIG=MODEL,MODEL: write benchmarks/measured/host_*_make_real.*")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "memory.md")
    args = parser.parse_args()
    if args.measured:
        folder, config, models = args.measured.split("=")
        rows = write_measured(Path(folder), REPO / config, models.split(","), MEASURED_PEAKS, MEASURED_PLAN)
        print(f"{len(rows)} model jobs' peaks -> {MEASURED_PEAKS.relative_to(REPO)}, {MEASURED_PLAN.relative_to(REPO)}")
        return
    head = (REPO / "benchmarks" / "memory_head.md").read_text().replace("{command}", command_line(sys.argv[1:]))
    parts = [head.rstrip(), ""]
    for lines in [kept_section(args.out, title) for title in args.keep]:
        parts += [*lines, ""] if lines[-1].strip() else lines
    for spec in args.run:
        title, folder, config, models = spec.split("=")
        rows = host_rows(Path(folder), REPO / config, models.split(","))
        parts += [f"### {title}", "", f"Written by `{command_line(['--run', spec])}`.", "", *rows, ""]
    parts += ["## The GPU model against the H200", "", *probe_rows(), ""]
    parts += ["## The paper's models at batch 512: GPU, host, cards", "", *card_rows(), ""]
    args.out.write_text("\n".join(parts))


if __name__ == "__main__":
    main()

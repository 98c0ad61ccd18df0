"""What each model job of a finished run declared (the plan's resources) and what it used (the
peak its log records, or its benchmark file's max_rss): tests/dag/test_declared_memory.py,
tests/unit/test_host_peaks.py and benchmarks/memory_table.py (docs/memory.md)."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import subprocess
import tempfile
from pathlib import Path

import yaml

from helixclock.jobs import memory, placement
from helixclock.jobs.pipeline import HOST_PEAK
from helixclock.project.outputs import MODEL_JOBS
from helpers.dag import workflow_api
from helpers.paths import REPO

RATIO = (1.0, 2.0)


def declared(run: Path, configfile: Path, models: list[str]) -> dict[tuple[str, str], dict]:
    """(model, rule) -> resources at attempt 1 of every model job a forced dry run of ``run`` plans."""
    return planned(run, configfile, models)[0]


def planned(run: Path, configfile: Path, models: list[str]) -> tuple[dict[tuple[str, str], dict], dict[str, dict]]:
    """A forced dry run of ``run`` through a temporary folder of links to its results/, resources/
    and logs/ (the run's folder is only read): (model, rule) -> resources at attempt 1 of every
    model job, and model -> what the plan sized its jobs from (:func:`plan_inputs`)."""
    from snakemake.settings.types import DAGSettings

    with tempfile.TemporaryDirectory() as tmp:
        for name in ("results", "resources", "logs"):
            if (run / name).exists():
                (Path(tmp) / name).symlink_to((run / name).resolve())
        config = yaml.safe_load(Path(configfile).read_text())
        config["models"] = models
        config["registry"] = str((REPO / config.get("registry", "config/models.yaml")).resolve())
        (Path(tmp) / "config.yaml").write_text(yaml.safe_dump(config))
        with workflow_api(Path(tmp), Path(tmp) / "config.yaml") as workflow:
            dag = workflow.dag(DAGSettings(forceall=True))
            dag.execute_workflow(executor="dryrun")
            out = {}
            for job in dag.workflow_api._workflow.dag.needrun_jobs(exclude_finished=False):
                if job.rule.name in MODEL_JOBS or job.rule.name == "install_gguf":
                    job.attempt = 1
                    res = {k: v for k, v in job.resources.items() if not k.startswith("_")}
                    out[(job.wildcards_dict.get("model"), job.rule.name)] = res
            inputs = plan_inputs(dag.workflow_api._workflow.globals, models)
    return out, inputs


def plan_inputs(smk: dict, models: list[str]) -> dict[str, dict]:
    """model -> what the workflow's resource functions (workflow/rules/resources.smk, read from the
    workflow's globals ``smk`` while its working directory is the planned folder) size the model's
    jobs from: its :class:`~helixclock.jobs.placement.Size`, the registry's dtype and number_tokens,
    the :class:`~helixclock.jobs.memory.Work`, whether jobs run on a GPU and the bytes of the cache
    datasets each model job reads."""
    out = {}
    for model in models:
        size = smk["model_size"](model)
        if size is None:
            continue
        spec = smk["REGISTRY"][model]
        out[model] = {
            "size": dataclasses.asdict(size),
            "spec": {k: spec[k] for k in ("dtype", "number_tokens") if k in spec},
            "work": dataclasses.asdict(smk["_work"](model)),
            "on_gpu": smk["on_gpu"](),
            "cache_bytes": {rule: smk["_cache_bytes"](rule, model) for rule in MODEL_JOBS},
        }
    return out


def declared_from_inputs(rule: str, inputs: dict, attempt: int = 1) -> int:
    """mem_mb of a model job from :func:`plan_inputs`' record of its model, by
    :func:`helixclock.jobs.placement.model_job_mb` (what the plan's resource function calls)."""
    size = placement.Size(**inputs["size"])
    work = memory.Work(**inputs["work"])
    return placement.model_job_mb(
        rule, size, inputs["spec"], work, inputs["on_gpu"], attempt, inputs["cache_bytes"][rule]
    )


MEASURED_PEAKS = REPO / "benchmarks" / "measured" / "host_peaks_make_real.csv"
MEASURED_PLAN = REPO / "benchmarks" / "measured" / "host_plan_make_real.json"


def write_measured(run: Path, configfile: Path, models: list[str], peaks_csv: Path, plan_json: Path) -> list[dict]:
    """The model jobs' measured host peaks of the finished run ``run`` (:func:`measured_with_source`:
    the log's ru_maxrss, else the benchmark file's sampled max_rss) to ``peaks_csv`` (model, rule,
    peak_mb, source, run_commit: ``run``'s git HEAD), and what its plan sizes them from
    (:func:`plan_inputs`) to ``plan_json``; checks that :func:`declared_from_inputs` gives the
    dry run's mem_mb for every job.  tests/unit/test_host_peaks.py reads both."""
    commit = subprocess.run(
        ["git", "-C", str(run), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    plan, inputs = planned(run, configfile, models)
    rows = []
    for (model, rule), (peak, source) in sorted(measured_with_source(run).items()):
        if rule not in MODEL_JOBS or rule == "train_toy" or model not in inputs or (model, rule) not in plan:
            continue
        got = declared_from_inputs(rule, inputs[model])
        if got != plan[(model, rule)]["mem_mb"]:
            raise AssertionError(
                f"{model} {rule}: the plan declares {plan[(model, rule)]['mem_mb']}, the inputs give {got}"
            )
        rows.append({"model": model, "rule": rule, "peak_mb": round(peak), "source": source, "run_commit": commit})
    with open(peaks_csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plan_json.write_text(
        json.dumps({m: inputs[m] for m in sorted({r["model"] for r in rows})}, indent=1, sort_keys=True) + "\n"
    )
    return rows


PEAK_LINE = re.compile(re.escape(HOST_PEAK).replace(r"\{mb:\.0f\}", r"(\d+)"))


def logged_peak(log: Path) -> float | None:
    """The peak host memory (MB) a job's log records as it ends (helixclock.jobs.pipeline.log_host_peak)."""
    found = PEAK_LINE.findall(log.read_text(errors="replace")) if log.exists() else []
    return float(found[-1]) if found else None


def measured(run: Path) -> dict[tuple[str, str], float]:
    """(model, rule) -> peak host memory (MB) of the newest run of each model job of ``run``: the
    peak its log records (ru_maxrss), or where the log has none (a run before the line existed)
    the max_rss its benchmark file sampled."""
    return {key: peak for key, (peak, _) in measured_with_source(run).items()}


def measured_with_source(run: Path) -> dict[tuple[str, str], tuple[float, str]]:
    """(model, rule) -> (peak MB, "log" or "sampled")."""
    out, when = {}, {}
    for path in sorted((run / "logs").glob("*/*-*.benchmark.tsv")):
        rule = re.sub(r"-[0-9a-f]{10}$", "", path.name.removesuffix(".benchmark.tsv"))
        key = (path.parent.name, rule)
        lines = path.read_text().splitlines()
        if len(lines) < 2 or (key in when and when[key] > path.stat().st_mtime):
            continue
        header, values = lines[0].split("\t"), lines[-1].split("\t")
        logged = logged_peak(path.with_name(path.name.removesuffix(".benchmark.tsv") + ".log"))
        sampled = float(values[header.index("max_rss")])
        out[key] = (logged, "log") if logged is not None else (sampled, "sampled")
        when[key] = path.stat().st_mtime
    return out


def within(declared_mb: float, peak_mb: float, floor_mb: float = placement.MIN_MODEL_MB) -> bool:
    """The check of tests/dag/test_declared_memory.py: 1.0 to 2.0 x the peak, or the floor where the peak is below it."""
    return RATIO[0] * peak_mb <= declared_mb <= RATIO[1] * peak_mb or (declared_mb == floor_mb and peak_mb <= floor_mb)


def old_model_job_mb(size: placement.Size, spec: dict, batch_size: int, extra_bytes: int = 0) -> int:
    """mem_mb of a model job at commit 32a8dce (placement.model_job_mb then, attempt 1): the
    weights, the full vocabulary's float32 logits and every layer's residual for every token of a
    batch, the cache datasets it read and 3 GB; 4 GB at least."""
    weights = size.parameters * placement.DTYPE_BYTES[spec.get("dtype", "float32")]
    tokens = size.tokens or placement.prompt_tokens(spec)
    activations = batch_size * tokens * (size.vocab + (size.n_layers + 1) * size.d_model) * 4
    return max(4000, -(-(weights + activations + extra_bytes) // 1_000_000) + 3000)

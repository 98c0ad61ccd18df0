"""Running the Snakemake DAG in a scratch directory (shared by the DAG and Slurm tests)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO

TINY = REPO / "tests" / "configs" / "tiny.yaml"


def snakemake_command(workdir: Path, *args: str, configfile: Path = TINY) -> list[str]:
    """The command line of a Snakemake run of this repository's workflow in ``workdir``."""
    snakefile = str(REPO / "Snakefile")
    return [sys.executable, "-m", "snakemake", "--snakefile", snakefile, "--directory", str(workdir),
            f"--configfile={configfile}", *args]  # fmt: skip


def snakemake(
    workdir: Path, *args: str, timeout: int = 900, check: bool = True, configfile: Path = TINY, env: dict | None = None
) -> subprocess.CompletedProcess:
    cmd = snakemake_command(workdir, *args, configfile=configfile)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc


RULES = REPO / "workflow" / "rules"


def model_rules() -> set[str]:
    """The rules whose jobs load a model, read from the rule files: each ``model_job`` and each
    ``staged_job`` that claims a GPU slot (``gpu=True``: the toy's training)."""
    names = set()
    for path in RULES.glob("*.smk"):
        text = path.read_text()
        # a top-level call, formatted by snakefmt: its name on the next line, its ")" at column 0
        calls = re.findall(r'^(model_job|staged_job)\(\n\s+"(\w+)",\n(.*?)^\)', text, re.M | re.S)
        assert len(calls) == len(re.findall(r"^(?:model_job|staged_job)\(", text, re.M)), path.name
        names |= {name for kind, name, body in calls if kind == "model_job" or "gpu=True" in body}
    return names


MODEL_RULES = model_rules()  # the jobs that load a model


def planned_jobs(workdir: Path, *targets: str, configfile: Path = TINY) -> dict[str, int]:
    """Jobs a dry run would schedule, by rule name."""
    proc = snakemake(workdir, *targets, "-n", "--quiet", "rules", configfile=configfile)
    return job_counts(proc.stdout + proc.stderr)


def job_counts(output: str) -> dict[str, int]:
    """The jobs of each rule in the output of ``snakemake -n --quiet rules``."""
    jobs: dict[str, int] = {}
    table = False
    for line in output.splitlines():
        parts = line.split()
        if parts[:2] == ["job", "count"]:
            table = True
            continue
        if table and len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            jobs[parts[0]] = int(parts[1])
    return jobs

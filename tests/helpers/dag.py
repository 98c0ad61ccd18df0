"""Running the Snakemake DAG in a scratch directory (shared by the DAG and Slurm tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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


MODEL_RULES = {
    "train_toy",
    "accuracy",
    "residual_cache",
    "helix_patching",
    "other_tasks_patching",
    "last_token_patching",
    "head_patching",
    "mlp_patching",
    "neuron_attribution",
    "neuron_grids",
    "neuron_fit_eval",
}  # the jobs that load a model


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

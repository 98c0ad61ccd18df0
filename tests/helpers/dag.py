"""Running the Snakemake DAG in a scratch directory (shared by the DAG and Slurm tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import yaml

from helixclock.project import outputs
from helpers.paths import REPO

TINY = REPO / "tests" / "configs" / "tiny.yaml"


def changed_config(directory: Path, name: str = "changed.yaml", **settings) -> Path:
    """The tiny config with ``settings`` merged in (a mapping merges into its section), written
    to ``directory/name``; its registry is the tiny one, wherever Snakemake runs."""
    config = yaml.safe_load(TINY.read_text())
    for key, value in settings.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    config["registry"] = str(TINY.parent / "models.yaml")
    path = directory / name
    path.write_text(yaml.safe_dump(config))
    return path


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


NICE = 10  # a background run's CPU weight is a tenth of a test's


def _set_priority(pid: int, nice: int) -> None:
    """The niceness of process ``pid``'s group and of its scheduling autogroup.  Linux with
    autogroups (the default) shares the CPU fairly between sessions before niceness counts: a
    run in a session of its own at niceness 10 took half the cores from the tests all the same
    (measured: two busy loops in new sessions slowed a two-thread torch test 10-fold; with
    their autogroup at 10, not at all).  Only root may raise a priority: elsewhere it stays."""
    try:
        os.setpriority(os.PRIO_PGRP, pid, nice)
    except (PermissionError, ProcessLookupError):
        pass
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
    except OSError:  # no autogroups (another OS, a kernel without them) or not allowed
        pass


class BackgroundRun:
    """A Snakemake run of this repository's workflow in ``workdir``, started now in the
    background with its console written beside ``workdir``.  The run is its own process group,
    at a low CPU priority (niceness :data:`NICE`) while the tests go on, so that its jobs take
    the cores the tests leave idle; once a test waits for it, at the usual priority again."""

    def __init__(self, workdir: Path, *args: str, configfile: Path = TINY, env: dict | None = None):
        self.workdir = workdir
        self.console = workdir.with_name(workdir.name + "-console.log")
        self.started = time.time()
        self.seconds: float | None = None
        with open(self.console, "w") as console:
            self.proc = subprocess.Popen(
                ["nice", "-n", str(NICE), *snakemake_command(workdir, *args, configfile=configfile)],
                stdout=console,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        _set_priority(self.proc.pid, NICE)

    def finish(self, timeout: float = 1800) -> float:
        """Wait for the run; the seconds it took from its start, or an error with its console."""
        if self.seconds is None:
            _set_priority(self.proc.pid, 0)
            self.proc.wait(timeout=timeout)
            if self.proc.returncode != 0:
                raise AssertionError(f"snakemake failed ({self.proc.returncode}):\n{self.console.read_text()[-8000:]}")
            self.seconds = time.time() - self.started
        return self.seconds

    def stop(self) -> None:
        """End the run and its jobs if it is still going (a session that ends early)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)


MODEL_RULES = set(outputs.MODEL_JOBS)  # the jobs that load a model


# what of the workflow profile Snakemake's command line reads by default (profiles/default) decides
# a plan: a job whose output a killed run left incomplete is planned again, not refused
PROFILE = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())


@contextmanager
def workflow_api(workdir: Path, configfile: Path = TINY, config: dict | None = None, configfiles=()):
    """This repository's workflow in ``workdir`` through Snakemake's API, in this process (a
    fifth of a new interpreter's cost); the working directory and sys.path are restored after.
    ``configfiles`` follow ``configfile`` and ``config`` overrides them all, as ``--configfile``
    and ``--config`` do on the command line."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    cwd, path = os.getcwd(), list(sys.path)  # the API enters the work directory, the Snakefile adds src/
    try:
        with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
            yield api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(
                    configfiles=[Path(configfile), *map(Path, configfiles)], config=dict(config or {})
                ),
                snakefile=REPO / "Snakefile",
                workdir=Path(workdir),
            )
    finally:
        os.chdir(cwd)
        sys.path[:] = path


def workflow_rules(workdir: Path, configfile: Path = TINY) -> dict:
    """Every rule of the workflow (what ``snakemake --list-rules`` lists), by name: Snakemake's
    rule objects, read through its API."""
    with workflow_api(workdir, configfile) as workflow:
        return {rule.name: rule for rule in workflow._workflow.rules}


def planned_jobs(workdir: Path, *targets: str, configfile: Path = TINY) -> dict[str, int]:
    """Jobs ``snakemake -n`` would schedule in ``workdir``, by rule name.  The dry run goes
    through Snakemake's API in this process (:func:`workflow_api`; :func:`planned_jobs_cli`
    pays for a new interpreter, and the DAG tests check that both agree)."""
    from snakemake.settings.types import DAGSettings

    with workflow_api(workdir, configfile) as workflow:
        dag = workflow.dag(
            DAGSettings(targets=frozenset(targets), force_incomplete=PROFILE.get("rerun-incomplete", False))
        )
        dag.execute_workflow(executor="dryrun")
        _, counts = dag.workflow_api._workflow.dag.stats()
    return {rule: n for rule, n in counts.items() if rule != "total"}


def planned_resources(
    workdir: Path, *targets: str, configfile: Path = TINY, attempts=(1, 2)
) -> list[tuple[str, str, dict[int, dict]]]:
    """Every job a dry run in ``workdir`` would schedule: its rule, its wildcards, and the
    resources its rule declares at each of ``attempts`` (Snakemake's ``attempt``, 1 on the first
    try, one more on each retry), as Snakemake evaluates them for the job."""
    from snakemake.settings.types import DAGSettings

    with workflow_api(workdir, configfile) as workflow:
        dag = workflow.dag(
            DAGSettings(targets=frozenset(targets), force_incomplete=PROFILE.get("rerun-incomplete", False))
        )
        dag.execute_workflow(executor="dryrun")
        planned = dag.workflow_api._workflow.dag.needrun_jobs(exclude_finished=False)
        out = []
        for job in planned:
            by_attempt = {}
            for attempt in attempts:
                job.attempt = attempt
                by_attempt[attempt] = {k: v for k, v in job.resources.items() if not k.startswith("_")}
            out.append((job.rule.name, str(dict(job.wildcards_dict)), by_attempt))
    return out


def planned_jobs_cli(workdir: Path, *targets: str, configfile: Path = TINY) -> dict[str, int]:
    """Jobs a dry run on Snakemake's command line would schedule, by rule name."""
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

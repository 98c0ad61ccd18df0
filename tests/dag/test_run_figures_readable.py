"""Figures a reader can read, on the whole-DAG run: every figure of the tiny run (a one-token toy and
toy-digits, whose numbers take several tokens), redrawn in this process from the run's own tables by the function its plotting rule
names, passes tests/helpers/figures.problems (no legend over data, no empty panel, titles and
labels inside the figure and apart).  The cases the toys do not show are planted in
tests/unit/test_figures_readable.py."""

from __future__ import annotations

import importlib
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
from helpers.dag import TINY, workflow_api
from helpers.figures import problems


def plotting_jobs(workdir: Path, configfile: Path) -> list[dict]:
    """Every job of the workflow's plotting rules (``figure_rule``: params ``function`` and
    ``kwargs``) for the run in ``workdir``: its model, function, input tables and keyword
    arguments, as Snakemake resolves them (a dry run through the API, every job planned)."""
    from snakemake.settings.types import DAGSettings

    jobs = []
    with workflow_api(workdir, configfile) as workflow:
        dag = workflow.dag(DAGSettings(forceall=True))
        dag.execute_workflow(executor="dryrun")
        for job in dag.workflow_api._workflow.dag.jobs:
            params = job.params
            if hasattr(params, "function") and hasattr(params, "kwargs"):
                jobs.append(
                    {
                        "model": job.wildcards["model"],
                        "function": params.function,
                        "inputs": [Path(workdir) / str(f) for f in job.input],
                        "kwargs": dict(params.kwargs),
                    }
                )
    return jobs


def redraw(job: dict):
    """The figure of one plotting job, drawn as scripts/figure.py draws it."""
    from helixclock.stats.statistics import primary

    module, name = job["function"].split(":")
    fn = getattr(importlib.import_module(module), name)
    return fn(*[primary(pd.read_csv(p)) for p in job["inputs"]], job["model"], **job["kwargs"])


def _problems_of(jobs: list[dict]) -> dict[str, list[str]]:
    """What :func:`problems` finds in each figure of ``jobs`` (those it finds none in left out)."""
    import matplotlib.pyplot as plt

    found = {}
    for job in jobs:
        fig = redraw(job)
        issues = problems(fig)
        if issues:
            found[f"{job['model']}: {job['function'].split(':')[1]}"] = issues
        plt.close(fig)
    return found


def unreadable(workdir: Path, configfile: Path, processes: int = 2) -> tuple[int, dict[str, list[str]]]:
    """How many figures the run's plotting jobs draw, and what :func:`problems` finds in each: the
    jobs shared among ``processes`` forked workers (the run is over: both cores are free)."""
    jobs = plotting_jobs(workdir, configfile)
    shares = [jobs[i::processes] for i in range(processes)]
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
        found = {k: v for part in pool.map(_problems_of, shares) for k, v in part.items()}
    return len(jobs), found


def test_every_figure_of_the_tiny_run_reads_well(tiny_run):
    work, _ = tiny_run
    n, found = unreadable(work, TINY)
    assert n == 2 * 42  # every plotting job of both toys, the one-token one and toy-digits
    assert not found, found

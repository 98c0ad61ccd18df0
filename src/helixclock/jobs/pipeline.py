"""What every pipeline script does first: log to the rule's log, check what the model got
right, build the library's settings from the rule's params; and the one plotting job.

Scripts under ``scripts/`` stay thin and follow one convention: :func:`start`, then for a job
that needs correct a+b prompts :func:`require` (before it loads the model), then for a model
job :func:`helixclock.jobs.model_jobs.open_model`, then one library function, the rule's entry
point (named in the README's Outputs table), which takes library objects (an engine, tables,
arrays, settings) and returns what the rule writes.  Rule params arrive grouped as the settings
objects of the library (``fit``, ``resampling``, ``pairs``, ...).

This module imports no torch and no matplotlib: table jobs import it too.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import resource
import sys

import pandas as pd

from ..environment.gpus import NoCudaError, claim_gpu, log_gpu_peak, require_cuda
from ..project.io import save_figure, start_log
from ..project.progress import quiet_third_party_bars
from ..stats.statistics import Resampling, primary
from . import preconditions as pre
from .preconditions import Minimum, Need, PreconditionError, check


def start(snakemake) -> logging.Logger:
    """Route stderr and the library's logger to the rule's log (progress as a line now and then,
    no bars: :mod:`helixclock.project.progress`); set torch threads; a rule with ``resources: gpu``
    claims a GPU slot of its own before CUDA starts, stops at once where config key device asks
    for CUDA and torch sees none (:func:`helixclock.environment.gpus.require_cuda`), and logs its peak GPU
    memory as it ends; every job logs its peak host memory as it ends (:func:`log_host_peak`)."""
    log_path = snakemake.log[0] if len(snakemake.log) else None
    logger = start_log(log_path, getattr(snakemake, "threads", None))
    quiet_third_party_bars()  # a log file gets progress lines, not bars (helixclock.project.progress)
    logger.info("rule %s, wildcards %s, process %d", snakemake.rule, dict(snakemake.wildcards), os.getpid())
    atexit.unregister(log_host_peak)  # once a process, however often start is called (tests)
    atexit.register(log_host_peak)
    sys.excepthook = _short_precondition_report
    resources = getattr(snakemake, "resources", None)
    if resources is not None and int(getattr(resources, "get", lambda *a: 0)("gpu", 0) or 0) > 0:
        slot = claim_gpu()
        setting = str(getattr(getattr(snakemake, "params", None), "device", "auto"))
        if setting.startswith("cuda"):
            require_cuda(f"{snakemake.rule} of {dict(snakemake.wildcards).get('model', '')}".strip(), setting)
        logger.info("device slot: %s", "none, running on the CPU" if slot is None else f"GPU {slot}")
        atexit.register(log_gpu_peak)
    return logger


HOST_PEAK = "host memory peak: {mb:.0f} MB (ru_maxrss)"


def log_host_peak() -> None:
    """Log the host memory this process held at its peak, as the kernel counts it (``ru_maxrss``,
    kB on Linux): the peak itself, where the job's benchmark file samples memory every 30 s
    after its first 15 s and can miss a short peak (docs/memory.md reads this line first)."""
    logging.getLogger("helixclock").info(HOST_PEAK.format(mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3))


def _short_precondition_report(kind, error, traceback) -> None:
    """An unmet precondition ends a job with its one line, in the rule's log and on the
    console Snakemake prints (no traceback: the line says all); anything else with its
    traceback, as usual."""
    if not issubclass(kind, (PreconditionError, NoCudaError)):
        sys.__excepthook__(kind, error, traceback)
        return
    atexit.unregister(log_host_peak)  # a refused job did no work: its log ends with its one line
    line = f"helixclock: {error}"
    logging.getLogger("helixclock").error("%s", line)
    if sys.stderr is not sys.__stderr__:
        print(line, file=sys.__stderr__, flush=True)


def require(snakemake, needs: list[Need]) -> None:
    """Stop the job, before it loads the model, when what its model's accuracy table (or the
    cache) gives falls short of what the job's script says it needs
    (:mod:`helixclock.jobs.preconditions`): raises :class:`PreconditionError` with one line naming
    the model, the rule, the count found and the minimum; otherwise logs each count."""
    rule = snakemake.rule
    check(snakemake.wildcards.model, rule, needs)
    for need in needs:
        logging.getLogger("helixclock").info("%s: %d %s (minimum %d)", rule, need.found, need.what, need.minimum)


def minimum(snakemake) -> Minimum:
    """helixclock.jobs.preconditions.Minimum from the rule's params ``minimum`` (config key minimum)."""
    return Minimum(**getattr(snakemake.params, "minimum", {}))


def accuracy(snakemake):
    """The job's a+b accuracy table (input ``accuracy``)."""
    return pd.read_csv(snakemake.input.accuracy)


def usable_tasks(snakemake, frames: dict, shapes: dict | None = None) -> dict:
    """other_tasks_patching's tasks (name -> accuracy table) that have what their fits and pairs
    need: the job stops (:class:`PreconditionError`) when a+b lacks it, and leaves out, with a
    warning, any other task that does (Table 1 and Fig. C7 then have no row for it).  Numbers of
    several tokens: with ``shapes`` (task -> correct prompts' token shapes) the pairs counted are
    those the job will draw, partners of one shape."""
    p = snakemake.params
    needs = pre.other_tasks_needs(frames, p.fit["periods"], p.n_pairs, minimum(snakemake), shapes)
    rule, model = snakemake.rule, snakemake.wildcards.model
    log = logging.getLogger("helixclock")
    if "add" in needs:
        require(snakemake, needs["add"])
    usable = {}
    for task, frame in frames.items():
        unmet = [n for n in needs[task] if not n.met]
        if unmet:
            log.warning("left out of Table 1 and Fig. C7: %s", unmet[0].shortfall(model, rule))
        else:
            usable[task] = frame
    if not usable:
        check(model, rule, [n for task_needs in needs.values() for n in task_needs])
    return usable


def settings(snakemake, name: str, cls):
    """The settings object ``cls`` built from the rule's params group ``name``."""
    return cls(**getattr(snakemake.params, name))


def resampling(snakemake):
    """helixclock.stats.statistics.Resampling from the rule's params ``resampling``."""
    return settings(snakemake, "resampling", Resampling)


def plot_job(snakemake) -> None:
    """A plotting job (a figure rule, ``use rule figure as fig_...``): read the input tables
    (CSV), draw with the function params.function names ("package.module:function", a figure
    id of the paper, e.g. ``helixclock.stages.helix.figures:fig04_helix_patching``), save PDF
    and PNG.  Importing a stage's ``figures`` module sets the shared look (:mod:`helixclock.plotting.style`)."""
    start(snakemake)
    module, name = snakemake.params.function.split(":")
    fn = getattr(importlib.import_module(module), name)
    frames = [primary(pd.read_csv(p)) for p in snakemake.input]  # LD itself where a table has its terms
    save_figure(fn(*frames, snakemake.wildcards.model, **snakemake.params.kwargs), snakemake.output)

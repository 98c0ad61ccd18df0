"""What every pipeline script does first: log to the rule's log, set threads, check what the
model got right, load the model.

Scripts under ``scripts/`` stay thin: they call :func:`start`, :func:`require` (a job that
needs correct a+b prompts, before it loads the model), maybe :func:`load`, one library
function, and write ``snakemake.output``.  Rule params arrive grouped as the settings objects
of the library (``fit``, ``resampling``, ``pairs``, ...).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

from .io import start_log
from .preconditions import Minimum, Need, PreconditionError, check


def start(snakemake) -> logging.Logger:
    """Route stderr and the library's logger to the rule's log; set torch threads; a rule
    with ``resources: gpu`` claims a GPU slot of its own before CUDA starts."""
    log_path = snakemake.log[0] if len(snakemake.log) else None
    logger = start_log(log_path, getattr(snakemake, "threads", None))
    logger.info("rule %s, wildcards %s, process %d", snakemake.rule, dict(snakemake.wildcards), os.getpid())
    sys.excepthook = _short_precondition_report
    resources = getattr(snakemake, "resources", None)
    if resources is not None and int(getattr(resources, "get", lambda *a: 0)("gpu", 0) or 0) > 0:
        from .gpus import claim_gpu

        slot = claim_gpu()
        logger.info("device slot: %s", "none, running on the CPU" if slot is None else f"GPU {slot}")
    return logger


def _short_precondition_report(kind, error, traceback) -> None:
    """An unmet precondition ends a job with its one line, in the rule's log and on the
    console Snakemake prints (no traceback: the line says all); anything else with its
    traceback, as usual."""
    if not issubclass(kind, PreconditionError):
        sys.__excepthook__(kind, error, traceback)
        return
    line = f"helixclock: {error}"
    logging.getLogger("helixclock").error("%s", line)
    if sys.stderr is not sys.__stderr__:
        print(line, file=sys.__stderr__, flush=True)


def require(snakemake, needs: list[Need]) -> None:
    """Stop the job, before it loads the model, when what its model's accuracy table (or the
    cache) gives falls short of what the job's script says it needs
    (:mod:`helixclock.preconditions`): raises :class:`PreconditionError` with one line naming
    the model, the rule, the count found and the minimum; otherwise logs each count."""
    rule = snakemake.rule
    check(snakemake.wildcards.model, rule, needs)
    for need in needs:
        logging.getLogger("helixclock").info("%s: %d %s (minimum %d)", rule, need.found, need.what, need.minimum)


def minimum(snakemake) -> Minimum:
    """helixclock.preconditions.Minimum from the rule's params ``minimum`` (config key minimum)."""
    return Minimum(**getattr(snakemake.params, "minimum", {}))


def accuracy(snakemake):
    """The job's a+b accuracy table (input ``accuracy``)."""
    import pandas as pd

    return pd.read_csv(snakemake.input.accuracy)


def usable_tasks(snakemake, frames: dict) -> dict:
    """other_tasks_patching's tasks (name -> accuracy table) that have what their fits and pairs
    need: the job stops (:class:`PreconditionError`) when a+b lacks it, and leaves out, with a
    warning, any other task that does (Table 1 and Fig. C7 then have no row for it)."""
    from . import preconditions as pre

    needs = pre.other_tasks_needs(frames, snakemake.params.fit["periods"], snakemake.params.n_pairs, minimum(snakemake))
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


def load(snakemake, **kwargs):
    """Load the job's model (registry entry in params.spec) on the configured device; warn when
    the installed versions are not those its model card recorded (README, "Provenance of a run")."""
    import torch

    from .models import load_model

    if getattr(snakemake, "threads", None):
        torch.set_num_threads(int(snakemake.threads))
    card = getattr(snakemake.input, "card", None)
    if card:  # a warning when the versions are not those the model card recorded
        from .io import read_json
        from .provenance import warn_if_changed

        warn_if_changed(read_json(card), f"{snakemake.rule} of {snakemake.wildcards.model}")
    params = snakemake.params
    model = load_model(snakemake.wildcards.model, params.spec, device=params.device, **kwargs)
    logging.getLogger("helixclock").info(
        "loaded %s (%s) on %s as %s", model.name, model.source, model.device, model.dtype
    )
    return model


def patching_engine(snakemake, model):
    from .patching import PatchingEngine

    return PatchingEngine(model, batch_size=snakemake.params.batch_size)


def settings(snakemake, name: str, cls):
    """The settings object ``cls`` built from the rule's params group ``name``."""
    return cls(**getattr(snakemake.params, name))


def resampling(snakemake):
    from .statistics import Resampling

    return settings(snakemake, "resampling", Resampling)


def figure(snakemake) -> None:
    """A plotting job: read the input tables (CSV), draw with the function params.function
    names ("package.module:function"), save PDF and PNG."""
    import importlib

    import pandas as pd

    from . import style  # noqa: F401  (the shared look, before any figure is made)
    from .io import save_figure

    start(snakemake)
    module, name = snakemake.params.function.split(":")
    fn = getattr(importlib.import_module(module), name)
    frames = [pd.read_csv(p) for p in snakemake.input]
    save_figure(fn(*frames, snakemake.wildcards.model, **snakemake.params.kwargs), snakemake.output)


@dataclass
class ClockJob:
    """What the last-token model jobs share: the model's engine, clean/corrupted pairs of
    correct a+b prompts, and the seeded sample of correct prompts whose outputs are fitted."""

    log: logging.Logger
    engine: object
    pairs: object
    fit_ids: object
    fit_a: object
    fit_b: object
    positions: dict


def clock_job(snakemake) -> ClockJob:
    """Set up a last-token model job from params ``pairs`` (n_pairs, vary, seed) and
    ``fit_prompts``, after checking what its pairs and fits need."""
    from .io import read_json
    from .pairs import draw_pairs, prompt_sample
    from .preconditions import clock_needs

    log = start(snakemake)
    p = snakemake.params
    acc = accuracy(snakemake)
    periods = p.fit["periods"] if hasattr(p, "fit") else p.heads["periods"]
    require(
        snakemake,
        clock_needs(
            snakemake.rule,
            acc,
            periods,
            p.pairs["n_pairs"],
            p.pairs["vary"],
            minimum(snakemake),
            getattr(p, "fit_prompts", None),
            p.pairs["seed"],
        ),
    )
    correct = acc[acc["correct"]]
    positions = read_json(snakemake.input.card).get("positions", {}).get("add")  # one-token numbers only
    model = load(snakemake)
    template = p.spec["prompts"]["add"]
    several = p.spec.get("number_tokens", "one") == "several"
    pairs = draw_pairs(
        correct,
        p.pairs["n_pairs"],
        p.pairs["seed"],
        model.tokenizer,
        template,
        tuple(p.pairs["vary"]),
        device=model.device,
        several=several,
    )
    ids, a, b = (
        prompt_sample(model.tokenizer, correct, template, p.fit_prompts, p.pairs["seed"])
        if hasattr(p, "fit_prompts")
        else (None, None, None)
    )
    return ClockJob(log, patching_engine(snakemake, model), pairs, ids, a, b, positions)

"""What every pipeline script does first: log to the rule's log, set threads, load the model.

Scripts under ``scripts/`` stay thin: they call :func:`start`, maybe :func:`load`, one
library function, and write ``snakemake.output``.
"""

from __future__ import annotations

import logging

from .io import start_log


def start(snakemake) -> logging.Logger:
    """Route stderr and the library's logger to the rule's log; set torch threads; a rule
    with ``resources: gpu`` claims a GPU slot of its own before CUDA starts."""
    log_path = snakemake.log[0] if len(snakemake.log) else None
    logger = start_log(log_path, getattr(snakemake, "threads", None))
    logger.info("rule %s, wildcards %s", snakemake.rule, dict(snakemake.wildcards))
    resources = getattr(snakemake, "resources", None)
    if resources is not None and int(getattr(resources, "get", lambda *a: 0)("gpu", 0) or 0) > 0:
        from .gpus import claim_gpu

        slot = claim_gpu()
        logger.info("device slot: %s", "none, running on the CPU" if slot is None else f"GPU {slot}")
    return logger


def load(snakemake, **kwargs):
    """Load the job's model (registry entry in params.spec) on the configured device."""
    import torch

    from .models import load_model

    if getattr(snakemake, "threads", None):
        torch.set_num_threads(int(snakemake.threads))
    params = snakemake.params
    model = load_model(snakemake.wildcards.model, params.spec, device=params.device, **kwargs)
    logging.getLogger("helixclock").info("loaded %s (%s) on %s as %s", model.name, model.source,
                                         model.device, model.dtype)
    return model


def engine(snakemake, model):
    from .patching import PatchingEngine

    return PatchingEngine(model, batch_size=snakemake.params.batch_size)


def figure(snakemake, fn, *inputs, **kwargs) -> None:
    """A plotting job: read the input tables (CSV), draw with ``fn``, save PDF and PNG."""
    import pandas as pd

    from .io import save_figure

    start(snakemake)
    frames = [pd.read_csv(p) for p in (inputs or snakemake.input)]
    save_figure(fn(*frames, snakemake.wildcards.model, **kwargs), snakemake.output)


def clock_job(snakemake):
    """Setup shared by the last-token model jobs: the model and engine, clean/corrupted
    pairs of correct a+b prompts, and the seeded sample of prompts used to fit outputs.

    Returns (logger, engine, pairs, fit ids, fit a, fit b, token positions of a+b)."""
    import json

    import pandas as pd

    from .clock import clock_pairs, fit_prompt_ids

    log = start(snakemake)
    p = snakemake.params
    acc = pd.read_csv(snakemake.input.accuracy)
    correct = acc[acc["correct"]]
    positions = json.loads(open(snakemake.input.card).read())["positions"]["add"]
    model = load(snakemake)
    runner = engine(snakemake, model)
    template = p.spec["prompts"]["add"]
    pairs = clock_pairs(runner, correct, template, p.n_pairs, p.seed, p.corrupt)
    ids, a, b = fit_prompt_ids(model, correct, template, p.fit_prompts, p.seed)
    return log, runner, pairs, ids, a, b, positions

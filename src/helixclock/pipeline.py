"""What every pipeline script does first: log to the rule's log, set threads, load the model.

Scripts under ``scripts/`` stay thin: they call :func:`start`, maybe :func:`load`, one
library function, and write ``snakemake.output``.  Rule params arrive grouped as the
settings objects of the library (``fit``, ``resampling``, ``pairs``, ...).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

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


def refuse_unless(snakemake, what: str, found: int, needed: int) -> None:
    """Stop the job (this model's branch of the DAG) with one line when ``found`` < ``needed``:
    before a model is loaded, so that a weak model costs nothing and says why."""
    if found >= needed:
        return
    msg = (f"model {snakemake.wildcards.model!r}: rule {snakemake.rule} stops: {what}: found {found}, "
           f"needs at least {needed} (config key 'minimum')")
    logging.getLogger("helixclock").error(msg)
    raise SystemExit(msg)


def require_pairs(snakemake, correct, n_pairs: int, seed: int, vary, what: str = "clean/corrupted pairs") -> None:
    """Enough pairs with different answers can be drawn from ``correct`` (params.minimum.pairs)."""
    from .pairs import pair_indices

    found = len(pair_indices(correct, n_pairs, seed, tuple(vary))[0])
    refuse_unless(snakemake, f"{what} (varying {', '.join(vary)}) among {len(correct)} correct prompts", found,
                  min(n_pairs, snakemake.params.minimum["pairs"]))


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
    fig = fn(*frames, snakemake.wildcards.model, **snakemake.params.kwargs)
    counts = sorted({int(n) for df in frames if "n_pairs" in df for n in df["n_pairs"].dropna()})
    if counts:  # every figure resting on pairs says how many (intervals need at least two)
        n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        fig.text(0.995, 0.002, f"n = {n} pairs", ha="right", va="bottom", fontsize=8, color="0.35")
    save_figure(fig, snakemake.output)


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
    ``fit_prompts``."""
    import pandas as pd

    from .io import read_json
    from .pairs import draw_pairs, prompt_sample

    log = start(snakemake)
    p = snakemake.params
    acc = pd.read_csv(snakemake.input.accuracy)
    correct = acc[acc["correct"]]
    require_pairs(snakemake, correct, p.pairs["n_pairs"], p.pairs["seed"], p.pairs["vary"])
    periods = (p.fit if hasattr(p, "fit") else p.heads)["periods"]  # helix(a,b,a+b): 3 (2 |periods| + 1) + 1 columns
    refuse_unless(snakemake, "correct prompts to fit helix(a,b,a+b) to (more than its parameters)", len(correct),
                  3 * (2 * len(periods) + 1) + 2)
    positions = read_json(snakemake.input.card)["positions"]["add"]
    model = load(snakemake)
    template = p.spec["prompts"]["add"]
    pairs = draw_pairs(correct, p.pairs["n_pairs"], p.pairs["seed"], model.tokenizer, template,
                       tuple(p.pairs["vary"]), device=model.device)
    ids, a, b = prompt_sample(model.tokenizer, correct, template, p.fit_prompts, p.pairs["seed"]) \
        if hasattr(p, "fit_prompts") else (None, None, None)
    return ClockJob(log, patching_engine(snakemake, model), pairs, ids, a, b, positions)

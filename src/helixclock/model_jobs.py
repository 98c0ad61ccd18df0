"""What a job that runs a model does after :mod:`helixclock.pipeline`'s preconditions: load
the model on its device, build its patching engine, and for the last-token stages (sections
5.1-5.3) draw their clean/corrupted pairs and the sample of prompts whose outputs are fitted.

Only the scripts of model jobs import this module (it imports torch and transformers); table
and plotting jobs import :mod:`helixclock.pipeline` alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .io import read_json
from .models import LoadedModel, load_model, several_tokens
from .numbers import prompt_shapes
from .pairs import model_pairs, prompt_ids
from .patching import Pairs, PatchingEngine
from .pipeline import accuracy, minimum, require, start
from .preconditions import clock_needs
from .provenance import warn_if_changed
from .sampling import seeded_rows

log = logging.getLogger("helixclock")


def load(snakemake, **kwargs) -> LoadedModel:
    """Load the job's model (registry entry in params.spec) on the configured device, with the
    rule's threads; warn when the installed versions are not those its model card recorded
    (README, "Provenance of a run")."""
    if getattr(snakemake, "threads", None):
        torch.set_num_threads(int(snakemake.threads))
    card = getattr(snakemake.input, "card", None)
    if card:  # a warning when the versions are not those the model card recorded
        warn_if_changed(read_json(card), f"{snakemake.rule} of {snakemake.wildcards.model}")
    params = snakemake.params
    model = load_model(snakemake.wildcards.model, params.spec, device=params.device, **kwargs)
    log.info("loaded %s (%s) on %s as %s", model.name, model.source, model.device, model.dtype)
    return model


def open_model(snakemake, **kwargs) -> tuple[LoadedModel, PatchingEngine]:
    """The job's model and its patching engine (params.batch_size rows per forward pass)."""
    model = load(snakemake, **kwargs)
    return model, PatchingEngine(model, batch_size=snakemake.params.batch_size)


def token_shapes(model: LoadedModel, template: str, correct: pd.DataFrame) -> list[tuple] | None:
    """Numbers of several tokens: each correct prompt's token shape, with which a job checks
    ``minimum.pairs`` again once its tokenizer is loaded, against the pairs it will really draw
    (partners share a shape; the check before loading counts an upper bound); None for
    one-token numbers, whose first count is exact."""
    return prompt_shapes(model.tokenizer, template, correct) if several_tokens(model) else None


@dataclass
class ClockJob:
    """What the last-token model jobs share: the model's engine, clean/corrupted pairs of
    correct a+b prompts, the seeded sample of correct prompts whose outputs are fitted (its rows;
    of one-token numbers also their token ids and a, b; None for a job that fits none), the
    card's token positions of a+b (one-token numbers only), and the correct a+b prompts and
    their template."""

    log: logging.Logger
    engine: PatchingEngine
    pairs: Pairs
    fit_ids: torch.Tensor | None
    fit_a: np.ndarray | None
    fit_b: np.ndarray | None
    positions: dict | None
    correct: pd.DataFrame
    template: str
    fit_rows: pd.DataFrame | None = None


def clock_job(snakemake, periods: Sequence[int], fit_prompts: int | None = None) -> ClockJob:
    """Set up a last-token model job: check what its pairs (params ``pairs``: n_pairs, vary,
    seed) and its fits (helix bases of ``periods``, on ``fit_prompts`` correct prompts, or on
    every correct prompt when None) need, then load the model and draw them."""
    job_log = start(snakemake)
    p = snakemake.params
    acc = accuracy(snakemake)
    pairs_settings = p.pairs
    template = p.spec["prompts"]["add"]

    def needs(shape=None):
        return clock_needs(
            snakemake.rule,
            acc,
            periods,
            pairs_settings["n_pairs"],
            pairs_settings["vary"],
            minimum(snakemake),
            fit_prompts,
            pairs_settings["seed"],
            shape=shape,
        )

    require(snakemake, needs())
    correct = acc[acc["correct"]]
    positions = read_json(snakemake.input.card).get("positions", {}).get("add")  # one-token numbers only
    model, engine = open_model(snakemake)
    shape = token_shapes(model, template, correct)
    if shape is not None:
        require(snakemake, needs(shape))
    n_pairs, seed = pairs_settings["n_pairs"], pairs_settings["seed"]
    pairs = model_pairs(model, correct, n_pairs, seed, template, tuple(pairs_settings["vary"]))
    rows = ids = a = b = None
    if fit_prompts is not None:
        rows = seeded_rows(correct, fit_prompts, seed)
        if shape is None:  # one-token numbers: prompts of one length (several: pairs.forced_rows)
            ids, a, b = prompt_ids(model.tokenizer, template, rows), rows["a"].to_numpy(), rows["b"].to_numpy()
    return ClockJob(job_log, engine, pairs, ids, a, b, positions, correct, template, rows)

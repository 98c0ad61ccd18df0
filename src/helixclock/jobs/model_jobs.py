"""What a job that runs a model does after :mod:`helixclock.jobs.pipeline`'s preconditions: load
the model on its device, build its patching engine, count again with the tokenizer what a job
on numbers of several tokens needs (:func:`open_checked`), and for the last-token stages
(sections 5.1-5.3) draw their clean/corrupted pairs and the sample of prompts whose outputs are
fitted.  Which path a rule takes, the paper's or that of numbers of several tokens, its entry
point decides (:attr:`helixclock.lm.models.LoadedModel.tokens`); a script never does.

Only the scripts of model jobs import this module (it imports torch and transformers); table
and plotting jobs import :mod:`helixclock.jobs.pipeline` alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from ..causal.pairs import Selection, SelectionDraw, model_pairs, ranking_draw, selection_draw
from ..environment.provenance import warn_if_changed
from ..lm.models import LoadedModel, load_model
from ..lm.sources import model_resources
from ..patching import Pairs, PatchingEngine
from ..project.io import read_json
from ..prompts.numbers import prompt_shapes, task_shapes
from ..prompts.sampling import seeded_rows
from .pipeline import accuracy, minimum, require, start, usable_tasks
from .preconditions import Need, clock_needs

log = logging.getLogger("helixclock")


def load(snakemake, **kwargs) -> LoadedModel:
    """Load the job's model (registry entry in params.spec) on the configured device, with the
    rule's threads; warn when the installed versions are not those its model card recorded
    (docs/running.md, "Provenance of a run")."""
    if getattr(snakemake, "threads", None):
        torch.set_num_threads(int(snakemake.threads))
    card = getattr(snakemake.input, "card", None)
    if card:  # a warning when the versions are not those the model card recorded
        warn_if_changed(read_json(card), f"{snakemake.rule} of {snakemake.wildcards.model}")
    params = snakemake.params
    resources = model_resources(snakemake.input.get("weights"))  # a committed toy: the checkout's
    model = load_model(snakemake.wildcards.model, params.spec, device=params.device, resources=resources, **kwargs)
    log.info("loaded %s (%s) on %s as %s", model.name, model.source, model.device, model.dtype)
    return model


def open_model(snakemake, **kwargs) -> tuple[LoadedModel, PatchingEngine]:
    """The job's model and its patching engine (params.batch_size rows per forward pass)."""
    model = load(snakemake, **kwargs)
    return model, PatchingEngine(model, batch_size=snakemake.params.batch_size)


def open_checked(
    snakemake, needs: Callable[..., list[Need]], template: str, correct: pd.DataFrame
) -> tuple[LoadedModel, PatchingEngine]:
    """:func:`open_model` once what the job needs is met: ``needs()`` (its :class:`Need` rows,
    counted in the accuracy table) before the model loads, and, for numbers of several tokens,
    ``needs(shapes)`` again once the tokenizer is loaded, against the pairs the job will really
    draw (partners share a token shape: the first count is an upper bound; ``shapes``, each
    correct prompt's of ``template``).  One-token numbers: the first count is exact."""
    require(snakemake, needs())
    model, engine = open_model(snakemake)
    if model.tokens.several:
        require(snakemake, needs(prompt_shapes(model.tokenizer, template, correct)))
    return model, engine


def open_for_tasks(snakemake, frames: dict[str, pd.DataFrame]) -> tuple[dict, LoadedModel, PatchingEngine]:
    """other_tasks_patching's model and engine, and the tasks (name -> accuracy table) whose
    fits and pairs have what they need (:func:`helixclock.jobs.pipeline.usable_tasks`), counted before
    the model loads and, for numbers of several tokens, again with the tokenizer (partners of one
    token shape, as for :func:`open_checked`)."""
    frames = usable_tasks(snakemake, frames)
    model, engine = open_model(snakemake)
    if model.tokens.several:
        prompts = snakemake.params.spec["prompts"]
        frames = usable_tasks(snakemake, frames, task_shapes(model.tokenizer, prompts, frames))
    return frames, model, engine


@dataclass
class ClockJob:
    """What the last-token model jobs share: the model's engine, clean/corrupted pairs of
    correct a+b prompts, the seeded sample of correct prompts whose outputs are fitted
    (``fit_rows``; None for a job that fits none), and the correct a+b prompts and their
    template."""

    log: logging.Logger
    engine: PatchingEngine
    pairs: Pairs
    correct: pd.DataFrame
    template: str
    fit_rows: pd.DataFrame | None = None
    vary: tuple[str, ...] = ("a", "b")
    seed: int = 0

    def selection_pairs(self, selection: Selection) -> SelectionDraw | None:
        """The job's selection draw (:func:`helixclock.causal.pairs.selection_draw`): pairs of correct
        prompts that no measuring pair uses, on which the job chooses what it runs; None where
        ``selection`` keeps the choices on the measuring pairs (``compat: authors``)."""
        model = self.engine.model
        return selection_draw(model, self.correct, self.pairs, selection, self.seed, self.template, self.vary)

    def ranking_pairs(self, selection: Selection) -> Pairs | None:
        """The job's selection draw where it chooses by a sweep, not a screen
        (:func:`helixclock.causal.pairs.ranking_draw`); None as for :meth:`selection_pairs`."""
        model = self.engine.model
        return ranking_draw(model, self.correct, self.pairs, selection, self.seed, self.template, self.vary)


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

    correct = acc[acc["correct"]]
    model, engine = open_checked(snakemake, needs, template, correct)
    n_pairs, seed = pairs_settings["n_pairs"], pairs_settings["seed"]
    pairs = model_pairs(model, correct, n_pairs, seed, template, tuple(pairs_settings["vary"]))
    rows = seeded_rows(correct, fit_prompts, seed) if fit_prompts is not None else None
    vary = tuple(pairs_settings["vary"])
    return ClockJob(job_log, engine, pairs, correct, template, rows, vary, seed)


def selection(snakemake) -> Selection:
    """The job's :class:`~helixclock.causal.pairs.Selection`: the rule's params ``selection`` (config keys
    compat, clock.selection_pairs and clock.selection_attribution_pairs, the registry's clock
    overriding the last two per model; workflow/rules/params.smk, ``selection_settings``)."""
    return Selection(**snakemake.params.selection)

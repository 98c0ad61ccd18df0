"""The findings job's entry point: the saved tables in, ``findings/contrasts.csv``,
``findings/model.csv``, ``findings.md`` and ``findings.html`` out (docs/findings.md, "Findings")."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ...stats.statistics import Resampling
from .contrasts import Tables
from .page import findings_page, page_html
from .registry import Registry
from .verdicts import contrasts_table

MODEL_COLUMNS = ("task", "prompts", "correct", "accuracy_percent")


def model_table(accuracy: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """What the model is, for the page's opening line: per task of the run (``accuracy``: task ->
    its accuracy table, a row a prompt with column ``correct``), its prompts, how many the model
    answers correctly and their share in percent.  Every pair of every draw, measuring or
    selection, is drawn from a task's correct prompts (helixclock.causal.pairs)."""
    rows = [
        {
            "task": task,
            "prompts": len(t),
            "correct": int(t["correct"].sum()),
            "accuracy_percent": 100 * t.correct.mean(),
        }
        for task, t in accuracy.items()
    ]
    return pd.DataFrame(rows, columns=list(MODEL_COLUMNS))


def findings_tables(
    registry: Registry,
    several: bool,
    frames: Mapping[str, pd.DataFrame],
    prompts: Mapping[str, pd.DataFrame],
    resampling: Resampling,
    compat: str,
    model: str,
    accuracy: Mapping[str, pd.DataFrame] | None = None,
) -> dict:
    """Rule findings: ``frames`` (registry table name -> the saved table) and ``prompts`` (table
    name -> the prompts table of its job, :attr:`Table.prompts`, where it has one) give the
    contrasts table of every finding that applies to the model (``several``: numbers of several
    tokens); ``accuracy`` (task -> its accuracy table) the model table (:func:`model_table`); then
    the page, opening with the model's accuracy, and the page as HTML (the report's)."""
    contrasts = contrasts_table(registry, several, Tables(frames, prompts), resampling, compat)
    about = model_table(accuracy or {})
    page = findings_page(contrasts, model, about)
    return {"contrasts": contrasts, "model": about, "page": page, "html": page_html(page)}

"""The findings job's entry point: the saved tables in, ``findings/contrasts.csv`` and
``findings.md`` and ``findings.html`` out (docs/findings.md, "Findings")."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ...stats.statistics import Resampling
from .contrasts import Tables
from .page import findings_page, page_html
from .registry import Registry
from .verdicts import contrasts_table


def findings_tables(
    registry: Registry,
    several: bool,
    frames: Mapping[str, pd.DataFrame],
    prompts: Mapping[str, pd.DataFrame],
    resampling: Resampling,
    compat: str,
    model: str,
) -> dict:
    """Rule findings: ``frames`` (registry table name -> the saved table) and ``prompts`` (table
    name -> the prompts table of its job, :attr:`Table.prompts`, where it has one) give the
    contrasts table of every finding that applies to the model (``several``: numbers of several
    tokens), its page and the page as HTML (the report's)."""
    contrasts = contrasts_table(registry, several, Tables(frames, prompts), resampling, compat)
    page = findings_page(contrasts, model)
    return {"contrasts": contrasts, "page": page, "html": page_html(page)}

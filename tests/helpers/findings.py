"""The committed registry's findings (config/findings.yaml) run alone on one planted table: what a
stage's test shows the findings job makes of that stage's own table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from helixclock.stages.findings import registry as reg
from helixclock.stages.findings.tables import findings_tables
from helixclock.stages.findings.verdicts import COLUMNS
from helixclock.stats.statistics import Resampling


def committed_findings(ids, frames: dict[str, pd.DataFrame], several: bool = True) -> dict:
    """The contrasts table (indexed by id) and page of the committed findings ``ids`` alone,
    computed from ``frames`` (registry table name -> table)."""
    committed = reg.load()
    findings = [f for f in committed.findings if f["id"] in ids]
    assert {f["id"] for f in findings} == set(ids), "a finding the registry does not declare"
    families = {f["family"]: committed.families[f["family"]] for f in findings}
    registry = reg.Registry(committed.alpha, committed.power, families, findings, committed.min_pairs)
    out = findings_tables(registry, several, frames, {}, Resampling(bootstrap=200, seed=0), "corrected", "planted")
    return {"contrasts": out["contrasts"].set_index("id"), "page": out["page"]}


def planted_contrasts(rows: list[dict]) -> pd.DataFrame:
    """A contrasts table before judgement: every column of :data:`COLUMNS` (and ``defined``), the
    rows' given (:func:`contrast_row`)."""
    base = {"quantity": "difference", "expect": "positive", "note": np.nan, "defined": np.nan}
    table = pd.DataFrame([{**base, **row} for row in rows])
    for col in COLUMNS:
        if col not in table:
            table[col] = np.nan
    return table


def contrast_row(fid, family, kind, estimate, se, df, n_pairs, **more) -> dict:
    """One finding's row: its estimate with a +-2 SE interval."""
    return {"id": fid, "family": family, "family_kind": kind, "estimate": estimate, "se": se, "df": df,
            "n_pairs": n_pairs, "low": estimate - 2 * se, "high": estimate + 2 * se, **more}  # fmt: skip

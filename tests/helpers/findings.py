"""The committed registry's findings (config/findings.yaml) run alone on one planted table: what a
stage's test shows the findings job makes of that stage's own table."""

from __future__ import annotations

import pandas as pd

from helixclock.stages.findings import registry as reg
from helixclock.stages.findings.tables import findings_tables
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

"""The contrasts table (``findings/contrasts.csv``): every declared finding that applies to a
model, computed (:mod:`.contrasts`), tested within its family (Holm for a confirmatory family,
Benjamini-Hochberg for a screening list, none for estimates) and given its verdict, the interval
that agrees with it, and what its pair count can detect (docs/findings.md, "Findings")."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...stats.inference import t_interval, t_test
from ...stats.multiplicity import benjamini_hochberg, holm, mde, verdict
from ...stats.statistics import Resampling
from .contrasts import Tables, compute, expand
from .registry import Registry

log = logging.getLogger("helixclock")

COLUMNS = [
    "id",
    "family",
    "family_kind",
    "family_title",
    "section",
    "claim",
    "quantity",
    "x",
    "y",
    "table",
    "reading",
    "expect",
    "selection",
    "split",
    "estimate",
    "low",
    "high",
    "level",
    "interval",
    "se",
    "df",
    "p",
    "m",
    "alpha_step",
    "adj_level",
    "adj_low",
    "adj_high",
    "verdict",
    "den_estimate",
    "den_low",
    "den_high",
    "n_pairs",
    "n_clusters",
    "clusters",
    "resamples",
    "seed",
    "alpha",
    "sd_diff",
    "power",
    "mde",
    "sided",
    "detectable",
    "detectable_of",
    "note",
]
INTERVALS = {
    "mean": "t on the bootstrap SE",
    "difference": "t on the bootstrap SE, paired",
    "share_below": "t on the bootstrap SE, over units",
    "ratio": "Fieller",
    "category": "t on the bootstrap SE of g (the four means resampled together)",
}


def _label(spec: Mapping | None, fill: Mapping) -> str:
    if spec is None:
        return ""
    label = spec.get("label") or ", ".join(f"{k} {v}" for k, v in spec.items() if k not in ("table", "combine"))
    for k, v in fill.items():
        label = label.replace(f"${k}", str(v))
    return label


def contrasts_table(
    registry: Registry, several: bool, tables: Tables, resampling: Resampling, compat: str = "corrected"
) -> pd.DataFrame:
    """Rule findings: every finding of ``registry`` that applies to a model of numbers of one
    token (``several`` False) or several, computed from ``tables`` and judged within its family;
    one row per concrete finding (columns :data:`COLUMNS`)."""
    rows = []
    for finding in registry.applying(several):
        for concrete in expand(finding, tables.frames):
            row = {
                "id": concrete["id"],
                "family": concrete["family"],
                "family_kind": registry.families[concrete["family"]]["kind"],
                "family_title": registry.families[concrete["family"]]["title"],
                "section": concrete["section"],
                "claim": concrete["claim"],
                "quantity": concrete["quantity"],
                "x": _label(concrete.get("x"), concrete["fill"]),
                "y": _label(concrete.get("y"), concrete["fill"]),
                "table": concrete["table"],
                "reading": concrete["reading"],
                "expect": concrete.get("expect", ""),
                "selection": concrete.get("each", {}).get("chosen_by", ""),
                "interval": concrete["test"]["method"] if "test" in concrete else INTERVALS[concrete["quantity"]],
                "resamples": resampling.bootstrap,
                "seed": resampling.seed,
                "alpha": registry.alpha,
                "level": 100 * (1 - registry.alpha),
                "power": registry.power,
            }
            try:
                numbers = compute(concrete, tables, compat, resampling)
            except (KeyError, ValueError) as err:  # a table without the rows: said in the row, not a crash
                log.warning("finding %s not computed: %s", concrete["id"], err)
                numbers = {"note": f"not computed: {err}"}
            if "select" in concrete:
                numbers["selection"] = f"{concrete['select']['what']}: {numbers.get('selection', '')}"
            elif row["selection"] and "selection" in numbers:
                numbers["selection"] = f"{row['selection']}; {numbers['selection']}"
            rows.append({**row, **numbers})
    table = pd.DataFrame(rows)
    for col in [*COLUMNS, "defined"]:
        if col not in table:
            table[col] = np.nan
    return judge(table, registry.alpha, registry.power)[COLUMNS]


def detection(estimate: float, reject: bool, expect: str, low: float, high: float) -> str:
    """The verdict of a stage's own test (quantity ``tested``): "holds" where the family's
    multiplicity rejects on the side ``expect`` says and the stage's interval, where it has one,
    lies on that side; else "not detected" (a detection claim has no opposite to show: a useless
    nested term's held-out increment is slightly below 0, and that is not evidence against it)."""
    sign = 1 if expect == "positive" else -1
    bound = low if sign > 0 else high
    inside = np.isnan(bound) or sign * bound > 0
    return "holds" if reject and sign * estimate > 0 and inside else "not detected"


def judge(table: pd.DataFrame, alpha: float, power: float) -> pd.DataFrame:
    """p-values, the family's multiplicity (Holm, BH), verdicts, agreeing intervals and the
    minimal detectable effect at alpha' = alpha / m (Holm's first step), in place of a copy.
    A stage's own test (quantity ``tested``) keeps its p and its interval;
    only the family's multiplicity and the verdict (:func:`detection`) are applied to it."""
    t = table.copy()
    for col in ("verdict", "note"):
        t[col] = t[col].astype(object)
    judged = t["family_kind"].isin(["confirmatory", "screening"])
    given = judged & t["quantity"].eq("tested") & t["p"].notna()
    computed = judged & ~t["quantity"].eq("tested") & t["se"].notna()
    t.loc[computed, "p"] = t_test(t.loc[computed, "estimate"], t.loc[computed, "se"], t.loc[computed, "df"])
    for _, part in t[computed | given].groupby("family", sort=False):
        kind = part["family_kind"].iloc[0]
        reject, level = (holm if kind == "confirmatory" else benjamini_hochberg)(part["p"].to_numpy(), alpha)
        own = part["quantity"].eq("tested").to_numpy()
        low, high = t_interval(part["estimate"], part["se"], part["df"], level)
        t.loc[part.index, "m"] = len(part)
        t.loc[part.index, "alpha_step"] = level
        t.loc[part.index[~own], "adj_level"] = 100 * (1 - level[~own])
        t.loc[part.index[~own], "adj_low"], t.loc[part.index[~own], "adj_high"] = low[~own], high[~own]
        rows = zip(part["estimate"], reject, part["expect"], part["low"], part["high"], own)
        t.loc[part.index, "verdict"] = [
            detection(e, r, x, lo, hi) if o else verdict(e, r, x) for e, r, x, lo, hi, o in rows
        ]
        # a stage's own test says what it detects itself (e.g. the nested test's calibrated fraction)
        t.loc[part.index[~own], "mde"] = mde(part["se"][~own], 1, alpha / len(part), power)
    estimates = t["family_kind"] == "estimate"
    t.loc[estimates & t["estimate"].notna(), "verdict"] = "estimate"
    undefined = t["defined"].eq(False)
    t.loc[undefined, "verdict"] = "not defined"
    t.loc[undefined & t["note"].isna(), "note"] = "not defined: the denominator's interval includes 0"
    t.loc[t["verdict"].isna(), "verdict"] = "not computed"
    return t

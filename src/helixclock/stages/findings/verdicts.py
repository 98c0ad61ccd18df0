"""The contrasts table (``findings/contrasts.csv``): every declared finding that applies to a
model, computed (:mod:`.contrasts`), tested within its family (Holm for a confirmatory family,
Benjamini-Hochberg for a screening list, none for estimates) and given its verdict, the interval
that agrees with it, and what its pair count can detect (docs/findings.md, "Findings")."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from ...stats.inference import t_interval, t_test
from ...stats.multiplicity import benjamini_hochberg, bonferroni, holm, mde, verdict
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
    "bonf_low",
    "bonf_high",
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
    "detectable_share",
    "detectable_power",
    "also_label",
    "also_estimate",
    "also_low",
    "also_high",
    "also_p",
    "also_se",
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
    return judge(table, registry.alpha, registry.power, registry.minimum)[COLUMNS]


def detection(estimate: float, reject: bool, expect: str, low: float, high: float) -> str:
    """The verdict of a stage's own test (quantity ``tested``): "holds" where the family's
    multiplicity rejects on the side ``expect`` says and the stage's interval, where it has one,
    lies on that side; else "not detected" (a detection claim has no opposite to show: a useless
    nested term's held-out increment is slightly below 0, and that is not evidence against it)."""
    sign = 1 if expect == "positive" else -1
    bound = low if sign > 0 else high
    inside = np.isnan(bound) or sign * bound > 0
    return "holds" if reject and sign * estimate > 0 and inside else "not detected"


SIMULTANEOUS_NOTE = "Holm rejects at its step; the simultaneous (Bonferroni) interval includes 0"


def outside_note(n: int, minimum: int) -> str:
    """The note of a row left out of its family: too few pairs (or units) to carry evidence."""
    return f"outside the family: {n} pairs, below its declared minimum of {minimum}"


def _append(note, text: str) -> str:
    return text if not isinstance(note, str) or not note else f"{note}; {text}"


def judge(table: pd.DataFrame, alpha: float, power: float, minimum: Callable[[str], int] | None = None) -> pd.DataFrame:
    """p-values, the family's multiplicity (Holm, BH), verdicts, agreeing intervals, simultaneous
    (Bonferroni) intervals and the minimal detectable effect at alpha' = alpha / m (Holm's first
    step, on the row's df), in place of a copy.  A stage's own test (quantity ``tested``) keeps its
    p and its interval; only the family's multiplicity and the verdict (:func:`detection`) are
    applied to it.

    ``minimum(family)`` (the registry's declared ``min_pairs``): a row the findings job resampled
    (it has a standard error) on fewer pairs (units, for a table of units) than that is left out
    of its family's m, keeps its 95% interval, and is an "estimate" that says so in its note; a
    stage's own test (quantity ``tested``, its n counting numbers or units of its own resampling)
    is not held to it: its stage decides what its test needs."""
    t = table.copy()
    for col in ("verdict", "note"):
        t[col] = t[col].astype(object)
    judged = t["family_kind"].isin(["confirmatory", "screening"])
    given = judged & t["quantity"].eq("tested") & t["p"].notna()
    computed = judged & ~t["quantity"].eq("tested") & t["se"].notna()
    t.loc[computed, "p"] = t_test(t.loc[computed, "estimate"], t.loc[computed, "se"], t.loc[computed, "df"])
    if minimum is not None and computed.any():
        floor = t.loc[computed, "family"].map(minimum).astype(np.float64)
        small = t.loc[computed, "n_pairs"].astype(np.float64) < floor
        outside = small.index[small.to_numpy()]
        for i in outside:
            t.loc[i, "note"] = _append(t.loc[i, "note"], outside_note(int(t.loc[i, "n_pairs"]), int(floor[i])))
        t.loc[outside, "verdict"] = "estimate"
        computed = computed & ~t.index.isin(outside)
    for _, part in t[computed | given].groupby("family", sort=False):
        kind = part["family_kind"].iloc[0]
        reject, level = (holm if kind == "confirmatory" else benjamini_hochberg)(part["p"].to_numpy(), alpha)
        own = part["quantity"].eq("tested").to_numpy()
        low, high = t_interval(part["estimate"], part["se"], part["df"], level)
        m = len(part)
        t.loc[part.index, "m"] = m
        t.loc[part.index, "alpha_step"] = level
        mine = part.index[~own]
        t.loc[mine, "adj_level"] = 100 * (1 - level[~own])
        t.loc[mine, "adj_low"], t.loc[mine, "adj_high"] = low[~own], high[~own]
        # the simultaneous intervals: every row of the family at alpha / m (Bonferroni)
        b_low, b_high = t_interval(part["estimate"][~own], part["se"][~own], part["df"][~own], bonferroni(m, alpha))
        t.loc[mine, "bonf_low"], t.loc[mine, "bonf_high"] = b_low, b_high
        if kind == "confirmatory":
            covers = (b_low <= 0) & (b_high >= 0)
            for i in mine[reject[~own] & np.asarray(covers)]:
                t.loc[i, "note"] = _append(t.loc[i, "note"], SIMULTANEOUS_NOTE)
        rows = zip(part["estimate"], reject, part["expect"], part["low"], part["high"], own)
        t.loc[part.index, "verdict"] = [
            detection(e, r, x, lo, hi) if o else verdict(e, r, x) for e, r, x, lo, hi, o in rows
        ]
        # a stage's own test says what it detects itself (e.g. the nested test's calibrated fraction)
        t.loc[mine, "mde"] = mde(part["se"][~own], 1, alpha / m, power, df=part["df"][~own])
        # a stage's test with its SE and df: the MDE at alpha / m on its own side (one-sided at
        # alpha / m is the two-sided test at 2 alpha / m in that direction)
        theirs = part.index[own & part["se"].notna().to_numpy() & part["df"].notna().to_numpy()]
        if len(theirs):
            level = np.where(t.loc[theirs, "sided"].eq("two"), alpha / m, 2 * alpha / m)
            t.loc[theirs, "mde"] = mde(t.loc[theirs, "se"], 1, level, power, df=t.loc[theirs, "df"])
            # an intersection-union test (a second arm with its SE) rejects where both arms do: each
            # arm's MDE at power 1 - (1 - power) / 2, the larger, detects in both with at least
            # ``power`` (the chance that either misses is at most the sum of the two)
            both = theirs[t.loc[theirs, "also_se"].notna().to_numpy()]
            if len(both):
                each = 1 - (1 - power) / 2
                lv = level[t.loc[theirs, "also_se"].notna().to_numpy()]
                first = mde(t.loc[both, "se"], 1, lv, each, df=t.loc[both, "df"])
                second = mde(t.loc[both, "also_se"], 1, lv, each, df=t.loc[both, "df"])
                t.loc[both, "mde"] = np.fmax(first, second)
    estimates = t["family_kind"] == "estimate"
    t.loc[estimates & t["estimate"].notna(), "verdict"] = "estimate"
    undefined = t["defined"].eq(False)
    t.loc[undefined, "verdict"] = "not defined"
    t.loc[undefined & t["note"].isna(), "note"] = "not defined: the denominator's interval includes 0"
    t.loc[t["verdict"].isna(), "verdict"] = "not computed"
    return t

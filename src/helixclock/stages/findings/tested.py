"""A test its stage made, declared as a finding (quantity ``tested``; docs/findings.md, "A
stage's own test"): the nested T = 100 test's bootstrap over the numbers (section 4.1-4.2's
T = 100, rule number_bases) and the digit lens's base rate (App. F, Fig. F4, rule
neuron_logit_lens) resample what the findings job cannot redo from its tables, so their row's
estimate, interval and p are read as they are; :mod:`.verdicts` applies the family's
multiplicity and the verdict (holds / not detected)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

ALSO = ("estimate", "low", "high", "p", "se")  # a second comparison's columns (test.also)


def stage_test(rows: pd.DataFrame, finding: Mapping) -> dict:
    """The one row of ``rows`` (the finding's x matched), its estimate (x's column, minus y's
    where the finding has y), the stage's p (kept as it is: the findings job applies only the
    family's multiplicity), interval, standard error, degrees of freedom, count, calibrated
    detectable amount and a second comparison (``also``: an intersection-union test's other arm),
    as the finding's ``test`` names their columns.  A row without its p or a named interval end
    (a test the stage could not make: no units, no spread) is a ValueError: not judged."""
    if len(rows) != 1:
        raise ValueError(f"{finding['id']}: {len(rows)} rows match where one should")
    row = rows.iloc[0]
    test = finding["test"]

    def cell(key):
        return float(row[test[key]]) if key in test and pd.notna(row[test[key]]) else np.nan

    estimate = float(row[finding["x"]["column"]])
    if "y" in finding:
        estimate -= float(row[finding["y"]["column"]])
    n = row[test["n"]]
    missing = [test[k] for k in ("p", "low", "high") if k in test and pd.isna(row[test[k]])]
    if missing:
        raise ValueError(f"the stage's row has no {', '.join(missing)}")
    also = test.get("also", {})
    return {
        "estimate": estimate,
        "df": cell("df"),
        "also_label": also.get("label", ""),
        **{f"also_{k}": (float(row[also[k]]) if k in also and pd.notna(row[also[k]]) else np.nan) for k in ALSO},
        "p": cell("p"),
        "sided": test["sided"],
        "low": cell("low"),
        "high": cell("high"),
        "level": test.get("level", np.nan),
        "se": cell("se"),
        "n_pairs": int(n) if pd.notna(n) else 0,
        "clusters": test["unit"],
        "detectable": cell("detectable"),
        "detectable_of": test.get("detectable_of", ""),
        "detectable_share": cell("detectable_share"),
        "detectable_power": cell("detectable_power"),
    }

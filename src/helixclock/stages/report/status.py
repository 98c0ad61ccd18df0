"""The status of each row of paper_comparison: what the run knows about a published number.

Every row has one status of :data:`STATUSES` and its reason (docs/running.md, "The report"):

* ``agree`` / ``differ``: a scale-free quantity (a share, a ratio, a ratio to Full, a period)
  whose paper value lies inside / outside the run's widened by the declared tolerance, or whose
  bound holds / fails (:mod:`.agreement`);
* ``not comparable``: the run has a value that is not on the paper's scale, with why: an LD in
  the model's logits or another score (different metric), a count or layer that scales with the
  model (different model), the heads' top-k over a screened subset, a p-value;
* ``not run``: a task or test that did not run on this model: a task left out of Table 1 with
  the shortfall other_tasks_patching logged (count found and minimum), the carry test with
  fewer numeric wrong answers than it needs;
* ``not defined``: the quantity has no value for this model (k = 20 top heads of a model with
  8, the first layer of an a+b head when no top head is one, a stage's record that it is not
  defined for numbers of several tokens);
* ``missing``: an output table absent with no reason recorded (a results folder the DAG did
  not finish).

:func:`value_status` says from a quantity's tables whether the run has a value ("ok", or
"different metric" for a model whose numbers take several tokens, read on another score), else
why not; :func:`.compare.paper_comparison` judges a value (:func:`.agreement.judge`);
:func:`status_counts` is the table of counts per model the report shows first.

Imports no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .agreement import AGREE, DIFFER, NOT_COMPARABLE
from .quantities import NOT_DEFINED, NOT_RUN, Quantity

# what value_status says of a value (the run has one; on another score than the paper's), before
# paper_comparison judges it (.agreement)
OK, DIFFERENT_METRIC, MISSING = "ok", "different metric", "missing"
# the statuses of paper_comparison, in the order of paper_comparison_status's columns
STATUSES = (AGREE, DIFFER, NOT_COMPARABLE, NOT_RUN, NOT_DEFINED, MISSING)
SEVERAL_TOKEN_LD = (
    "numbers of several tokens: this LD scores the answer's tokens "
    '(docs/several-tokens.md, "Numbers of several tokens"), '
    "not the paper's one answer token; compare only the ratios to Full (run_to_full, paper_to_full)"
)


def value_status(
    q: Quantity,
    tables: Mapping[str, pd.DataFrame | dict | None],
    paths: Sequence[str],
    model: str,
    several: bool = False,
) -> tuple[float, str, str]:
    """(value, status, reason) of one quantity from its tables (None where a file does not
    exist), in this order:

    * a table that does not exist: "missing" with the paths;
    * a table that is a stage's record that the quantity is not defined (a column
      ``not_defined``, numbers of several tokens): "not defined" with the record's words;
    * no value in the tables: the quantity's ``gap`` ("not run" or "not defined" with why);
    * a logit difference of Table 1 (``full``), or a quantity measured on another score
      (``q.several``), of a model whose numbers take several tokens (``several``): "different
      metric";
    * else "ok" (:func:`paper_comparison` turns a bound that fails into "differs").
    """
    missing = [p for k, p in zip(q.tables, paths) if tables[k] is None]
    if missing:
        return np.nan, MISSING, "no file " + ", ".join(missing)
    undefined = [tables[k] for k in q.tables if _not_defined(tables[k])]
    if undefined:  # a stage's record in place of its table (several tokens)
        return np.nan, NOT_DEFINED, "; ".join(dict.fromkeys(str(t["not_defined"].iloc[0]) for t in undefined))
    value = float(q.extract(tables, model))
    if not np.isfinite(value):
        status, reason = q.gap(tables, model) if q.gap else (NOT_DEFINED, "no value in " + ", ".join(paths))
        return np.nan, status, reason
    if q.full is not None and several:
        return value, DIFFERENT_METRIC, SEVERAL_TOKEN_LD
    if q.several is not None and several:
        return value, DIFFERENT_METRIC, q.several
    return value, OK, ""


def _not_defined(table) -> bool:
    """Whether a table is a record saying its quantity is not defined for the model."""
    return isinstance(table, pd.DataFrame) and "not_defined" in table.columns


def status_text(status: str, reason: str) -> str:
    """A row's status with its reason: "not run: <reason>" (the reason alone where it begins
    with the status's words)."""
    if not reason:
        return status
    return reason if reason.startswith(status) else f"{status}: {reason}"


def status_counts(df: pd.DataFrame) -> pd.DataFrame:
    """paper_comparison_status: per model, how many rows have each status of :data:`STATUSES`
    (one column each, in that order), and the total."""
    unknown = sorted(set(df["status"]) - set(STATUSES))
    if unknown:
        raise ValueError(f"paper_comparison: statuses {unknown}; allowed: {', '.join(STATUSES)}")
    counts = pd.crosstab(pd.Categorical(df["model"], dict.fromkeys(df["model"])), df["status"])
    counts = counts.reindex(columns=list(STATUSES), fill_value=0).rename_axis(index="model", columns=None)
    return counts.assign(total=counts.sum(axis=1)).reset_index()

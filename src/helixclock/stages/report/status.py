"""The status of each row of paper_comparison: what the run knows about a published number.

:data:`MEANINGS` is the one vocabulary of statuses, each word with what it means; the code,
the report's captions (``workflow/report/paper_comparison*.rst``) and docs/running.md ("The
report") use its words and no others (tests/unit/test_status_vocabulary.py reads them).
:data:`STATUSES` is its words in the order of paper_comparison_status's columns.

:func:`value_status` says from a quantity's tables whether the run has a value to judge
(:data:`TO_JUDGE`, not a status: no row keeps it), else why not (missing, not defined, not run,
or not comparable where the value is on another score than the paper's);
:func:`.compare.paper_comparison` judges a value (:func:`.agreement.judge`: agree, differ or not
comparable); :func:`status_counts` is the table of counts per model the report shows first.

Imports no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...stats.statistics import MIN_ERRORS

AGREE, DIFFER, NOT_COMPARABLE = "agree", "differ", "not comparable"
NOT_RUN, NOT_DEFINED, MISSING = "not run", "not defined", "missing"

# Every status of a row of paper_comparison, with what it means (Markdown), in the order of
# paper_comparison_status's columns.  docs/running.md's table of statuses is these rows.
MEANINGS: dict[str, str] = {
    AGREE: (
        "a scale-free quantity (a share, a ratio, a Table 1 fit's ratio to Full, a period): the paper's value "
        "lies inside the run's widened by the declared tolerance (config key `report.tolerance`), or the run's "
        'value satisfies the bound the paper states ("below 0.2")'
    ),
    DIFFER: (
        "a scale-free quantity: the paper's value lies outside the run's widened by the tolerance, or the run's "
        "value fails the paper's bound"
    ),
    NOT_COMPARABLE: (
        "the run has a value, shown beside the paper's but not judged, because the two are not on one scale; "
        "the reason says why: an LD in the model's own logits (Table 1's Full, the reference of the ratios to "
        "Full by which the other fits are judged), a count or a layer that depends on the model's size, the "
        "heads' top-k over a screened subset of the heads, a p-value, a score other than the paper's for a "
        "model whose numbers take several tokens"
    ),
    NOT_RUN: (
        "a task or test that did not run on this model: a task left out of Table 1 for too few correct "
        f"prompts (the reason gives the count found and the minimum), the carry test with fewer than {MIN_ERRORS} "
        "numeric wrong answers"
    ),
    NOT_DEFINED: (
        "the quantity has no value for this model: k = 20 top heads of a model with 8, the layers of a+b heads "
        "when no top head is one, a stage's record that it is not defined for numbers of several tokens"
    ),
    MISSING: (
        "a table the quantity is read from does not exist and no reason is recorded (a results folder the "
        "pipeline did not finish); none after a finished run"
    ),
}
STATUSES = tuple(MEANINGS)

# run_values' mark of a value paper_comparison judges (.agreement.judge); not a status
TO_JUDGE = ""
# the start of the reason of a value measured on another score than the paper's (numbers of several
# tokens): not comparable, and no ratio to the paper's value
ANOTHER_SCORE = "measured on another score than the paper's"
SEVERAL_TOKEN_LD = (
    "numbers of several tokens: this LD scores the answer's tokens "
    '(docs/several-tokens.md, "Numbers of several tokens"), not the paper\'s one answer token; '
    "judged only through its ratio to Full (run_to_full beside paper_to_full)"
)


def value_status(
    q,  # a .quantities.Quantity (not imported: quantities imports this module's vocabulary)
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
    * a logit difference of Table 1 (``q.full``) of a model whose numbers take several tokens
      (``several``): :data:`TO_JUDGE` (by its ratio to Full), the reason :data:`ANOTHER_SCORE`
      (no ratio to the paper's one-token LD);
    * a quantity measured on another score (``q.several``) of such a model: "not comparable",
      the reason :data:`ANOTHER_SCORE` and what that score is;
    * else :data:`TO_JUDGE` (:func:`.compare.paper_comparison` judges it).
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
        return value, TO_JUDGE, f"{ANOTHER_SCORE}: {SEVERAL_TOKEN_LD}"
    if q.several is not None and several:
        return value, NOT_COMPARABLE, f"{ANOTHER_SCORE}: {q.several}"
    return value, TO_JUDGE, ""


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

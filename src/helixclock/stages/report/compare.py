"""The paper's published numbers beside the run's (paper_comparison).

``config/paper_values.yaml`` holds every number the paper publishes (id, description,
section, per-model values, approximate or a bound).  :data:`~.quantities.REGISTRY` (in
:mod:`.quantities`) maps each id to the output tables it is read from
(:data:`~.quantities.TABLE_FILES`, paths with ``{model}``) and the function that extracts
the run's value from them.  :func:`run_values` reads a results folder,
:func:`paper_comparison` sets the two side by side per model (a model the paper does not
report is compared with GPT-J's value, marked as such), each row with its status and reason
(:mod:`.status`), :func:`comparison_markdown` writes ``paper_comparison.md``.

Imports no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ...project.io import markdown_table
from ...project.outputs import PAPER_VALUES_SOURCE
from ...prompts.layout import NumberTokens
from ...prompts.tasks import TASKS
from .agreement import TOLERANCE, judge, screened_subset
from .quantities import REGISTRY, TAB01_COLUMNS, TABLE_FILES, Quantity
from .status import (
    ANOTHER_SCORE,
    MEANINGS,
    MISSING,
    NOT_COMPARABLE,
    NOT_DEFINED,
    STATUSES,
    TO_JUDGE,
    status_text,
    value_status,
)

REFERENCE_MODEL = "gptj"
PAPER_MODEL_NAMES = {"gptj": "GPT-J", "pythia": "Pythia-6.9B", "llama": "Llama3.1-8B"}


# ---------------------------------------------------------------- paper values

PAPER_COLUMNS = ["id", "description", "section", "model", "value", "approx", "relation", "defined_by", "quote"]
RELATIONS = ("=", "<", ">", "<=", ">=")
DEFINED_BY = ("paper", "helixclock")


def load_paper_values(path: str | Path = PAPER_VALUES_SOURCE) -> pd.DataFrame:
    """The paper's numbers, one row per (quantity, model): id, description, section, model,
    value, approx, relation, defined_by ("paper", or "helixclock" where the quantity is
    helixclock's own definition or reading of what the paper states in words), quote."""
    data = yaml.safe_load(Path(path).read_text())
    rows, seen = [], set()
    for i, q in enumerate(data.get("quantities", [])):
        missing = {"id", "description", "section", "values"} - set(q)
        if missing:
            raise ValueError(f"{path}: quantity #{i} ({q.get('id', '?')}) lacks keys {sorted(missing)}")
        if q["id"] in seen:
            raise ValueError(f"{path}: quantity id {q['id']!r} appears twice")
        seen.add(q["id"])
        relation = q.get("relation", "=")
        if relation not in RELATIONS:
            raise ValueError(
                f"{path}: quantity {q['id']!r} has relation {relation!r}; allowed: "
                + ", ".join(f"'{r}'" for r in RELATIONS)
            )
        defined_by = q.get("defined_by", "paper")
        if defined_by not in DEFINED_BY:
            raise ValueError(
                f"{path}: quantity {q['id']!r} has defined_by {defined_by!r}; allowed: " + ", ".join(DEFINED_BY)
            )
        for model, value in q["values"].items():
            rows.append(
                {
                    "id": q["id"],
                    "description": q["description"],
                    "section": q["section"],
                    "model": model,
                    "value": float(value),
                    "approx": bool(q.get("approx", False)),
                    "relation": relation,
                    "defined_by": defined_by,
                    "quote": q.get("quote", ""),
                }
            )
    return pd.DataFrame(rows, columns=PAPER_COLUMNS)


def paper_accuracy(paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's accuracies (Table A1, Table C1) as model, task, accuracy (task labels as
    in tabA1 and tabC1)."""
    labels = {f"{name}_accuracy": t.label for name, t in TASKS.items()}
    part = paper[paper["id"].isin(list(labels))]
    return pd.DataFrame(
        {
            "model": part["model"].to_numpy(),
            "task": part["id"].map(labels).to_numpy(),
            "accuracy": part["value"].to_numpy(),
        }
    )


def paper_tab01(paper: pd.DataFrame, model: str = REFERENCE_MODEL) -> pd.DataFrame:
    """The paper's Table 1 in tab01's format: task, Full, PCA, Helix, Circle, Poly."""
    rows = []
    for name, task in TASKS.items():
        vals = {
            col: paper.loc[(paper["id"] == f"tab01_{name}_{key}") & (paper["model"] == model), "value"]
            for key, col in TAB01_COLUMNS.items()
        }
        if all(len(v) for v in vals.values()):
            rows.append({"task": task.label, **{c: float(v.iloc[0]) for c, v in vals.items()}})
    return pd.DataFrame(rows, columns=["task", *TAB01_COLUMNS.values()])


# ---------------------------------------------------------------- run values


def read_table(path: str | Path) -> pd.DataFrame | dict:
    path = Path(path)
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return pd.read_csv(path)


def run_values(
    root: str | Path,
    models: Sequence[str],
    registry: Mapping[str, Quantity] = REGISTRY,
    files: Mapping[str, str] = TABLE_FILES,
) -> pd.DataFrame:
    """The run's value of every registered quantity for every model: model, id, value, file,
    status and reason (:func:`value_status`; status :data:`.status.TO_JUDGE` where the value is
    left to :func:`paper_comparison` to judge).  Each table is read once per model; the model
    card (number_tokens) is read where it exists."""
    root = Path(root)
    rows = []
    for model in models:
        cache: dict[str, pd.DataFrame | dict | None] = {}

        def table(key, cache=cache, model=model):
            if key not in files:
                raise KeyError(f"no file registered for table {key!r}; known: {sorted(files)}")
            if key not in cache:
                path = root / files[key].format(model=model)
                cache[key] = read_table(path) if path.exists() else None
            return cache[key]

        card = table("card") if "card" in files else None
        several = isinstance(card, dict) and NumberTokens.of(card).several
        for qid, q in registry.items():
            paths = [files[k].format(model=model) for k in q.tables]
            value, status, reason = value_status(q, {k: table(k) for k in q.tables}, paths, model, several)
            if qid in SCREENED and status == TO_JUDGE and "heads_topk" in files:
                subset = screened_subset(table("heads_topk"), card)
                status, reason = (NOT_COMPARABLE, subset) if subset else (status, reason)
            rows.append(
                {
                    "model": model,
                    "id": qid,
                    "value": value,
                    "file": ", ".join(paths),
                    "status": status,
                    "reason": reason,
                }
            )
    return pd.DataFrame(rows, columns=["model", "id", "value", "file", "status", "reason"])


# ---------------------------------------------------------------- the comparison

COMPARISON_COLUMNS = [
    "model",
    "id",
    "description",
    "section",
    "run_value",
    "paper_value",
    "paper_model",
    "same_model",
    "approx",
    "relation",
    "defined_by",
    "ratio",
    "run_to_full",
    "paper_to_full",
    "bound_holds",
    "status",
    "reason",
    "file",
]
SCREENED = ("heads_k_for_80pct", "heads_fraction_k20")  # over the patched heads: a screen's subset (agreement)
HOLDS = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal}


def paper_comparison(
    paper: pd.DataFrame, run: pd.DataFrame, registry: Mapping[str, Quantity] = REGISTRY, tolerance: float = TOLERANCE
) -> pd.DataFrame:
    """One row per (run model, paper quantity): the run's value beside the paper's for the
    same model, or GPT-J's where the paper gives none for it (same_model False).

    paper: :func:`load_paper_values`; run: :func:`run_values` (model, id, value, and
    optionally file, status, reason).  ratio = run / paper where the run has a value on the
    paper's scale or a value shown but not judged ("not comparable", except one measured on
    another score than the paper's); bound_holds says, for a bound ("<", ">", "<=", ">="),
    whether the run's value satisfies it (NaN for "=" quantities and rows without such a
    value); run_to_full and paper_to_full are a Table 1 LD over its task's Full
    (``registry``'s ``full``), by which Table 1's fits are judged; defined_by says whose
    definition the run's value follows.  Every row has one status of :data:`.status.STATUSES`:
    a value (:data:`.status.TO_JUDGE`) is judged by :func:`.agreement.judge` (agree or differ
    for a scale-free quantity, the paper's value within the run's widened by ``tolerance``,
    config key report.tolerance; else not comparable, with why).
    """
    paper = paper if "defined_by" in paper.columns else paper.assign(defined_by="paper")
    quantities = paper.drop_duplicates("id")[["id", "description", "section", "approx", "relation", "defined_by"]]
    by_key = paper.set_index(["id", "model"])["value"]
    run = run.set_index(["model", "id"])
    rows = []
    for model in dict.fromkeys(run.index.get_level_values(0)):
        for q in quantities.itertuples(index=False):
            paper_model = model if (q.id, model) in by_key.index else REFERENCE_MODEL
            if (q.id, paper_model) not in by_key.index:
                paper_model = paper.loc[paper["id"] == q.id, "model"].iloc[0]
            pv = float(by_key.loc[(q.id, paper_model)])
            if (model, q.id) in run.index:
                r = run.loc[(model, q.id)]
                rv, status = float(r["value"]), r.get("status", TO_JUDGE)
                reason, file = _text(r.get("reason", "")), r.get("file", "")
            else:
                rv, status, reason, file = np.nan, MISSING, "no extractor in the registry", ""
            # a value on the paper's scale, or shown but not judged (a screened subset's, a count's): its
            # ratio to the paper's is shown; one measured on another score than the paper's has none
            another_score = reason.startswith(ANOTHER_SCORE)
            comparable = status in (TO_JUDGE, NOT_COMPARABLE) and not another_score and np.isfinite(rv)
            holds = bool(HOLDS[q.relation](rv, pv)) if comparable and q.relation != "=" else np.nan
            full = registry[q.id].full if q.id in registry else None
            run_to_full = _over(rv, run["value"].get((model, full), np.nan)) if full else np.nan
            paper_to_full = _over(pv, by_key.get((full, paper_model), np.nan)) if full else np.nan
            if status == TO_JUDGE and np.isfinite(rv):
                status, reason = judge(q.id, rv, pv, q.relation, run_to_full, paper_to_full, tolerance)
            elif status == TO_JUDGE:  # a run table given without statuses, with no value
                status, reason = NOT_DEFINED, "no value in the run's table"
            rows.append(
                {
                    "model": model,
                    "id": q.id,
                    "description": q.description,
                    "section": q.section,
                    "run_value": rv,
                    "paper_value": pv,
                    "paper_model": paper_model,
                    "same_model": paper_model == model,
                    "approx": bool(q.approx),
                    "relation": q.relation,
                    "defined_by": q.defined_by,
                    "ratio": rv / pv if comparable and pv != 0 else np.nan,
                    "run_to_full": run_to_full,
                    "paper_to_full": paper_to_full,
                    "bound_holds": holds,
                    "status": status,
                    "reason": reason,
                    "file": file,
                }
            )
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def _over(value: float, reference: float) -> float:
    return value / reference if np.isfinite(value) and np.isfinite(reference) and reference != 0 else np.nan


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _fmt(v: float) -> str:
    if not np.isfinite(v):
        return "–"
    return f"{v:.0f}" if float(v).is_integer() and abs(v) >= 1 else f"{v:.4g}"


def paper_cell(row) -> str:
    """The paper's value as the paper states it: "~0.8", "< 0.2", "693 (GPT-J)"."""
    prefix = {"<": "< ", ">": "> ", "<=": "≤ ", ">=": "≥ "}.get(row["relation"], "")
    text = ("~" if row["approx"] else "") + prefix + _fmt(row["paper_value"])
    if not row["same_model"]:
        text += f" ({PAPER_MODEL_NAMES.get(row['paper_model'], row['paper_model'])})"
    return text


def comparison_markdown(df: pd.DataFrame) -> str:
    """paper_comparison.md: one section per model with quantity, where, paper, run, ratio,
    the ratios to Full of Table 1's rows, bound, definition and status."""
    lines = [
        "# The paper's numbers beside this run's",
        "",
        'Paper values: `~` approximate ("roughly", "almost"), `<`/`>`/`≤`/`≥` a bound the paper states; '
        "a model name in brackets marks GPT-J's value shown for a model the paper does not report. "
        "ratio = run / paper; for a bound, the column `bound` says whether the run satisfies it. "
        "`to Full`: a Table 1 LD over its task's Full, the run's beside the paper's. "
        "`definition`: `paper` where the paper defines the number; `helixclock` where the run's value follows "
        "helixclock's own definition or reading of words the paper gives no formula for (the `what` column "
        "says which). `status`, with its reason: "
        + "; ".join(f"`{status}`: {meaning}" for status, meaning in MEANINGS.items())
        + ".",
        "",
    ]
    for model, part in df.groupby("model", sort=False):
        table = pd.DataFrame(
            {
                "quantity": part["id"],
                "what": part["description"],
                "where": part["section"],
                "paper": [paper_cell(r) for _, r in part.iterrows()],
                "run": [_fmt(v) for v in part["run_value"]],
                "ratio": [_fmt(v) for v in part["ratio"]],
                "to Full (run, paper)": [
                    "" if pd.isna(p) else f"{_fmt(r)}, {_fmt(p)}"
                    for r, p in zip(part["run_to_full"], part["paper_to_full"])
                ],
                "bound": ["" if pd.isna(h) else ("holds" if h else "fails") for h in part["bound_holds"]],
                "definition": part["defined_by"] if "defined_by" in part else "paper",
                "status": [status_text(s, _text(r)) for s, r in zip(part["status"], part["reason"])],
            }
        )
        counts = part["status"].value_counts()
        found = int(part["run_value"].notna().sum())
        by_status = ", ".join(f"{s} {counts[s]}" for s in STATUSES if s in counts)
        lines += [f"## {model}", "", f"{found} of {len(part)} quantities measured ({by_status}).", ""]
        lines += [markdown_table(table), ""]
    return "\n".join(lines)


def paper_comparison_report(
    root: str | Path,
    models: Sequence[str],
    paper_path: str | Path = PAPER_VALUES_SOURCE,
    provenance: str | None = None,
    tolerance: float = TOLERANCE,
) -> tuple[pd.DataFrame, str]:
    """paper_comparison for ``models`` from the results under ``root``: (table, markdown); with
    ``provenance`` (the run's record, docs/running.md "Provenance of a run"), a column and a line name it."""
    table = paper_comparison(load_paper_values(paper_path), run_values(root, models), tolerance=tolerance)
    if provenance is None:
        return table, comparison_markdown(table)
    md = comparison_markdown(table).replace("\n\n", f"\n\nWhat the run ran on: `{provenance}`.\n\n", 1)
    return table.assign(provenance=provenance), md

"""The quantity registry of the paper comparison: how the run's value of each number the
paper publishes (sections 3-5, appendices A and C-F; ``config/paper_values.yaml``) is found.

:data:`REGISTRY` maps each quantity id to the output tables it is read from
(:data:`TABLE_FILES`, paths with ``{model}``) and the function that extracts the run's value
from them (:class:`Quantity`); :func:`stage_boundary` is Fig. 7's first read-out circuit MLP.

Imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...project.outputs import COMPARED_TABLES
from ...prompts.layout import READINGS
from ...prompts.tasks import N_ANSWERS, TASKS
from ...stats.statistics import MIN_ERRORS, share_set, smallest_k
from .status import NOT_DEFINED, NOT_RUN  # the vocabulary of statuses: status.MEANINGS

# Where each table lives (relative to the project folder; one place for every output path:
# helixclock.project.outputs)
TABLE_FILES = dict(COMPARED_TABLES)

Tables = Mapping[str, "pd.DataFrame | dict"]
Gap = tuple[str, str]
"""Why the run has no value: (status, reason), status "not run" (a stage or test that did not
run on this model, with the count found and the minimum) or "not defined" (the quantity has no
value for this model, e.g. k = 20 top heads of a model with 8)."""


@dataclass(frozen=True)
class Quantity:
    """How the run's value of one quantity is found: the tables it needs (keys of
    :data:`TABLE_FILES`), ``extract(tables, model) -> float`` (NaN where the run has no such
    value) and ``gap(tables, model) -> Gap``, why it has none (without one, "not defined").
    ``full``: for a logit difference of Table 1, the id of its task's Full (the layer patch),
    the reference its value is judged through (its ratio to Full; an LD itself is in the model's
    own logits).  ``several``: for a quantity that numbers of several tokens measure on another
    score than the paper's, what that score is (their rows are "not comparable", the reason
    :data:`.status.ANOTHER_SCORE` and this)."""

    tables: tuple[str, ...]
    extract: Callable[[Tables, str], float]
    gap: Callable[[Tables, str], Gap] | None = None
    full: str | None = None
    several: str | None = None


# what the neuron stage's quantities count for numbers of several tokens
UNITS = (
    "numbers of several tokens: units (layer, neuron, place) at the positions that predict the answer's digits, "
    "the top share of each place, LD the log-likelihood ratio "
    '(docs/several-tokens.md, "Numbers of several tokens"), not the '
    "last token's neurons and one answer token's logit"
)

# what Figs. F5 and F6 read for numbers of several tokens, in place of the final logits
ANSWER_SCORES = (
    "numbers of several tokens: the answers' log-likelihoods L(n) over a sample of prompts (README, \"Numbers of "
    'several tokens"), not the final logits of one answer token each; the digits build period 10 into L(n) '
    "(mistakes/logit_line_fourier.csv has the independent-digits control)"
)


# ---------------------------------------------------------------- small readers


def _at(df: pd.DataFrame, key: str, value, col: str) -> float:
    """``col`` of the first row where ``key == value`` (NaN if none)."""
    if key not in df.columns or col not in df.columns:
        raise KeyError(f"table lacks column {key!r} or {col!r}; it has {list(df.columns)}")
    rows = df.loc[df[key] == value, col]
    return float(rows.iloc[0]) if len(rows) else np.nan


def _first(df: pd.DataFrame, col: str) -> float:
    if col not in df.columns:
        raise KeyError(f"table lacks column {col!r}; it has {list(df.columns)}")
    return float(df[col].iloc[0]) if len(df) else np.nan


def _k_for(topk: pd.DataFrame, threshold: float) -> float:
    """The smallest k of a top-k curve reaching ``threshold`` in the authors' normalisation (by
    the largest effect over k); NaN when none does."""
    return smallest_k(topk, threshold, by="fraction_of_max", default=np.nan)


def last_token(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's reading of a table of the last-token stages (column ``reading``: the last
    prompt token, and for answers of several tokens the answer positions): the last token's rows."""
    return table[table["reading"] == READINGS["last"]]


def stage_boundary(stages: pd.DataFrame) -> float:
    """The first read-out circuit MLP (Fig. 7): the layer b that best splits the circuit MLPs
    into builders before b (helix(a+b)/TE > DE/TE) and readers from b on (DE/TE >=
    helix(a+b)/TE), counting agreeing MLPs; ties go to the earliest b.  ``mlp_stages.csv``:
    layer, helix_sum_over_te, de_over_te (answers of several tokens: ``de_over_te_matched``, DE/TE
    of the tokens DE scores)."""
    st = stages.sort_values("layer")
    layers = st["layer"].to_numpy()
    if not len(layers):
        return np.nan
    de_over_te = st["de_over_te_matched"] if "de_over_te_matched" in st else st["de_over_te"]
    build = (st["helix_sum_over_te"] > de_over_te).to_numpy()
    candidates = np.append(layers, layers[-1] + 1)
    score = [np.sum(build & (layers < b)) + np.sum(~build & (layers >= b)) for b in candidates]
    return float(candidates[int(np.argmax(score))])


STANDARDISED = " (length-standardised)"  # helixclock.stages.helix.tables.STANDARDISED


def standardised_column(tab01: pd.DataFrame, column: str) -> str:
    """Table 1's column as a comparison across models reads it: the length-standardised maxima
    where the model's answers take several tokens (docs/findings.md, "Findings"), else the column itself."""
    return column + STANDARDISED if column + STANDARDISED in tab01.columns else column


def _category(t: Tables, category: str, what: str) -> float:
    cats = last_token(t["heads_categories"])
    layers = cats.loc[cats["category"] == category, "layer"]
    if what == "count":
        return float(len(layers))
    return float(getattr(layers, what)()) if len(layers) else np.nan


def _circuit_share(t: Tables, model: str) -> float:
    """Share of the top neurons (``neurons``: layer) in the circuit MLPs (mlp_stages' layers)."""
    neurons = t["neurons"]
    if "in_circuit" in neurons:  # the neuron stage's own reading (units by place: the answer positions)
        return float(neurons["in_circuit"].mean())
    return float(neurons["layer"].isin(last_token(t["mlp_stages"])["layer"]).mean())


def _de80(t: Tables) -> np.ndarray:
    """The top neurons holding 80% of the total DE (one definition: helixclock.stats.statistics.share_set;
    none where the signed total is not positive)."""
    return share_set(t["neurons"]["de"].to_numpy(), 0.8)


def _n_de80(t: Tables, model: str) -> float:
    """How many top neurons hold 80% of the total DE; NaN where their signed total is not positive."""
    return float(_de80(t).sum()) if t["neurons"]["de"].sum() > 0 else np.nan


def _de80_gap(t: Tables, model: str) -> Gap:
    return NOT_DEFINED, "the top neurons' DEs sum to 0 or less: the paper's 80% DE set is not defined"


def _late_share(t: Tables, model: str) -> float:
    """Share of the 80% DE neurons (``neurons``: layer, de) in layers >= the run's stage boundary."""
    b = stage_boundary(last_token(t["mlp_stages"]))
    layers = t["neurons"]["layer"].to_numpy()[_de80(t)]
    return float((layers >= b).mean()) if len(layers) and np.isfinite(b) else np.nan


def _accuracy_at_fraction(t: Tables, model: str, fraction: float = 0.01, reading: str = "frozen") -> float:
    """Accuracy at ``fraction`` of the neurons kept (``neuron_ablation``: fraction_kept,
    accuracy_mean, reading), interpolated linearly in log(fraction_kept), under one reading of
    "kept" (frozen at the unablated values, or live)."""
    df = t["neuron_ablation"]
    df = df[df["reading"] == reading]
    df = df.sort_values("fraction_kept")
    x, y = np.log(df["fraction_kept"].to_numpy(float)), df["accuracy_mean"].to_numpy(float)
    if not len(x) or not (x[0] <= np.log(fraction) <= x[-1]):
        return np.nan
    return float(np.interp(np.log(fraction), x, y))


def _line(t: Tables, reading: str, col: str, alpha: int | None = None) -> float:
    """``col`` of App. E's table under one reading of "a line fitted to the numbers"
    (``linear_addition``: alpha, reading, ...); at ``alpha`` or the first row."""
    df = t["linear_addition"]
    df = df[df["reading"] == reading]
    return _at(df, "alpha", alpha, col) if alpha is not None else _first(df, col)


def _fit_recovery(t: Tables, model: str) -> float:
    """Mean over k of fitted / actual accuracy (``neuron_fit_eval``: k, actual_accuracy,
    fitted_accuracy; k with actual accuracy 0 skipped)."""
    df = t["neuron_fit_eval"]
    ok = df["actual_accuracy"] > 0
    return float((df.loc[ok, "fitted_accuracy"] / df.loc[ok, "actual_accuracy"]).mean()) if ok.any() else np.nan


def _logit_top_period(t: Tables, model: str) -> float:
    """The most common top period of the detrended final logits (numbers of several tokens: of
    the answers' log-likelihoods L(n)): period 199 / k of the modal frequency k; k = 20 is
    9.95, the paper's "10"."""
    k = t["logit_line_fourier"]["top_frequency"].mode()
    return float(N_ANSWERS / k.min()) if len(k) else np.nan


# ---------------------------------------------------------------- why a value is missing


def _k20_gap(t: Tables, model: str) -> Gap:
    k = last_token(t["heads_topk"])["k"]
    return NOT_DEFINED, f"k = 20 is beyond the top-k curve, which ends at k = {int(k.max()) if len(k) else 0} heads"


def _m_gap(m: int) -> Callable[[Tables, str], Gap]:
    def gap(t: Tables, model: str) -> Gap:
        ms = last_token(t["heads_mixed"])["m"]
        return (
            NOT_DEFINED,
            f"m = {m} is beyond the mixed-head sweep, which ends at m = {int(ms.max()) if len(ms) else 0}",
        )

    return gap


def _category_gap(category: str) -> Callable[[Tables, str], Gap]:
    def gap(t: Tables, model: str) -> Gap:
        n = len(last_token(t["heads_categories"]))
        return NOT_DEFINED, f"no {category} heads among the {n} top heads categorised (heads/categories.csv)"

    return gap


def _carry_gap(split: str) -> Callable[[Tables, str], Gap]:
    def gap(t: Tables, model: str) -> Gap:
        row = t["carry_test"].loc[t["carry_test"]["split"] == split]
        if not len(row):
            return NOT_DEFINED, f"no split {split!r} in mistakes/carry_test.csv"
        row = row.iloc[0]
        status = NOT_RUN if int(row["n"]) < MIN_ERRORS else NOT_DEFINED
        return status, f"carry test (App. F): {row['note']}"

    return gap


def _task_gap(task: str) -> Callable[[Tables, str], Gap]:
    """A task with no row in its table: left out of Table 1 by other_tasks_patching (the
    shortfall it logged, helix/other_tasks_left_out.csv), or not among the run's tasks."""

    def gap(t: Tables, model: str) -> Gap:
        left = t.get("tab01_left_out")
        if left is not None and (left["task"] == task).any():
            row = left.loc[left["task"] == task].iloc[0]
            return (
                NOT_RUN,
                f"{row['label']} left out of Table 1 ({row['correct']} of {row['prompts']} correct): {row['reason']}",
            )
        return NOT_RUN, f"{TASKS[task].label} is not among the run's tasks (config key accuracy.tasks)"

    return gap


def _circuit_gap(t: Tables, model: str) -> Gap:
    if not len(last_token(t["mlp_stages"])):
        return NOT_DEFINED, "no circuit MLPs: mlps/mlp_stages.csv is empty"
    return NOT_DEFINED, "no top neuron in the 80% DE set or no stage boundary"


def _errors_gap(t: Tables, model: str) -> Gap:
    row = t["error_summary"].iloc[0] if len(t["error_summary"]) else {}
    wrong, numeric = int(row.get("n_wrong", 0)), int(row.get("n_numeric", 0))
    return NOT_DEFINED, f"too few wrong answers to take the share of: {wrong} wrong, {numeric} of them numeric"


def _fraction_gap(t: Tables, model: str) -> Gap:
    kept = t["neuron_ablation"]["fraction_kept"]
    span = f"{kept.min():g}..{kept.max():g}" if len(kept) else "none"
    return NOT_DEFINED, f"1% of the neurons lies outside the fractions kept ({span}) or the reading is not in the table"


def _recovery_gap(t: Tables, model: str) -> Gap:
    return NOT_DEFINED, "the actual accuracy is 0 at every k of neurons/fit_eval.csv: no ratio fitted / actual"


# ---------------------------------------------------------------- the registry

TAB01_COLUMNS = {"full": "Full", "pca": "PCA", "helix": "Helix", "circle": "Circle", "poly": "Poly"}


def _registry() -> dict[str, Quantity]:
    reg: dict[str, Quantity] = {
        "add_accuracy": Quantity(("tabA1",), lambda t, m: _at(t["tabA1"], "model", m, "accuracy")),
        "n_heads_total": Quantity(("card",), lambda t, m: float(t["card"]["n_layers"] * t["card"]["n_heads"])),
        "heads_k_for_80pct": Quantity(("heads_topk",), lambda t, m: _k_for(last_token(t["heads_topk"]), 0.8)),
        "heads_fraction_k20": Quantity(
            ("heads_topk",), lambda t, m: _at(last_token(t["heads_topk"]), "k", 20, "fraction_of_max"), _k20_gap
        ),
        "mixed_fraction_m4": Quantity(
            ("heads_mixed",), lambda t, m: _at(last_token(t["heads_mixed"]), "m", 4, "fraction"), _m_gap(4)
        ),
        "mixed_fraction_m0": Quantity(
            ("heads_mixed",), lambda t, m: _at(last_token(t["heads_mixed"]), "m", 0, "fraction"), _m_gap(0)
        ),
        "mlp_k_for_95pct": Quantity(("mlp_topk",), lambda t, m: _k_for(last_token(t["mlp_topk"]), 0.95)),
        "mlp_circuit_first_layer": Quantity(
            ("mlp_stages",), lambda t, m: float(last_token(t["mlp_stages"])["layer"].min()), _circuit_gap
        ),
        "mlp_circuit_last_layer": Quantity(
            ("mlp_stages",), lambda t, m: float(last_token(t["mlp_stages"])["layer"].max()), _circuit_gap
        ),
        "mlp_stage_boundary": Quantity(
            ("mlp_stages",), lambda t, m: stage_boundary(last_token(t["mlp_stages"])), _circuit_gap
        ),
        "n_top_neurons": Quantity(("neurons",), lambda t, m: float(len(t["neurons"])), several=UNITS),
        "neuron_accuracy_at_1pct": Quantity(("neuron_ablation",), _accuracy_at_fraction, _fraction_gap, several=UNITS),
        "neuron_accuracy_at_1pct_live": Quantity(
            ("neuron_ablation",), lambda t, m: _accuracy_at_fraction(t, m, reading="live"), _fraction_gap, several=UNITS
        ),
        "top_neurons_in_circuit_share": Quantity(("neurons", "mlp_stages"), _circuit_share, several=UNITS),
        "n_neurons_de80": Quantity(("neurons",), _n_de80, _de80_gap, several=UNITS),
        "de80_late_share": Quantity(("neurons", "mlp_stages"), _late_share, _circuit_gap, several=UNITS),
        "neuron_fit_recovery": Quantity(("neuron_fit_eval",), _fit_recovery, _recovery_gap, several=UNITS),
        "model_accuracy_alpha100": Quantity(
            ("linear_addition",), lambda t, m: _line(t, "points", "model_accuracy", 100)
        ),
    }
    for reading in ("points", "regression", "regression_heldout"):  # App. E's readings of "a line"
        suffix = "" if reading == "points" else f"_{reading}"
        reg[f"line_r2{suffix}"] = Quantity(("linear_addition",), lambda t, m, r=reading: _line(t, r, "line_r2"))
        reg[f"linear_accuracy_alpha100{suffix}"] = Quantity(
            ("linear_addition",), lambda t, m, r=reading: _line(t, r, "linear_accuracy", 100)
        )
    reg |= {
        **{
            qid: Quantity(
                ("carry_test",), lambda t, m, s=split: _at(t["carry_test"], "split", s, "p"), _carry_gap(split)
            )
            for qid, split in (("carry_test_p", ">= 10 (carry)"), ("carry_test_p_authors", "> 10 (authors' code)"))
        },
        "logit_top_period": Quantity(("logit_line_fourier",), _logit_top_period, several=ANSWER_SCORES),
        "logit_slope_negative_share": Quantity(
            ("logit_line_fourier",),
            lambda t, m: float((t["logit_line_fourier"]["slope"] < 0).mean()),
            several=ANSWER_SCORES,
        ),
    }
    for col in ("wrong_share", "numeric_share_of_wrong", "minus10_share", "plus10_share", "top2_cumulative_share"):
        reg[col] = Quantity(("error_summary",), lambda t, m, c=col: _first(t["error_summary"], c), _errors_gap)
    for name, task in TASKS.items():
        if name != "add":
            reg[f"{name}_accuracy"] = Quantity(
                ("tabC1",), lambda t, m, lb=task.label: _at(t["tabC1"], "task", lb, "accuracy"), _task_gap(name)
            )
        for key, col in TAB01_COLUMNS.items():
            reg[f"tab01_{name}_{key}"] = Quantity(
                ("tab01", "tab01_left_out"),
                lambda t, m, lb=task.label, c=col: _at(t["tab01"], "task", lb, standardised_column(t["tab01"], c)),
                _task_gap(name),
                full=f"tab01_{name}_full",
            )
    for cat, key in (("a,b", "ab"), ("a+b", "sum"), ("mixed", "mixed")):
        reg[f"n_{key}_heads"] = Quantity(("heads_categories",), lambda t, m, c=cat: _category(t, c, "count"))
        for end in ("min", "max"):
            reg[f"{key}_heads_layer_{end}"] = Quantity(
                ("heads_categories",), lambda t, m, c=cat, e=end: _category(t, c, e), _category_gap(cat)
            )
    return reg


REGISTRY: dict[str, Quantity] = _registry()

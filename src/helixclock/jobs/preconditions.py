"""What each stage needs from a model's accuracy table, checked before the model is loaded.

"All patching experiments only use prompts the model can successfully complete": a model that
gets few a+b prompts right (a small model, a wrong prompt) leaves too few of them to draw
clean/corrupted pairs from or to fit a helix to.  Rather than loading the model and failing
deep in a job, or fitting a basis with as many parameters as rows (R² = 1 for every basis),
each stage states what it needs as :class:`Need` rows (what, found, minimum) computed from the
accuracy table alone, and :func:`check` stops the stage with one line naming the model, the
stage, the count found and the minimum.

Minimums follow from the config (``n_pairs``, ``helix.periods``, ...) and from config key
``minimum`` (:class:`Minimum`), for what is a choice:

* prompts: the residual cache (and the fit evaluation) need ``correct_prompts`` correct a+b
  prompts;
* pairs: a patching stage asking for n pairs (no more than its task has prompts) needs
  ``min(n, pairs)`` clean/corrupted pairs with different answers, and never fewer than 2 (one
  pair gives no interval); between that and n it runs, and ``draw_pairs`` warns;
* fits: a basis with m columns (parameters and the constant) needs at least ``m + spare_rows``
  rows, counted as distinct values of the variables it depends on (distinct a for helix(a),
  distinct a+b for helix(a+b), prompts for helix(a, b, a+b)).

This module imports no torch (:mod:`helixclock.prompts.sampling` and :mod:`helixclock.fitting.bases` are
torch-free), so a job checks its preconditions before torch is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..fitting.bases import Basis
from ..prompts.sampling import pairs_available, seeded_rows, split_values
from ..prompts.tasks import TASKS


class PreconditionError(RuntimeError):
    """A stage cannot run on what its model answers correctly.  The message is one line naming
    the model, the stage, what was found and the minimum."""


@dataclass(frozen=True)
class Minimum:
    """Config key ``minimum``: the correct a+b prompts the cache needs, the fewest pairs a
    patching stage runs with, and the rows a fit needs beyond its number of columns."""

    correct_prompts: int = 1
    pairs: int = 10
    spare_rows: int = 1

    def __post_init__(self):
        for key, low in (("correct_prompts", 1), ("pairs", 2), ("spare_rows", 1)):
            if getattr(self, key) < low:
                raise ValueError(f"config key 'minimum.{key}': value {getattr(self, key)!r}; allowed: >= {low}")

    def fewest_pairs(self, asked: int) -> int:
        """The fewest pairs a stage asking for ``asked`` runs with (never fewer than 2)."""
        return max(2, min(asked, self.pairs))

    def fewest_rows(self, n_columns: int) -> int:
        """The fewest rows a fit of ``n_columns`` columns accepts."""
        return n_columns + self.spare_rows


@dataclass(frozen=True)
class Need:
    """One thing a stage needs: ``found`` of ``what``, at least ``minimum`` (``source`` says
    where the minimum comes from)."""

    what: str
    found: int
    minimum: int
    source: str = ""

    @property
    def met(self) -> bool:
        return self.found >= self.minimum

    def shortfall(self, model: str, stage: str) -> str:
        """ "<model>: <stage> needs at least <minimum> <what> (<source>), found <found>"."""
        source = f" ({self.source})" if self.source else ""
        return f"{model}: {stage} needs at least {self.minimum} {self.what}{source}, found {self.found}"

    def line(self, model: str, stage: str) -> str:
        """The shortfall and what it stops: the one line a stopped job prints."""
        return f"{self.shortfall(model, stage)}; this model's {stage} and everything after it stop here"


def check(model: str, stage: str, needs: Sequence[Need]) -> None:
    """Raise :class:`PreconditionError` with the line of the first unmet need."""
    for need in needs:
        if not need.met:
            raise PreconditionError(need.line(model, stage))


def correct_rows(accuracy: pd.DataFrame) -> pd.DataFrame:
    """The correctly answered rows of an accuracy table."""
    return accuracy[accuracy["correct"].astype(bool)]


# -- counting what a table holds ---------------------------------------------------------------
def n_columns(kind: str, periods: Sequence[int], variables: Sequence[str] = ("a",)) -> int:
    """Columns (parameters and the constant) of a basis, as :class:`helixclock.fitting.bases.Basis`
    counts them; a polynomial has as many as the helix of the same periods."""
    if kind == "poly":
        return len(Basis("poly", degree=2 * len(periods) + 1, variables=tuple(variables)).columns())
    return len(Basis(kind, tuple(periods), variables=tuple(variables)).columns())


def _pairs_need(
    accuracy: pd.DataFrame,
    vary: Sequence[str],
    n_pairs: int,
    minimum: Minimum,
    key: str,
    task: str = "add",
    shape: Sequence | None = None,
) -> Need:
    """Pairs drawn from the correct rows of ``accuracy``.  A task with fewer prompts than
    ``n_pairs`` (a-23 has 77) asks for as many pairs as it has prompts.  Numbers of several
    tokens: with the correct prompts' token ``shape`` (:func:`helixclock.prompts.numbers.prompt_shapes`,
    known once the tokenizer is loaded) the count is the one the job will draw, partners of one
    shape; without it an upper bound."""
    correct = correct_rows(accuracy)
    asked = min(n_pairs, len(accuracy))
    corrupted = "+".join(f"{v}'" if v in vary else v for v in ("a", "b")) if task == "add" else "a'"
    cap = f", capped at the task's {len(accuracy)} prompts" if asked < n_pairs else ""
    shaped = ", of one token shape" if shape is not None else ""
    source = f"{corrupted} from the {len(correct)} correct {task} prompts"
    return Need(
        f"clean/corrupted pairs with different answers{shaped} ({source})",
        pairs_available(correct, vary, shape=shape),
        minimum.fewest_pairs(asked),
        f"config {key}={n_pairs}{cap}, minimum.pairs={minimum.pairs}",
    )


def _rows_need(found: int, what: str, basis: str, columns: int, minimum: Minimum) -> Need:
    return Need(
        what,
        found,
        minimum.fewest_rows(columns),
        f"{basis} has {columns} columns, + minimum.spare_rows={minimum.spare_rows}",
    )


# -- the stages --------------------------------------------------------------------------------
def cache_needs(
    accuracy: pd.DataFrame,
    minimum: Minimum,
    largest_bare_number: int | None = None,
    number_limit: int | None = None,
) -> list[Need]:
    """residual_cache: correct a+b prompts to cache, and bare numbers 0..``largest_bare_number``
    (config key cache.largest_bare_number) that the model card found to be single tokens, 0..its
    ``number_limit`` (a registry entry without ``number_limit`` leaves this to the card; with one,
    the config is checked against it before any job)."""
    needs = [_prompts_need(accuracy, minimum)]
    if largest_bare_number is not None and number_limit is not None:
        needs.append(
            Need(
                "bare numbers that are single tokens (the model card's number_limit + 1)",
                number_limit + 1,
                largest_bare_number + 1,
                f"config cache.largest_bare_number={largest_bare_number}",
            )
        )
    return needs


def _prompts_need(accuracy: pd.DataFrame, minimum: Minimum) -> Need:
    return Need(
        f"correct a+b prompts (of {len(accuracy)} prompts)",
        len(correct_rows(accuracy)),
        minimum.correct_prompts,
        f"minimum.correct_prompts={minimum.correct_prompts}",
    )


def helix_fit_needs(a: np.ndarray, periods: Sequence[int], minimum: Minimum) -> list[Need]:
    """helix_fits: more distinct a than the largest basis (helix and polynomial, 2k + 2
    columns) has columns."""
    columns = n_columns("helix", periods)
    return [
        _rows_need(
            len(np.unique(a)),
            "distinct a among the correct a+b prompts",
            f"helix(a) with T={list(periods)}",
            columns,
            minimum,
        )
    ]


def helix_patching_needs(
    accuracy: pd.DataFrame,
    periods: Sequence[int],
    n_pairs: int,
    test_fraction: float,
    seed: int,
    minimum: Minimum,
    shape: Sequence | None = None,
) -> list[Need]:
    """helix_patching: pairs a'+b -> a+b (``shape``: see :func:`_pairs_need`); the train/test
    control's fits on the train share of a; the b-token control's fits of helix(b)."""
    correct = correct_rows(accuracy)
    train = split_values(correct["a"].to_numpy(), test_fraction, seed)[0] if len(correct) else []
    columns = n_columns("helix", periods)
    return [
        _pairs_need(accuracy, ("a",), n_pairs, minimum, "helix.n_pairs", shape=shape),
        _rows_need(
            len(train),
            f"distinct a in the train split (1 - helix.test_fraction={test_fraction:g})",
            f"helix(a) with T={list(periods)}",
            columns,
            minimum,
        ),
        _rows_need(
            int(correct["b"].nunique()),
            "distinct b among the correct a+b prompts",
            f"helix(b) with T={list(periods)}",
            columns,
            minimum,
        ),
    ]


def other_tasks_needs(
    accuracy: Mapping[str, pd.DataFrame],
    periods: Sequence[int],
    n_pairs: int,
    minimum: Minimum,
    shapes: Mapping[str, Sequence] | None = None,
) -> dict[str, list[Need]]:
    """other_tasks_patching, per task: pairs varying a and more distinct a than the helix has
    columns.  The job stops when a+b lacks them and leaves out any other task that does.
    Numbers of several tokens: ``shapes`` (task -> each correct prompt's token shape,
    :func:`helixclock.prompts.numbers.prompt_shapes`) counts the pairs the job will draw, partners of
    one shape (without it, an upper bound)."""
    columns = n_columns("helix", periods)
    needs = {}
    for task, acc in accuracy.items():
        correct = correct_rows(acc)
        shape = None if shapes is None else shapes[task]
        needs[task] = [
            _pairs_need(acc, ("a",), n_pairs, minimum, "helix.n_pairs", task=task, shape=shape),
            _rows_need(
                int(correct["a"].nunique()),
                f"distinct a among the correct {task} prompts",
                f"helix(a) with T={list(periods)}",
                columns,
                minimum,
            ),
        ]
    return needs


LEFT_OUT_COLUMNS = ["task", "label", "prompts", "correct", "what", "found", "minimum", "source", "reason"]


def left_out(needs: Mapping[str, Sequence[Need]], accuracy: Mapping[str, pd.DataFrame], model: str, stage: str):
    """The tasks a stage leaves out (``needs`` per task, e.g. :func:`other_tasks_needs`), one
    row each with its first unmet need: task, label, prompts, correct (of the task's accuracy
    table), what, found, minimum, source, and reason (the line the stage logs,
    :meth:`Need.shortfall`).  The record the report reads for a row of Table 1 that did not run."""
    rows = []
    for task, task_needs in needs.items():
        unmet = [n for n in task_needs if not n.met]
        if unmet:
            acc, need = accuracy[task], unmet[0]
            rows.append(
                {
                    "task": task,
                    "label": TASKS[task].label,
                    "prompts": len(acc),
                    "correct": len(correct_rows(acc)),
                    "what": need.what,
                    "found": need.found,
                    "minimum": need.minimum,
                    "source": need.source,
                    "reason": need.shortfall(model, stage),
                }
            )
    return pd.DataFrame(rows, columns=LEFT_OUT_COLUMNS)


def other_tasks_left_out(
    accuracy: Mapping[str, pd.DataFrame],
    periods: Sequence[int],
    n_pairs: int,
    minimum: Minimum,
    model: str,
    shapes: Mapping[str, Sequence] | None = None,
) -> pd.DataFrame:
    """Rule other_tasks_left_out: the tasks other_tasks_patching leaves out of Table 1, and why
    (:func:`left_out` of :func:`other_tasks_needs`; ``shapes`` as there, for numbers of several
    tokens: :func:`helixclock.lm.model_card.tokenizer_task_shapes`)."""
    needs = other_tasks_needs(accuracy, periods, n_pairs, minimum, shapes)
    return left_out(needs, accuracy, model, "other_tasks_patching")


def clock_needs(
    stage: str,
    accuracy: pd.DataFrame,
    periods: Sequence[int],
    n_pairs: int,
    vary: Sequence[str],
    minimum: Minimum,
    fit_prompts: int | None = None,
    seed: int = 0,
    shape: Sequence | None = None,
) -> list[Need]:
    """The last-token stages: pairs of ``vary``, and rows for their fits: last_token_patching
    fits helix(a, b, a+b) to every correct prompt, head_patching to the seeded sample of
    ``fit_prompts``, mlp_patching fits helix(a+b) to that sample."""
    correct = correct_rows(accuracy)
    needs = [_pairs_need(accuracy, vary, n_pairs, minimum, "clock.n_pairs", shape=shape)]
    T = list(periods)
    if stage == "last_token_patching":
        needs.append(
            _rows_need(
                len(correct),
                "correct a+b prompts",
                f"helix(a,b,a+b) with T={T}",
                n_columns("helix", periods, ("a", "b", "a+b")),
                minimum,
            )
        )
    elif stage in ("head_patching", "mlp_patching"):
        sample = seeded_rows(correct, fit_prompts, seed)
        if stage == "head_patching":
            needs.append(
                _rows_need(
                    len(sample),
                    f"correct a+b prompts to fit (clock.fit_prompts={fit_prompts})",
                    f"helix(a,b,a+b) with T={T}",
                    n_columns("helix", periods, ("a", "b", "a+b")),
                    minimum,
                )
            )
        else:
            needs.append(
                _rows_need(
                    int((sample["a"] + sample["b"]).nunique()),
                    f"distinct a+b among the prompts fitted (clock.fit_prompts={fit_prompts})",
                    f"helix(a+b) with T={T}",
                    n_columns("helix", periods, ("a+b",)),
                    minimum,
                )
            )
    else:
        raise ValueError(f"clock_needs: stage {stage!r}; allowed: last_token_patching, head_patching, mlp_patching")
    return needs


def attribution_needs(accuracy: pd.DataFrame, attribution_pairs: int, minimum: Minimum = Minimum()) -> list[Need]:
    """neuron_attribution: its clean/corrupted pairs (a and b may both differ)."""
    return [_pairs_need(accuracy, ("a", "b"), attribution_pairs, minimum, "neurons.attribution_pairs")]


def fit_eval_needs(accuracy: pd.DataFrame, minimum: Minimum = Minimum()) -> list[Need]:
    """neuron_fit_eval: correct a+b prompts to evaluate on."""
    return [_prompts_need(accuracy, minimum)]

"""Which rows of an accuracy table a stage draws: seeded samples, value splits and
clean/corrupted partners.

"All patching experiments only use prompts the model can successfully complete": every draw
starts from a task's accuracy table restricted to its correct rows.  This module needs no model
and no torch, so :mod:`helixclock.jobs.preconditions` counts what a stage will draw before the model
is loaded, and :mod:`helixclock.causal.pairs` builds the token ids of the same draw afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def kept_operands(rows: pd.DataFrame, vary: Sequence[str]) -> list[str]:
    """The operands a clean/corrupted pair shares: those not in ``vary`` that the task has
    (single-operand tasks store b = -1)."""
    return [c for c in ("a", "b") if c not in vary and (rows[c] >= 0).any()]


def partner_keys(rows: pd.DataFrame, vary: Sequence[str], shape: Sequence | None = None) -> tuple[pd.DataFrame, list]:
    """``rows`` (index reset) and the columns a corrupted partner shares with its clean
    prompt: the kept operands, and with ``shape`` (one key per row,
    :func:`helixclock.prompts.numbers.prompt_shapes`: numbers of several tokens) the shape, column
    ``_shape``."""
    rows = rows.reset_index(drop=True)
    keep = kept_operands(rows, vary)
    if shape is not None:
        rows = rows.assign(_shape=[str(k) for k in shape])
        keep = [*keep, "_shape"]
    return rows, keep


def partner_counts(rows: pd.DataFrame, vary: Sequence[str], shape: Sequence | None = None) -> np.ndarray:
    """For each row of ``rows`` (columns a, b, answer), how many rows could be its corrupted
    partner: the same :func:`partner_keys` and a different answer.  [n] int."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    rows, keep = partner_keys(rows, vary, shape)
    group = rows.groupby(keep)["answer"].transform("size") if keep else pd.Series(len(rows), index=rows.index)
    same = rows.groupby(keep + ["answer"])["answer"].transform("size")
    return (group - same).to_numpy(dtype=np.int64)


def pairs_available(
    correct: pd.DataFrame,
    vary: Sequence[str] = ("a",),
    clean_a: Sequence[int] | None = None,
    shape: Sequence | None = None,
) -> int:
    """How many clean/corrupted pairs :func:`helixclock.causal.pairs.draw_pairs` can draw from
    ``correct``: every clean prompt (with a in ``clean_a`` when given) that has a partner.
    Numbers of several tokens also need the prompts' ``shape``; counted without it (before a
    model's tokenizer is loaded) the number is an upper bound."""
    has_partner = partner_counts(correct, vary, shape) > 0
    if clean_a is not None:
        has_partner &= correct["a"].isin(list(clean_a)).to_numpy()
    return int(has_partner.sum())


def pair_indices(
    correct: pd.DataFrame,
    n_pairs: int,
    seed: int,
    vary: Sequence[str] = ("a",),
    clean_a: Sequence[int] | None = None,
    shape: Sequence | None = None,
) -> tuple[list[int], list[int]]:
    """Row positions (in ``correct``) of up to ``n_pairs`` clean prompts and their corrupted
    partners, drawn seeded: the corrupted prompt changes the operands in ``vary``, keeps the
    others, and has another answer; with ``shape`` (one key per row: numbers of several
    tokens) it also has the clean prompt's shape, so both have the same token positions.
    Needs no model: stages count pairs before loading one.

    A pool of fewer usable clean prompts than ``n_pairs`` gives every one of them once.  Where the
    pool holds more, but at most twice as many, this still draws ``n_pairs``, not the whole pool
    (issue 53 asked for every clean prompt there): a job's selection draw is drawn apart from its
    measuring pairs (:func:`helixclock.causal.pairs.draw_apart`), so a measuring draw of the whole
    pool would leave the selection none, and drawing fewer costs only precision: the findings'
    pair bootstrap has no finite-population correction and is conservative at any sampled share
    (docs/findings.md, "The resampling unit: the pair").  No configured model comes near it (the
    real models' pools hold 1,192 and 2,086 correct prompts against at most 250 pairs)."""
    rows, keep = partner_keys(correct, vary, shape)
    rng = np.random.default_rng(seed)
    pool = np.arange(len(rows)) if clean_a is None else np.flatnonzero(rows["a"].isin(list(clean_a)).to_numpy())
    if len(pool) == 0:
        return [], []
    groups = rows.groupby(keep).indices if keep else {(): np.arange(len(rows))}
    answers = rows["answer"].to_numpy()
    # the partner key of a drawn row as the groups' dict holds it (one column: the value; several: a
    # tuple), read from the columns' arrays: a row read through pandas costs 40 us, 4 ms a draw of 50 pairs
    columns = [(c == "_shape", rows[c].to_numpy()) for c in keep]
    clean_idx, corrupt_idx = [], []
    for i in rng.permutation(len(pool)):
        row = int(pool[i])
        key = tuple(values[row] if shape_key else int(values[row]) for shape_key, values in columns)
        cands = groups[key[0] if len(key) == 1 else key]  # no partner key: (), the whole table's group
        cands = cands[answers[cands] != answers[row]]
        if len(cands) == 0:
            continue
        clean_idx.append(row)
        corrupt_idx.append(int(rng.choice(cands)))
        if len(clean_idx) == n_pairs:
            break
    return clean_idx, corrupt_idx


def split_values(values: np.ndarray, frac_test: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One seeded split of distinct values into (train, test)."""
    uniq = np.unique(values)
    rng = np.random.default_rng(seed)
    test = np.sort(rng.choice(uniq, size=max(1, int(round(frac_test * len(uniq)))), replace=False))
    return np.setdiff1d(uniq, test), test


def seeded_rows(frame: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """At most n rows of ``frame``, a seeded sample (all of them when there are fewer)."""
    return frame.sample(n=min(n, len(frame)), random_state=seed) if len(frame) > n else frame

"""App. F: the model's errors (figF1, figF2, figF5, figF6).

Why does a model that computes a+b with an algorithm still err?  The paper finds that wrong
numeric answers are mostly off by -10 or +10 (GPT-J: 45.7% and 27.9%, F1); that the -10
errors are not explained by a failed carry (chi-squared test, F2); that the neurons with the
largest direct effect boost and suppress answer tokens periodically (their logit lens, F3),
often with the period they read from the a+b helix (F4; both in :mod:`.logit_lens`);
and that the final logits over the answer tokens 0..198 have period 10 on top of a downward
slope (F5, F6), which makes a+b-10 the likeliest wrong answer.

Conventions
- Predictions are the decoded top tokens of ``add.csv`` (column ``pred``, stripped); one is
  numeric when it spells an integer; error = prediction - answer.
- Carry: the units digits of a and b sum to >= 10 (a carry); the authors' code used > 10, and
  both tests are reported.  Scipy's chi-squared test of a 2x2 table uses Yates' correction.
- Periods over the answer tokens 0..198 come from one rFFT along the token axis of a
  [n, 199] array with the DC term dropped: frequency k has period 199 / k (k = 20 is
  9.95, the "10" of the paper; k = 1 is 199, the paper's "200").

All functions are numpy/scipy/pandas (no torch) and vectorised over prompts.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from ...fitting.fourier import dominant_periods
from ...prompts.tasks import N_ANSWERS
from ...stats.statistics import MIN_ERRORS

PERIODS = (2, 5, 10, 100)
NEAR = 0.05  # a period "matches" T when within 5% of it (the paper's Fig. D12 convention)


# ---------------------------------------------------------------- F1: error distribution


def _pred_strings(pred: pd.Series) -> pd.Series:
    """The predictions as stripped strings ('' for a missing one).  ``add.csv`` read back
    by pandas may hold them as integers or floats when most are numbers."""
    if pd.api.types.is_numeric_dtype(pred):
        vals = pred.to_numpy(dtype=np.float64)
        out = [
            str(int(v)) if np.isfinite(v) and float(v).is_integer() else ("" if np.isnan(v) else str(v)) for v in vals
        ]
        return pd.Series(out, index=pred.index, dtype=object)
    return pred.fillna("").astype(str).str.strip()


def error_table(accuracy: pd.DataFrame) -> pd.DataFrame:
    """One row per wrong a+b prompt of ``add.csv`` (columns a, b, answer, pred, correct).

    Columns: a, b, answer, pred, numeric (pred spells an integer), prediction (its value,
    NaN if not numeric), error (prediction - answer), units_sum (a % 10 + b % 10).  Greedy
    decoding (numbers of several tokens) marks rows cut at its bound ``truncated``: they keep the
    column and are no numeric prediction ("1234" cut for 12 is not an error of +111).
    """
    need = {"a", "b", "answer", "pred", "correct"}
    if need - set(accuracy.columns):
        raise KeyError(f"accuracy table lacks columns {sorted(need - set(accuracy.columns))}; it needs {sorted(need)}")
    wrong = accuracy[~accuracy["correct"].astype(bool)]
    pred = _pred_strings(wrong["pred"])
    numeric = pred.str.fullmatch(r"-?\d+").fillna(False).astype(bool)
    truncated = wrong["truncated"].astype(bool) if "truncated" in wrong else None
    if truncated is not None:
        numeric &= ~truncated.to_numpy()
    value = pd.to_numeric(pred.where(numeric), errors="coerce")
    out = pd.DataFrame(
        {
            "a": wrong["a"].to_numpy(int),
            "b": wrong["b"].to_numpy(int),
            "answer": wrong["answer"].to_numpy(int),
            "pred": pred.to_numpy(object),
            "numeric": numeric.to_numpy(bool),
            "prediction": value.to_numpy(float),
        }
    )
    out["error"] = out["prediction"] - out["answer"]
    out["units_sum"] = out["a"] % 10 + out["b"] % 10
    if truncated is not None:
        out["truncated"] = truncated.to_numpy(bool)
    return out


def error_distribution(errors: pd.DataFrame) -> pd.DataFrame:
    """Counts of each error among the numeric wrong answers, most common first.

    Columns: error, count, share (of numeric wrong answers), rank (1 = most common).
    """
    num = errors.loc[errors["numeric"], "error"].astype(np.int64)
    counts = num.value_counts().rename_axis("error").reset_index(name="count")
    counts = counts.sort_values(["count", "error"], ascending=[False, True], kind="stable").reset_index(drop=True)
    counts["share"] = counts["count"] / max(len(num), 1)
    counts["rank"] = np.arange(1, len(counts) + 1)
    return counts


def error_summary(accuracy: pd.DataFrame, errors: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row: n_prompts, n_wrong, wrong_share, n_numeric (numeric wrong answers),
    numeric_share_of_wrong, top1_error, top1_share, top2_error, top2_share, top2_cumulative_share,
    minus10_share, plus10_share (shares of numeric wrong answers; paper, GPT-J: 19.5% wrong,
    over half numeric, -10 45.7%, +10 27.9%)."""
    errors = error_table(accuracy) if errors is None else errors
    dist = error_distribution(errors)
    n_wrong, n_num = len(errors), int(errors["numeric"].sum())
    share = dict(zip(dist["error"], dist["share"]))

    def top(i, col):
        return dist[col].iloc[i] if len(dist) > i else np.nan

    return pd.DataFrame(
        [
            {
                "n_prompts": len(accuracy),
                "n_wrong": n_wrong,
                "wrong_share": n_wrong / max(len(accuracy), 1),
                "n_numeric": n_num,
                "numeric_share_of_wrong": n_num / n_wrong if n_wrong else np.nan,
                "top1_error": top(0, "error"),
                "top1_share": top(0, "share"),
                "top2_error": top(1, "error"),
                "top2_share": top(1, "share"),
                "top2_cumulative_share": float(dist["share"].iloc[:2].sum()) if len(dist) else np.nan,
                "minus10_share": share.get(-10, 0.0) if n_num else np.nan,
                "plus10_share": share.get(10, 0.0) if n_num else np.nan,
            }
        ]
    )


# ---------------------------------------------------------------- F2: carry test

CARRY_SPLITS = {">= 10 (carry)": lambda s: s >= 10, "> 10 (authors' code)": lambda s: s > 10}


def too_few_errors(n: int, minimum: int = MIN_ERRORS) -> str:
    """'' when n numeric wrong answers are enough for App. F's statistics, else why not."""
    return "" if n >= minimum else f"too few errors for the test: n = {n} numeric wrong answers (at least {minimum})"


def contingency(errors: pd.DataFrame, carry_rule, error_value: int = -10) -> np.ndarray:
    """The 2x2 table over numeric wrong answers: rows (error == error_value, other error),
    columns (carry, no carry) with ``carry_rule(units_sum)`` deciding a carry."""
    num = errors[errors["numeric"]]
    hit = (num["error"] == error_value).to_numpy()
    carry = np.asarray(carry_rule(num["units_sum"].to_numpy()), dtype=bool)
    return np.array(
        [[np.sum(hit & carry), np.sum(hit & ~carry)], [np.sum(~hit & carry), np.sum(~hit & ~carry)]], dtype=np.int64
    )


def carry_test(errors: pd.DataFrame, error_value: int = -10, minimum: int = MIN_ERRORS) -> pd.DataFrame:
    """Is a carry (units digits summing to >= 10; also the authors' > 10) more frequent
    when the error is ``error_value``?  Chi-squared test of independence with Yates'
    correction (scipy's default for 2x2) on the table of :func:`contingency`.

    One row per split: split, threshold rule, n (numeric wrong answers), the four counts
    (hit_carry, hit_no_carry, other_carry, other_no_carry), carry_share_hit,
    carry_share_other, chi2, p, dof, note (why chi2 is NaN, if it is: fewer than ``minimum``
    numeric wrong answers, or an empty row or column).
    """
    # deferred: scipy.stats (about 0.5 s) only for the carry test, not in neuron_logit_lens
    from scipy.stats import chi2_contingency

    rows = []
    for split, rule in CARRY_SPLITS.items():
        table = contingency(errors, rule, error_value)
        row = {
            "split": split,
            "error_value": error_value,
            "n": int(table.sum()),
            "hit_carry": table[0, 0],
            "hit_no_carry": table[0, 1],
            "other_carry": table[1, 0],
            "other_no_carry": table[1, 1],
            "carry_share_hit": table[0, 0] / table[0].sum() if table[0].sum() else np.nan,
            "carry_share_other": table[1, 0] / table[1].sum() if table[1].sum() else np.nan,
            "chi2": np.nan,
            "p": np.nan,
            "dof": np.nan,
            "note": "",
        }
        if too_few_errors(int(table.sum()), minimum):
            row["note"] = too_few_errors(int(table.sum()), minimum)
        elif (table.sum(0) > 0).all() and (table.sum(1) > 0).all():
            res = chi2_contingency(table, correction=True)
            row.update(chi2=float(res.statistic), p=float(res.pvalue), dof=int(res.dof))
        else:
            row["note"] = "a row or column of the table is empty: no test"
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- rows of logits: line and period


def line_fits(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares line through each row of Y [n, m] against x = 0..m-1, all rows in one
    solve: (slope [n], intercept [n], line [n, m])."""
    Y = np.asarray(Y, dtype=np.float64)
    x = np.arange(Y.shape[1], dtype=np.float64)
    design = np.stack([np.ones_like(x), x], 1)  # [m, 2]
    coef, *_ = np.linalg.lstsq(design, Y.T, rcond=None)  # [2, n]
    return coef[1], coef[0], (design @ coef).T


def near(period, T: float, tol: float = NEAR):
    """Whether a period is within ``tol`` (relative) of T."""
    return np.abs(np.asarray(period, dtype=np.float64) - T) <= tol * T


def period_counts(periods: pd.Series | np.ndarray, n_tokens: int = N_ANSWERS) -> pd.DataFrame:
    """How often each top period occurs: period, frequency (n_tokens / period), count, share;
    most common first."""
    p = np.asarray(periods, dtype=np.float64)
    k = np.rint(n_tokens / p).astype(np.int64)
    counts = pd.Series(k).value_counts()
    out = pd.DataFrame({"frequency": counts.index.to_numpy(), "count": counts.to_numpy()})
    out["period"] = n_tokens / out["frequency"]
    out["share"] = out["count"] / max(len(p), 1)
    out = out.sort_values(["count", "frequency"], ascending=[False, True], kind="stable").reset_index(drop=True)
    return out[["period", "frequency", "count", "share"]]


# ---------------------------------------------------------------- F5, F6: the final logits


def read_answer_logits(path: str | Path) -> np.ndarray | None:
    """``add_logits.h5``: the final last-token logits of the answer tokens 0..198, [n, 199]
    float64, rows in ``add.csv``'s order; None where the file says they are not defined
    (numbers of several tokens)."""
    with h5py.File(path, "r") as f:
        if "not_defined" in f.attrs:
            return None
        logits = f["logits"][...].astype(np.float64)
        numbers = np.asarray(f.attrs.get("numbers", np.arange(logits.shape[1])))
    if not np.array_equal(numbers, np.arange(N_ANSWERS)) or logits.shape[1] != N_ANSWERS:
        raise ValueError(
            f"{path}: logits must cover the numbers 0..{N_ANSWERS - 1} in order; "
            f"got {logits.shape[1]} columns for numbers {numbers[:3]}..{numbers[-3:]}"
        )
    return logits


def read_answer_scores(path) -> dict[str, np.ndarray]:
    """``answer_scores.h5`` (numbers of several tokens, :mod:`.answer_scores`): ``rows`` (a
    sample of add.csv's rows), ``scores`` (the log-likelihoods L(n) of the answers 0..198 after
    them) and ``control`` (the independent-digits control)."""
    with h5py.File(path, "r") as f:
        return {name: f[name][...] for name in ("rows", "scores", "control")}


def _check_rows(logits: np.ndarray, accuracy: pd.DataFrame) -> None:
    if len(logits) != len(accuracy):
        raise ValueError(
            f"{len(logits)} rows of logits but {len(accuracy)} prompts in the accuracy table; "
            f"both must hold every a+b prompt in the same order"
        )


def logit_line_fourier(logits: np.ndarray, accuracy: pd.DataFrame, control: np.ndarray | None = None) -> pd.DataFrame:
    """Fig. F6: per prompt, the line through its logits over the tokens 0..198 and the top
    period of the detrended logits (logits - line; DC dropped).

    logits [n, 199] in ``accuracy``'s row order (a, b, answer, correct).  Columns: a, b,
    answer, correct, slope, intercept, top_period, top_frequency, top_magnitude, top_share;
    with ``control`` (numbers of several tokens: the independent-digits control of L(n),
    :mod:`.answer_scores`) also its control_slope, control_top_period and control_top_share,
    and the top period over the two-digit answers 10..99 alone (one token count; 90/k) of
    both, two_digit_top_period and control_two_digit_top_period.
    """
    _check_rows(logits, accuracy)
    slope, intercept, line = line_fits(logits)
    top = dominant_periods(np.asarray(logits, np.float64) - line)
    out = pd.DataFrame(
        {
            "a": accuracy["a"].to_numpy(int),
            "b": accuracy["b"].to_numpy(int),
            "answer": accuracy["answer"].to_numpy(int),
            "correct": accuracy["correct"].to_numpy(bool),
            "slope": slope,
            "intercept": intercept,
            "top_period": top["period"],
            "top_frequency": top["frequency"],
            "top_magnitude": top["magnitude"],
            "top_share": top["share"],
        }
    )
    if control is not None:
        _check_rows(control, accuracy)
        c_slope, _, c_line = line_fits(control)
        c_top = dominant_periods(np.asarray(control, np.float64) - c_line)
        out["control_slope"] = c_slope
        out["control_top_period"] = c_top["period"]
        out["control_top_share"] = c_top["share"]
        for name, scores in (("", logits), ("control_", control)):  # one token count: the answers 10..99
            two = np.asarray(scores, np.float64)[:, TWO_DIGITS]
            out[f"{name}two_digit_top_period"] = dominant_periods(two - line_fits(two)[2])["period"]
    return out


# Numbers of several tokens: the answers of two digits, one token count for a digit tokenizer, so
# that the steps of L(n) where the count changes (at 10 and 100) do not decide the top period
TWO_DIGITS = slice(10, 100)


def logit_examples(
    logits: np.ndarray, accuracy: pd.DataFrame, n_examples: int = 3, seed: int = 0, control: np.ndarray | None = None
) -> pd.DataFrame:
    """Fig. F5: the final logits over the tokens 0..198 of ``n_examples`` prompts drawn with
    ``seed``, with each prompt's line and the top period of its detrended logits.

    Long format, one row per (example, token): example, a, b, answer, pred, correct, token,
    logit, line, slope, top_period; with ``control`` (numbers of several tokens) its values too.
    """
    _check_rows(logits, accuracy)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(logits), size=min(n_examples, len(logits)), replace=False))
    Y = np.asarray(logits, np.float64)[rows]
    slope, _, line = line_fits(Y)
    top = dominant_periods(Y - line)
    sub = accuracy.iloc[rows]
    m = Y.shape[1]
    out = pd.DataFrame(
        {
            "example": np.repeat(np.arange(len(rows)), m),
            "a": np.repeat(sub["a"].to_numpy(int), m),
            "b": np.repeat(sub["b"].to_numpy(int), m),
            "answer": np.repeat(sub["answer"].to_numpy(int), m),
            "pred": np.repeat(_pred_strings(sub["pred"]).to_numpy(object), m) if "pred" in sub else "",
            "correct": np.repeat(sub["correct"].to_numpy(bool), m),
            "token": np.tile(np.arange(m), len(rows)),
            "logit": Y.ravel(),
            "line": line.ravel(),
            "slope": np.repeat(slope, m),
            "top_period": np.repeat(top["period"], m),
        }
    )
    if control is not None:
        out["control"] = np.asarray(control, np.float64)[rows].ravel()
    return out


# ---------------------------------------------------------------- all tables of a stage


def wrong_answers(
    accuracy: pd.DataFrame, final_scores: str | Path, several: bool, seed: int = 0
) -> dict[str, pd.DataFrame]:
    """Rule model_errors' entry point: :func:`wrong_answer_tables` of ``add.csv`` and the final
    scores over the answers 0..198 in the file ``final_scores``: the final logits of
    ``add_logits.h5`` (:func:`read_answer_logits`), or for numbers of several tokens (``several``:
    :attr:`helixclock.lm.models.LoadedModel.tokens` of the model's registry entry, the rule's param) the
    log-likelihoods L(n) of a sample of prompts and their control in ``answer_scores.h5``
    (:func:`read_answer_scores`)."""
    if several:
        s = read_answer_scores(final_scores)
        return wrong_answer_tables(accuracy, s["scores"], seed=seed, rows=s["rows"], control=s["control"])
    return wrong_answer_tables(accuracy, read_answer_logits(final_scores), seed=seed)


def wrong_answer_tables(
    accuracy: pd.DataFrame,
    logits: np.ndarray | None = None,
    n_examples: int = 3,
    seed: int = 0,
    rows: np.ndarray | None = None,
    control: np.ndarray | None = None,
) -> dict[str, pd.DataFrame]:
    """The App. F tables that need no neurons, from ``add.csv`` (and ``add_logits.h5``'s
    logits, [10000, 199] in the same row order): wrong_answers (F1, F2), error_distribution,
    error_summary (F1), carry_test (F2), and with logits logit_examples (F5) and
    logit_line_fourier (F6).  Numbers of several tokens: ``logits`` are the log-likelihoods
    L(n) of the prompts of add.csv's ``rows`` (a sample), with their ``control``
    (:mod:`.answer_scores`)."""
    errors = error_table(accuracy)
    out = {
        "wrong_answers": errors,
        "error_distribution": error_distribution(errors),
        "error_summary": error_summary(accuracy, errors),
        "carry_test": carry_test(errors),
    }
    if logits is not None:
        prompts = accuracy if rows is None else accuracy.iloc[rows].reset_index(drop=True)
        out["logit_examples"] = logit_examples(logits, prompts, n_examples, seed, control)
        out["logit_line_fourier"] = logit_line_fourier(logits, prompts, control)
    else:  # numbers of several tokens: a record in place of each table that needs them
        record = pd.DataFrame({"not_defined": [NO_ANSWER_TOKENS]})
        out["logit_examples"] = out["logit_line_fourier"] = record
    return out


NO_ANSWER_TOKENS = (
    "not defined for numbers of several tokens: Figs. F5 and F6 read the final logits over the answers "
    "0..198 as tokens, and this model's answers are not single tokens"
)

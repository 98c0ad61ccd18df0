"""Metrics of a patched run, computed from its logits at the answer positions.

A metric is a function ``metric(logits, rows, pairs) -> Tensor [rows]`` of the patched run's
logits at the answer positions [rows, k, vocab] (float32; k = 1, the last token, for a
one-token answer), the pair index of each row and the pair set, whose unpatched runs the engine
has computed before it calls the metric (the corrupted run's score is the baseline of LD).  It
is a plain argument of :meth:`PatchingEngine.run <helixclock.patching.engine.PatchingEngine.run>`,
LD by default.

The paper's answers are one token, and its LD is a logit difference:

    LD = logit_patched(clean answer) - logit_corrupted(clean answer).

An answer of k tokens (numbers of several tokens, helixclock's extension) is scored by teacher
forcing: the rows run the prompt followed by the clean answer's tokens, and each token y_j is
scored at the position that predicts it.  Summed raw logits would assume that the softmax's
normaliser is the same at every position and under every patch, which it is not (a corrupted
run can give the clean answer's digits larger logits and still a lower probability); such pairs
(``Pairs.scoring == "logprob"``) are scored by log-probability, and LD is the log-likelihood
ratio of the clean answer,

    LD = sum_j [log p_patched(y_j) - log p_corrupted(y_j)]  (+ the same term of the token that
         ends the answer, where the prompt's format fixes one: the few-shot prefix's newline),

which :func:`ld_terms` splits into its terms by place value (units, tens, hundreds: a digit
tokenizer's answer tokens from the last), the end's term, and the raw-logit sum of the answer's
own tokens (``ld_raw``, the score before log-probabilities) beside it.

"A one-token answer keeps the paper's LD" needs every pair of the set to read one position (a
one-token answer and no end token): the scoring is the set's (``Pairs.scoring``,
:func:`helixclock.causal.pairs.draw_pairs`), so one pair of several tokens scores every pair of its set
by log-probability, its one-token pairs included.  A set of one-position pairs is scored by the
paper's logit difference exactly, and the several-token code paths then give the paper path's
tables (tests/unit/test_readings.py).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..prompts.layout import DIGIT_PLACES
from .runs import Pairs

Metric = Callable[[Tensor, Tensor, Pairs], Tensor]

SCORINGS = ("logit", "logprob")
PLACES = DIGIT_PLACES  # answer tokens by place value, from the last
TERMS = ("ld", "ld_raw", *PLACES, "end")  # the rows of an LD table of answers of several tokens


def answer_logits(logits: Float[Tensor, "row k vocab"], answers: Int[Tensor, "row _"]) -> Float[Tensor, "row k"]:
    """The logit of each answer token at its position, [rows, k]: ``logits`` [rows, k, V],
    ``answers`` [rows, >= k] (columns past k are not read)."""
    k = logits.shape[1]
    return logits.gather(2, answers[:, :k, None])[..., 0]


LSE_CHUNK = 1 << 20  # logits a row-wise reduction reads at once: 4 MB of float32 temporaries, reused


def _by_rows(fn: Callable[[Tensor], Tensor], rows: Float[Tensor, "row vocab"]) -> Tensor:
    """``fn(rows)`` for a row-wise ``fn``, a few rows at a time (bit for bit the same): its
    temporaries stay small enough to be reused from the allocator and the cache, not fresh pages
    every call.  Chunks by ``split``, not slices: a slice's backward adds a zero tensor of the
    whole input (attribution patching differentiates this), split's is one concatenation."""
    step = max(1, LSE_CHUNK // max(1, rows.shape[-1]))
    if rows.shape[0] <= step:
        return fn(rows)
    return torch.cat([fn(chunk) for chunk in rows.split(step)])


def logsumexp(logits: Float[Tensor, "*row vocab"]) -> Float[Tensor, "*row"]:
    """``torch.logsumexp`` over the last axis, equal to it bit for bit, a few rows at a time
    (:func:`_by_rows`; 50 rows of three positions over Gemma-3's 262k tokens are 157 MB;
    `benchmarks/logsumexp.py`, 2 cores: [50, 3, 262144] 141 -> 53 ms, [50, 3, 49152] 16.5 -> 13.2 ms)."""
    flat = logits.reshape(-1, logits.shape[-1])
    return _by_rows(lambda x: torch.logsumexp(x, -1), flat).view(logits.shape[:-1])


def log_softmax_at(logits: Float[Tensor, "row vocab"], columns: Int[Tensor, " col"]) -> Float[Tensor, "row col"]:
    """``torch.log_softmax(logits, -1)[:, columns]``, equal to it bit for bit, a few rows at a
    time (:func:`_by_rows`; 512 rows over Gemma-3's 262k tokens are 512 MB)."""
    columns = columns.to(logits.device)
    return _by_rows(lambda x: torch.log_softmax(x, -1)[:, columns], logits)


def answer_positions(
    logits: Float[Tensor, "row k vocab"], answers: Int[Tensor, "row _"], scoring: str
) -> Float[Tensor, "row k"]:
    """Each answer token's score at its position: its logit (``scoring="logit"``) or its
    log-probability (``"logprob"``)."""
    if scoring == "logit":
        return answer_logits(logits, answers)
    if scoring == "logprob":  # log_softmax at the answer tokens only (no [rows, k, V] copy)
        return answer_logits(logits, answers) - logsumexp(logits)
    raise ValueError(f"scoring {scoring!r}; allowed: {', '.join(SCORINGS)}")


def padded_positions(values: Float[Tensor, "row k"], width: int) -> Float[Tensor, "row width"]:
    """Per-position values of rows that read k positions, NaN-padded to ``width`` columns (the
    rows of several layouts read different numbers of positions)."""
    if values.shape[1] == width:
        return values
    out = values.new_full((values.shape[0], width), float("nan"))
    out[:, : values.shape[1]] = values
    return out


def answer_score(
    logits: Float[Tensor, "row k vocab"], rows: Int[Tensor, " row"], pairs: Pairs
) -> Float[Tensor, " row"]:
    """The clean answer's score in the patched run: the sum of its positions' scores (for a
    one-token answer its logit)."""
    return answer_positions(logits, pairs.answers[rows], pairs.scoring).sum(1)


def logit_difference(
    logits: Float[Tensor, "row k vocab"], rows: Int[Tensor, " row"], pairs: Pairs
) -> Float[Tensor, " row"]:
    """LD = score_patched(clean answer) - score_corrupted(clean answer): for a one-token answer
    logit_patched - logit_corrupted, for answers of several tokens the log-likelihood ratio."""
    return answer_score(logits, rows, pairs) - pairs.corrupted_run.answer_score()[rows]


def direct_effect_terms(pairs: Pairs) -> dict[str, str]:
    """The ``term`` column of a DE's rows in a table of TE's terms (:func:`ld_terms`): a DE has no
    terms of its own, it is the LD of the component's direct path, term "ld"; pairs scored by
    the paper's logit difference have no terms (no column)."""
    return {"term": TERMS[0]} if pairs.scoring == SCORINGS[1] else {}


def clean_answer_logit(
    logits: Float[Tensor, "row k vocab"], rows: Int[Tensor, " row"], pairs: Pairs
) -> Float[Tensor, " row"]:
    """The clean answer's score in the patched run (its logit, for a one-token answer)."""
    return answer_score(logits, rows, pairs)


def _ld_of_score(score: Float[Tensor, " row"], rows: Int[Tensor, " row"], pairs: Pairs) -> Float[Tensor, " row"]:
    return score - pairs.corrupted_run.answer_score()[rows]


# metrics that are functions of :func:`answer_score` alone, by the function of that score that
# gives them: a sweep that has already scored a run's answer (``RunResult.answer``) computes such
# a metric from it, not from the logits again (bit for bit the same)
OF_ANSWER_SCORE: dict[Metric, Callable[[Tensor, Tensor, Pairs], Tensor]] = {
    logit_difference: _ld_of_score,
    clean_answer_logit: lambda score, rows, pairs: score,
}


def answer_correct(
    logits: Float[Tensor, "row k vocab"], rows: Int[Tensor, " row"], pairs: Pairs
) -> Float[Tensor, " row"]:
    """1.0 where greedy decoding of the patched run writes the clean answer, else 0.0: the top
    token is the answer's at each of its positions and, where the position after the answer is
    read (an end token is scored), the top token there does not continue the answer (is not one
    of ``pairs.digits``: greedy decoding stops at the first token that is not spelled by 0-9,
    :mod:`helixclock.stages.accuracy.greedy`)."""
    k = logits.shape[1]
    top = logits.argmax(-1)
    end = pairs.groups[0].layout.end if len(pairs.groups) == 1 else _group_end(pairs, rows)
    if not end:
        return (top == pairs.answers[rows, :k]).all(1).float()
    own = (top[:, : k - 1] == pairs.answers[rows, : k - 1]).all(1)
    stops = (
        ~torch.isin(top[:, k - 1], pairs.digits)
        if pairs.digits is not None
        else top[:, k - 1] == pairs.answers[rows, k - 1]
    )
    return (own & stops).float()


def _group_end(pairs: Pairs, rows: Int[Tensor, " row"]) -> int:
    """Whether the rows' group reads an end position (a batch never mixes groups)."""
    first = int(rows[0])
    return next(g.layout.end for g in pairs.groups if g.start <= first < g.stop)


def ld_terms(
    patched: Float[Tensor, "*variant pair k"],
    patched_raw: Float[Tensor, "*variant pair k"],
    pairs: Pairs,
) -> dict[str, Float[Tensor, "*variant pair"]]:
    """The terms of LD for answers of several tokens (:data:`TERMS`), from the patched run's
    per-position scores and raw logits (NaN past a pair's positions; e.g. ``RunResult.positions``)
    and the pairs' corrupted run: ``ld`` their sum over every position read (the metric),
    ``ld_raw`` the raw-logit sum over the answer's own tokens, one term per place value of the
    answer's tokens counted from its last (NaN where an answer has no such token) and ``end``
    (NaN where no end token is scored)."""
    base, base_raw = pairs.corrupted_run.positions, pairs.corrupted_run.positions_raw
    if base is None:
        raise RuntimeError("the corrupted run of these pairs has not been computed yet")
    diff, diff_raw = patched - base, patched_raw - base_raw
    k = pairs.answer_tokens()  # [pair]
    read = torch.arange(diff.shape[-1], device=diff.device)
    own = read[None, :] < k[:, None]  # [pair, K]: the answer's own tokens
    nan = torch.full_like(diff[..., 0], float("nan"))
    out = {"ld": diff.nansum(-1), "ld_raw": torch.where(own, diff_raw, 0.0).nansum(-1)}
    for place, name in enumerate(PLACES):
        j = k - 1 - place  # the position predicting the token of this place value
        has = j >= 0
        got = diff.gather(-1, j.clamp(min=0).expand(*diff.shape[:-1]).unsqueeze(-1))[..., 0]
        out[name] = torch.where(has, got, nan)
    ends = torch.tensor([g.layout.end for g in pairs.groups for _ in range(g.stop - g.start)], device=diff.device)
    got = diff.gather(-1, k.clamp(max=diff.shape[-1] - 1).expand(*diff.shape[:-1]).unsqueeze(-1))[..., 0]
    out["end"] = torch.where(ends.bool(), got, nan)
    return out

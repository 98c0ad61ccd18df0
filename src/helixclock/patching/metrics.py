"""Metrics of a patched run, computed from its logits at the answer positions.

A metric is a function ``metric(logits, rows, pairs) -> Tensor [rows]`` of the patched run's
logits at the answer positions [rows, k, vocab] (float32; k = 1, the last token, for a
one-token answer), the pair index of each row and the pair set, whose unpatched runs the engine
has computed before it calls the metric (the corrupted run's score is the baseline of LD).  It
is a plain argument of :meth:`PatchingEngine.run <helixclock.patching.engine.PatchingEngine.run>`,
LD by default.

An answer of k tokens is scored by teacher forcing: the rows run the prompt followed by the
clean answer's first k - 1 tokens, and the *score* of the answer is the sum of its tokens'
logits at the k positions that predict them.  The logit difference generalises to

    LD = score_patched(clean answer) - score_corrupted(clean answer),

which for a one-token answer is the paper's LD = logit_patched - logit_corrupted exactly.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxtyping import Float, Int
from torch import Tensor

from .runs import Pairs

Metric = Callable[[Tensor, Tensor, Pairs], Tensor]


def answer_logits(logits: Float[Tensor, "row k vocab"], answers: Int[Tensor, "row _"]) -> Float[Tensor, "row k"]:
    """The logit of each answer token at its position, [rows, k]: ``logits`` [rows, k, V],
    ``answers`` [rows, >= k] (columns past k are not read)."""
    k = logits.shape[1]
    return logits.gather(2, answers[:, :k, None])[..., 0]


def logit_difference(
    logits: Float[Tensor, "row k vocab"], rows: Int[Tensor, " row"], pairs: Pairs
) -> Float[Tensor, " row"]:
    """LD = score_patched(clean answer) - score_corrupted(clean answer) (the sum of the answer
    tokens' logits; for a one-token answer logit_patched - logit_corrupted)."""
    base = pairs.corrupted_run.answer_score()[rows]
    return answer_logits(logits, pairs.answers[rows]).sum(1) - base


def clean_answer_logit(
    logits: Float[Tensor, "row k vocab"], rows: Int[Tensor, " row"], pairs: Pairs
) -> Float[Tensor, " row"]:
    """The clean answer's score in the patched run (its logit, for a one-token answer)."""
    return answer_logits(logits, pairs.answers[rows]).sum(1)


def answer_correct(
    logits: Float[Tensor, "row k vocab"], rows: Int[Tensor, " row"], pairs: Pairs
) -> Float[Tensor, " row"]:
    """1.0 where the patched run's top token is the clean answer's at every answer position
    (teacher-forced: greedy decoding would write the clean answer's tokens, whatever follows
    them), else 0.0."""
    k = logits.shape[1]
    return (logits.argmax(-1) == pairs.answers[rows, :k]).all(1).float()

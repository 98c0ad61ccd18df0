"""Metrics of a patched run, computed from its last-token logits.

A metric is a function ``metric(logits, rows, engine, pairs) -> Tensor [rows]`` of the
patched run's last-token logits [rows, vocab] (float32), the pair index of each row and the
pair set; the engine passes it as a plain argument, LD by default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from torch import Tensor

if TYPE_CHECKING:
    from .engine import PatchingEngine
    from .runs import Pairs

Metric = Callable[[Tensor, Tensor, "PatchingEngine", "Pairs"], Tensor]


def logit_difference(logits: Tensor, rows: Tensor, engine: PatchingEngine, pairs: Pairs) -> Tensor:
    """LD = logit_patched(clean answer) - logit_corrupted(clean answer)."""
    answer = pairs.clean_answer[rows]
    base = pairs.corrupted_run.answer_logit(engine, pairs.clean_answer)[rows]
    return logits.gather(1, answer[:, None])[:, 0] - base


def clean_answer_logit(logits: Tensor, rows: Tensor, engine: PatchingEngine, pairs: Pairs) -> Tensor:
    """The clean answer's logit in the patched run."""
    return logits.gather(1, pairs.clean_answer[rows][:, None])[:, 0]


def answer_correct(logits: Tensor, rows: Tensor, engine: PatchingEngine, pairs: Pairs) -> Tensor:
    """1.0 where the patched run's top token is the clean answer, else 0.0."""
    return (logits.argmax(-1) == pairs.clean_answer[rows]).float()

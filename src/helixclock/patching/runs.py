"""Clean/corrupted prompt pairs and the unpatched runs every experiment on them reuses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torch import Tensor

from .points import Point

if TYPE_CHECKING:
    from .engine import PatchingEngine


class RunCache:
    """Values at points and last-token logits of one unpatched run (the clean or the
    corrupted side of a pair set): each point is computed once, by one forward pass for all
    points asked for together, and reused by every later experiment on the same pairs."""

    def __init__(self, ids: Tensor, desc: str):
        self.ids = ids  # [n, seq] token ids
        self.desc = desc
        self.values: dict[Point, Tensor] = {}
        self.logits: Tensor | None = None  # [n, vocab], float32

    def get(self, engine: PatchingEngine, points: Sequence[Point]) -> dict[Point, Tensor]:
        missing = [p for p in dict.fromkeys(points) if p not in self.values]
        if missing or self.logits is None:
            values, self.logits = engine.collect(self.ids, missing, desc=self.desc)
            self.values.update(values)
        return {p: self.values[p] for p in points}

    def answer_logit(self, engine: PatchingEngine, answers: Tensor) -> Tensor:
        """Logit of ``answers`` [n] (token ids) in this run, [n]."""
        self.get(engine, [])
        return self.logits.gather(1, answers[:, None])[:, 0]


@dataclass
class Pairs:
    """Clean/corrupted prompt pairs of one task; tensors live on the model's device.

    ``clean_run`` and ``corrupted_run`` cache the unpatched runs of both sides."""

    clean: Tensor  # [n, seq] token ids
    corrupted: Tensor  # [n, seq]
    clean_answer: Tensor  # [n] token ids
    corrupted_answer: Tensor  # [n]
    meta: dict = field(default_factory=dict)
    clean_run: RunCache = field(init=False, repr=False)
    corrupted_run: RunCache = field(init=False, repr=False)

    def __post_init__(self):
        self.clean_run = RunCache(self.clean, "clean run")
        self.corrupted_run = RunCache(self.corrupted, "corrupted run")

    def __len__(self) -> int:
        return int(self.clean.shape[0])

    def same(self) -> Pairs:
        """Pairs whose corrupted prompt is the clean one (for ablations: LD is then the change
        of the clean answer's logit); the clean run is shared."""
        out = Pairs(self.clean, self.clean, self.clean_answer, self.clean_answer, dict(self.meta))
        out.corrupted_run = out.clean_run = self.clean_run
        return out

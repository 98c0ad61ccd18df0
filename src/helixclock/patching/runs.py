"""Clean/corrupted prompt pairs and the unpatched runs every experiment on them reuses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..prompts.layout import Group, single_group
from .points import Point


class RunCache:
    """Values at points, last-token logits and the answer's score of one unpatched run (the
    clean or the corrupted side of a pair set), kept so that every later experiment on the same
    pairs reuses them.  The engine fills it (:meth:`PatchingEngine.unpatched
    <helixclock.patching.engine.PatchingEngine.unpatched>`): each point is computed once, by one
    forward pass for all points asked for together; the cache itself runs nothing.

    ``answers`` [n, K] are the tokens the run is scored on (teacher-forced: the clean answer's
    tokens and, where the prompt's format fixes one, the token that ends it; a row's group reads
    its first ``layout.answer``), under ``scoring`` (:data:`~.metrics.SCORINGS`: each token's
    logit, or its log-probability)."""

    def __init__(
        self,
        ids: Int[Tensor, "row seq"],
        desc: str,
        groups: Sequence[Group] | None = None,
        answers: Int[Tensor, "row k"] | None = None,
        scoring: str = "logit",
    ):
        self.ids = ids  # [n, seq] token ids (right-padded where groups differ in length)
        self.desc = desc
        self.groups = list(groups) if groups is not None else single_group(*ids.shape)
        self.answers = answers
        self.scoring = scoring
        self.values: dict[Point, Tensor] = {}
        # (prefix length, l): resid_pre[l] at every position run (PatchingEngine.residuals)
        self.residuals: dict[tuple[int, int], Tensor] = {}
        # prefix length: per layer (keys, values) [n, kv heads, positions run, d_head] of every
        # position a forward with that prefix runs (PatchingEngine.keys_values)
        self.kv: dict[int, list[tuple[Tensor, Tensor]]] = {}
        self.logits: Tensor | None = None  # [n, vocab] at the last prompt token, float32
        self.scores: Tensor | None = None  # [n] the answers' teacher-forced score (the sum over positions)
        self.positions: Tensor | None = None  # [n, K] each position's score, NaN past a row's positions
        self.positions_raw: Tensor | None = None  # [n, K] each position's logit of its token

    def missing(self, points: Sequence[Point]) -> list[Point]:
        """The points of ``points`` not computed yet (in order, without repeats)."""
        return [p for p in dict.fromkeys(points) if p not in self.values]

    @property
    def collected(self) -> bool:
        """Whether the run itself (its logits and scores) has been computed."""
        return self.logits is not None

    def store(
        self,
        values: dict[Point, Float[Tensor, "row pos *feature"]],
        logits: Float[Tensor, "row vocab"],
        positions: tuple[Float[Tensor, "row k"], Float[Tensor, "row k"]] | None,
    ) -> None:
        """Keep what one forward pass over every row gave: values, last-token logits and the
        answer positions' (scores, raw logits)."""
        self.values.update(values)
        self.logits = logits
        if positions is not None:
            self.positions, self.positions_raw = positions
            self.scores = self.positions.nansum(1)

    def _require(self) -> None:
        if not self.collected:
            raise RuntimeError(
                f"the {self.desc} of these pairs has not been computed yet "
                "(PatchingEngine.clean_logits / corrupted_logits or run compute it)"
            )

    def answer_logit(self, answers: Int[Tensor, " row"]) -> Float[Tensor, " row"]:
        """Logit of ``answers`` [n] (token ids) at the last prompt token of this run, [n]."""
        self._require()
        return self.logits.gather(1, answers[:, None])[:, 0]

    def answer_score(self) -> Float[Tensor, " row"]:
        """The teacher-forced score of the run's answers, [n]: the sum over the positions read
        of each token's score (for a one-token answer its logit at the last token)."""
        self._require()
        return self.scores


@dataclass
class Pairs:
    """Clean/corrupted prompt pairs of one task; tensors live on the model's device.

    ``clean_run`` and ``corrupted_run`` cache the unpatched runs of both sides.  With numbers
    of several tokens, ``groups`` say which rows share a token layout (a clean prompt and its
    corrupted partner always share one) and ``answers`` [n, K] hold the clean answers' tokens,
    the rows' sequences being the prompts followed by those tokens but the last (teacher
    forcing); by default every row has one layout and a one-token answer, ``clean_answer``.
    ``scoring`` says how a run's answer is scored: "logit" (the paper's LD) or "logprob"
    (answers of several tokens, :mod:`helixclock.patching.metrics`)."""

    clean: Int[Tensor, "pair seq"]  # token ids
    corrupted: Int[Tensor, "pair seq"]
    clean_answer: Int[Tensor, " pair"]  # token ids (the first token of the answer)
    corrupted_answer: Int[Tensor, " pair"]
    meta: dict = field(default_factory=dict)
    groups: list[Group] | None = None
    answers: Int[Tensor, "pair k"] | None = None  # the clean answers' tokens (and end token)
    scoring: str = "logit"
    digits: Int[Tensor, " token"] | None = None  # tokens that continue an answer (greedy decoding's)
    clean_run: RunCache = field(init=False, repr=False)
    corrupted_run: RunCache = field(init=False, repr=False)

    def __post_init__(self):
        if self.groups is None:
            self.groups = single_group(*self.clean.shape)
        if self.answers is None:
            self.answers = self.clean_answer[:, None]
        self.clean_run = RunCache(self.clean, "clean run", self.groups, self.answers, self.scoring)
        self.corrupted_run = RunCache(self.corrupted, "corrupted run", self.groups, self.answers, self.scoring)

    def __len__(self) -> int:
        return int(self.clean.shape[0])

    def answer_tokens(self) -> Int[Tensor, " pair"]:
        """Each pair's number of answer tokens (the positions read but the end's)."""
        k = torch.empty(len(self), dtype=torch.long, device=self.clean.device)
        for g in self.groups:
            k[g.start : g.stop] = g.layout.answer_tokens
        return k

    def same(self) -> Pairs:
        """Pairs whose corrupted prompt is the clean one (for ablations: LD is then the change
        of the clean answer's logit); the clean run is shared."""
        out = Pairs(
            self.clean,
            self.clean,
            self.clean_answer,
            self.clean_answer,
            dict(self.meta),
            self.groups,
            self.answers,
            self.scoring,
            self.digits,
        )
        out.corrupted_run = out.clean_run = self.clean_run
        return out

    def spread(self, n: int) -> Pairs:
        """``n`` pairs spread evenly over the pairs' order: every token layout in proportion to
        its pairs (:meth:`take` would take the first layouts only), each layout's rows in their
        (random) drawn order."""
        if n >= len(self):
            return self
        rows = np.unique(np.linspace(0, len(self) - 1, n).round().astype(np.int64))
        groups, start = [], 0
        for g in self.groups:
            k = int(((rows >= g.start) & (rows < g.stop)).sum())
            if k:
                groups.append(Group(start, start + k, g.layout))
                start += k
        index = torch.as_tensor(rows, device=self.clean.device)
        return Pairs(
            self.clean[index],
            self.corrupted[index],
            self.clean_answer[index],
            self.corrupted_answer[index],
            {k: v[rows] if isinstance(v, np.ndarray) and len(v) == len(self) else v for k, v in self.meta.items()},
            groups,
            self.answers[index],
            self.scoring,
            self.digits,
        )

    def take(self, n: int) -> Pairs:
        """The first ``n`` pairs (their groups cut to match)."""
        groups = [Group(g.start, min(g.stop, n), g.layout) for g in self.groups if g.start < n]
        return Pairs(
            self.clean[:n],
            self.corrupted[:n],
            self.clean_answer[:n],
            self.corrupted_answer[:n],
            {k: v[:n] if hasattr(v, "__len__") and len(v) == len(self) else v for k, v in self.meta.items()},
            groups,
            self.answers[:n],
            self.scoring,
            self.digits,
        )

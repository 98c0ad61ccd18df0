"""Where the numbers are in each prompt: token layouts of rows (numbers of several tokens).

With the paper's models every number is one token, so every prompt of a task has the same
length and a, b and the last token sit at the same positions in all of them.  A tokenizer that
splits numbers (into digits, or into chunks) gives prompts of several lengths: 7+8= and 17+28=
differ by two tokens.  helixclock then groups rows by *layout* (docs/several-tokens.md, "Numbers of several
tokens"): a :class:`Layout` is what a run of rows shares - the sequence length, the token
span of each operand and the number of answer tokens read after the prompt.  Rows are sorted
so that each layout is one contiguous :class:`Group`; the engine never puts two layouts in one
forward pass, so no padding token is ever run and every position is exact.

A :class:`~helixclock.patching.points.Point` names positions as integers (shared by every row,
as with single-token numbers) or as *roles* resolved per group:

=========  ===================================================================
role       positions
=========  ===================================================================
``a``      the last token of operand a (a number's representation, README)
``b``      the last token of operand b
``a_span`` every token of a (a layer patch of the whole number)
``b_span`` every token of b
``last``   the last prompt token (the "=" that predicts the answer)
``answer`` every position that predicts an answer token: the last prompt token and the
           answer's tokens but its last (teacher-forced), the units digit's predictor last
=========  ===================================================================

A span's tokens are padded to the widest span of the rows by repeating its first token, so a
point has the same number of positions in every group (patching a position twice with the
same clean value is the same as patching it once).

Answers of several tokens are scored by teacher forcing: the prompt is followed by the
answer's tokens, and the logits of the last ``answer`` positions are read (one position, the
last token, for a one-token answer).  Where the prompt's format fixes the token that ends an
answer (the newline of a few-shot prefix; ``end`` = 1), the row holds the whole answer and the
last position read predicts that token; without one (``end`` = 0) the row stops before the
answer's last token.  The ``answer`` role is the positions read but the end's, padded like a
span to the most answer tokens of the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

ROLES = ("a", "b", "a_span", "b_span", "last", "answer")
# the readings of the last-token stages for answers of several tokens (Figs. 5-7, D2-D8: column
# ``reading``): at role "last" (the paper's reading), at role "answer" (patched together), and at
# p*, the position that predicts the first answer token the clean and the corrupted answer do not
# share (key "differ": the pairs cut after p*, :func:`helixclock.causal.experiments.first_difference_pairs`;
# reported by stratum, :data:`STRATA`, never averaged over kinds of position)
READINGS = {"last": "last token", "answer": "answer positions", "differ": "first differing token"}
ROLE_READINGS = ("last", "answer")  # the readings at a role of the pairs' own rows, patched on every pair
# a pair's stratum at the first differing token: its answer's token count and p*, counted in answer
# tokens before it (0: the last prompt token; 1: the position after the answer's first token, ...)
STRATA = ("answer_tokens", "p_star")
# The places of an answer's tokens, counted from its last token: what the neuron stage's unit
# (layer, neuron, place) is read at (:mod:`helixclock.stages.neurons.places`).  Where numbers take
# several tokens (a digit tokenizer's) they are the digits' places; where every number is one
# token (the paper's models) an answer has one place, the whole number: its one token is the
# number 0..198, not a digit, and the paper's neurons at the last token are its units.
DIGIT_PLACES = ("units", "tens", "hundreds")
NUMBER = "number"
PLACE_ORDER = (NUMBER, *DIGIT_PLACES)  # every place's name, in the order the tables list them


def place_index(place: str) -> int:
    """Where a place's token sits in an answer, counted from its last token (0: the whole number
    or the units digit, 1: the tens digit, 2: the hundreds digit)."""
    return 0 if place == NUMBER else DIGIT_PLACES.index(place)


def whole_numbers(places) -> bool:
    """Whether units of these places are read at one-token numbers (the place :data:`NUMBER`)
    rather than at digits (:data:`DIGIT_PLACES`): the one fact of the token layout the neuron
    stage's outputs differ by where they must - the logit lens reads the answer tokens 0..198
    (App. F: W_U W_out, no final norm) or the digit tokens (through the final norm, with a base
    rate), and Eq. 5 is fitted beside the digit basis at digits only.  A model's units are all of
    one kind; no unit at all (an empty table) reads as the paper's."""
    return not set(places) & set(DIGIT_PLACES)


@dataclass(frozen=True)
class NumberTokens:
    """How a model writes numbers, the one switch of helixclock's extension of the paper
    (docs/several-tokens.md, "Numbers of several tokens"): registry key ``number_tokens``, which
    the model card copies and the loaded model carries (:attr:`helixclock.lm.models.LoadedModel.tokens`).

    ``several`` False is the paper's case, every number one token: it is the one-place case of
    the several-token path, whose roles resolve to one position each (the card's a, b and last)
    and whose answers are scored by the paper's logit difference.  Where numbers may take
    several tokens, a model's answers are read at more places (:attr:`readings`) and a set of
    pairs with an answer of several tokens is scored by its log-likelihood ratio
    (:mod:`helixclock.patching.metrics`)."""

    several: bool = False

    @classmethod
    def of(cls, entry) -> NumberTokens:
        """The switch of a registry entry or a model card (mappings that hold ``number_tokens``;
        an entry without the key is the paper's)."""
        value = entry.get("number_tokens", "one")
        if value not in ("one", "several"):
            raise ValueError(f"number_tokens is {value!r}: allowed one, several")
        return cls(value == "several")

    @property
    def places(self) -> tuple[str, ...]:
        """The places an answer's tokens can have, counted from its last token (0 first): the whole
        number alone where every number is one token (:data:`NUMBER`: the paper's neurons at the
        last token), the digits' places where numbers take several (:data:`DIGIT_PLACES`)."""
        return DIGIT_PLACES if self.several else (NUMBER,)

    @property
    def readings(self) -> tuple[str, ...]:
        """The readings of the last-token stages (keys of :data:`READINGS`): the paper's last
        token alone where every number is one token (its answer positions and its first
        differing token are that token), and, where numbers take several tokens, the answer
        positions and the first differing token beside it."""
        return ("last", "answer", "differ") if self.several else ("last",)


@dataclass(frozen=True)
class Layout:
    """Token positions a group of rows shares: sequence ``length`` (prompt and teacher-forced
    answer tokens), each operand's span [start, end) and the number of positions read
    (``answer``: the logits of the last ``answer`` positions score it; the prompt's last token
    is the first of them), of which the last ``end`` (0 or 1) predicts the token that ends the
    answer rather than one of its own tokens."""

    length: int
    spans: tuple[tuple[str, int, int], ...] = ()
    answer: int = 1
    width: tuple[tuple[str, int], ...] = field(default=(), compare=False)  # widest span per operand (and "answer")
    end: int = 0

    @property
    def answer_tokens(self) -> int:
        """How many answer tokens the row's positions predict (the positions read but the end's)."""
        return self.answer - self.end

    def resolve(self, position: int | str) -> tuple[int, ...]:
        """The token positions of an integer position (itself) or a role (:data:`ROLES`)."""
        if isinstance(position, (int, np.integer)):
            return (int(position),)
        if position == "last":
            return (self.length - self.answer,)
        if position == "answer":
            first, k = self.length - self.answer, self.answer_tokens
            wide = dict(self.width).get("answer", k)
            return tuple(range(first, first + k)) + (first,) * (wide - k)
        spans = {name: (start, end) for name, start, end in self.spans}
        name, _, kind = position.partition("_")
        if name not in spans or kind not in ("", "span"):
            raise KeyError(f"position {position!r}: this layout has roles {self.roles()}; roles: {', '.join(ROLES)}")
        start, end = spans[name]
        if not kind:
            return (end - 1,)
        wide = dict(self.width).get(name, end - start)
        return tuple(range(start, end)) + (start,) * (wide - (end - start))

    def roles(self) -> list[str]:
        return [r for r in ROLES if r in ("last", "answer") or r.split("_")[0] in {s[0] for s in self.spans}]

    def positions(self, positions: Sequence[int | str]) -> list[int]:
        """All token positions of a point's positions (roles resolved, in order)."""
        return [p for q in positions for p in self.resolve(q)]

    def first_position(self, points: Sequence) -> int:
        """The first position a forward pass of these rows must run for ``points`` (objects with
        ``positions``, as :class:`~helixclock.patching.points.Point`): the earliest position
        they touch (negative ones counted from the end), at most the first answer position,
        whose logits are read.  Every position before it computes what any run of the same
        tokens computes (causal attention), so its keys and values can be taken from one."""
        touched = [p if p >= 0 else self.length + p for pt in points for p in self.positions(pt.positions)]
        return min(touched + [self.length - self.answer])


@dataclass(frozen=True)
class Group:
    """Rows [start, stop) sharing one layout."""

    start: int
    stop: int
    layout: Layout


def single_group(n: int, length: int) -> list[Group]:
    """Every row of a tensor [n, length] in one group (the layout of equal-length prompts)."""
    return [Group(0, n, Layout(length))]


def layout_order(keys: Sequence[tuple]) -> np.ndarray:
    """A stable order of rows that makes rows of equal layout keys contiguous, in order of
    first appearance (rows of one layout keep their order; one layout: the identity)."""
    first: dict = {}
    rank = np.array([first.setdefault(k, len(first)) for k in keys], dtype=np.int64)
    return np.argsort(rank, kind="stable")


def groups_of(layouts: Sequence[Layout]) -> list[Group]:
    """Groups of consecutive rows with equal layouts (rows already in :func:`layout_order`)."""
    out: list[Group] = []
    for i, layout in enumerate(layouts):
        if out and out[-1].layout == layout:
            out[-1] = Group(out[-1].start, i + 1, layout)
        else:
            out.append(Group(i, i + 1, layout))
    return out


def boundaries(groups: Sequence[Group], repeats: int = 1) -> list[int]:
    """Row indices where a batch must end: the ends of the groups, for rows stacked group by
    group with each group's rows ``repeats`` times in turn (a patching run's variants);
    [] when every row shares one layout."""
    return [repeats * g.stop for g in groups[:-1]]


def group_at(groups: Sequence[Group], row: int) -> Group:
    """The group of a row."""
    for g in groups:
        if g.start <= row < g.stop:
            return g
    raise IndexError(f"row {row} is in no group (rows 0..{groups[-1].stop - 1})")

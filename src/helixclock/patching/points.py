"""What a patch touches: points of the hook vocabulary, patches and records.

A :class:`Point` names a hook point of :mod:`helixclock.lm.models` (``resid_pre``, ``head_out``,
``neuron_post``, ...) at a layer and token positions; ``index`` narrows it to one head of
``head_out`` or one neuron of ``neuron_pre``/``neuron_up``/``neuron_post``.  A :class:`Patch`
replaces (or adds to) a point's value in the corrupted run; a :class:`Record` reads a point
inside a patched run.  A *variant* is a list of patches and records applied together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from ..prompts.layout import ROLES

INDEXED = ("head_out", "neuron_pre", "neuron_up", "neuron_post")  # kinds an index can narrow

Replacement = str | Tensor | Callable[[Tensor, Tensor], Tensor]


@dataclass(frozen=True)
class Point:
    """A hook point at token positions; ``index`` selects one head (head_out) or one neuron
    (neuron_pre, neuron_up, neuron_post).  A position is an integer (the same in every row;
    negative counts from the end) or a role of :data:`helixclock.prompts.layout.ROLES` ("a",
    "last", ...), resolved by each row's token layout."""

    kind: str
    layer: int | None = None
    positions: tuple[int | str, ...] = (-1,)
    index: int | None = None

    def __post_init__(self):
        pos = (self.positions,) if isinstance(self.positions, (int, str)) else tuple(self.positions)
        for p in pos:
            if isinstance(p, str) and p not in ROLES:
                raise ValueError(f"position {p!r}: not an integer or a role; roles: {', '.join(ROLES)}")
        object.__setattr__(self, "positions", tuple(p if isinstance(p, str) else int(p) for p in pos))
        if self.index is not None and self.kind not in INDEXED:
            raise ValueError(f"hook point {self.kind!r} takes no index; indexed kinds: {', '.join(INDEXED)}")

    @property
    def name(self) -> str:
        """Short label: L3H7 for a head, L3N120 for a neuron, MLP3 / attn3 / resid3 otherwise."""
        if self.kind == "head_out" and self.index is not None:
            return f"L{self.layer}H{self.index}"
        if self.kind.startswith("neuron") and self.index is not None:
            return f"L{self.layer}N{self.index}"
        short = {"mlp_out": "MLP", "attn_out": "attn", "resid_pre": "resid", "resid_mid": "mid"}
        return f"{short.get(self.kind, self.kind)}{self.layer}"


@dataclass
class Patch:
    """Replace ``point`` by ``value``: "clean" (the clean run's value), a tensor of shape
    [n_pairs, n_positions, *features] (or broadcastable to it), or a function
    ``f(clean, corrupted) -> value`` of tensors of that shape.  ``add=True`` adds the value to
    the corrupted one instead of replacing it.  ``where`` (a boolean tensor over the last
    feature axis, e.g. [d_mlp], or broadcastable to the value's shape, the pair axis included)
    limits the patch to those features: a few neurons of a layer in one patch."""

    point: Point
    value: Replacement = "clean"
    add: bool = False
    where: Tensor | None = None


@dataclass(frozen=True)
class Record:
    """A variant element that reads ``point`` in that variant's rows, after the variant's
    patches upstream of it took effect (path patching's first pass)."""

    point: Point

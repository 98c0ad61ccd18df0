"""The shared prompt prefix, run once.

Prompts of a task share their instruction ("Output ONLY a number.\\n"), and no patch at or
after the first operand can change it.  The prefix is run once and its key/value cache is
handed to every row, so a forward pass computes only the positions from the earliest patched
or recorded one onwards (exact up to float rounding).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch
from torch import Tensor

from ..prompts.layout import Group, Layout
from .points import Point


class PrefixCache:
    """Key/value caches of shared prompt prefixes of one model, memoised by their tokens."""

    def __init__(self, hf_model: torch.nn.Module, enabled: bool = True, window: int | None = None):
        self.hf = hf_model
        self.enabled = enabled
        self.window = window  # sliding-window attention: a cached prefix is exact only within it
        self._kv: dict = {}
        self._cache_key: str | None = None

    def length(self, ids: Sequence[Tensor], points: Sequence[Point], groups: Sequence[Group] | None = None) -> int:
        """Tokens shared by every row of every ``ids`` [n, seq] and before every point's
        positions in every group's layout (roles resolved), leaving every answer position
        (at least the last token) to run."""
        seq = ids[0].shape[1]
        if not self.enabled or not self.exact_for(seq):
            return 0
        layouts = [g.layout for g in groups] if groups else [Layout(seq)]
        first = ids[0][:1]
        same = torch.ones(seq, dtype=torch.bool, device=first.device)
        for x in ids:
            same &= (x == first).all(0)
        shared = int(same.long().cumprod(0).sum())
        return max(0, min([shared] + [lay.first_position(points) for lay in layouts]))

    def exact_for(self, length: int) -> bool:
        """Whether kept keys and values are exact for a pass of ``length`` tokens: always, except
        past a sliding attention window (a kept key may then be one the window drops)."""
        return self.window is None or length <= self.window

    def get(self, ids: Tensor, length: int) -> tuple[int, list | None]:
        """(length, per-layer (keys, values)) of the first ``length`` tokens of ``ids[0]``."""
        if length == 0:
            return 0, None
        key = (ids.device, tuple(ids[0, :length].tolist()))
        if key not in self._kv:
            with torch.no_grad():
                out = self.hf(ids[:1, :length], use_cache=True)
            self._kv[key] = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        return length, self._kv[key]

    def cache_kwargs(self, cache) -> dict:
        """Forward keywords that hand ``cache`` to the model: ``cache=`` where its forward takes
        it (transformers 5.x deprecates ``past_key_values=``), else ``past_key_values=``."""
        if self._cache_key is None:
            params = inspect.signature(self.hf.forward).parameters
            self._cache_key = "cache" if "cache" in params else "past_key_values"
        return {self._cache_key: cache, "use_cache": True}

    @staticmethod
    def expand(kv: list, rows: int):
        """A transformers cache holding the prefix for ``rows`` rows (views, no copies)."""
        # deferred: transformers stays out of the jobs that load no model (neuron_fits)
        from transformers import DynamicCache

        cache = DynamicCache()
        for i, (k, v) in enumerate(kv):
            cache.update(k.expand(rows, *k.shape[1:]), v.expand(rows, *v.shape[1:]), i)
        return cache

"""The batched activation-patching engine.

Activation patching asks which internal value carries the information a model uses.
Run the model on a *clean* prompt (``a+b``) and on a *corrupted* one (``a'+b``); then
rerun the corrupted prompt with one internal value replaced by its clean counterpart
(or by a model of it, such as a helix fit) and measure how far the output moves back
towards the clean answer.  The default metric is the logit difference

    LD = logit_patched(clean answer) - logit_corrupted(clean answer),

so LD = 0 means the patched value carries nothing the model uses, and patching
everything the model needs restores the clean logit.

This engine is the one place every causal experiment goes through.  A *patch* names
a hook point (see :mod:`helixclock.models`), token positions, and a replacement: the
clean value, a tensor, or a function of the clean and the corrupted value.  A
*variant* is a list of patches applied together.  :meth:`PatchingEngine.run` stacks
all variants along the batch dimension (row ``v * n_pairs + i`` is pair ``i`` under
variant ``v``), so a whole layer sweep of many fits is a handful of forward passes.
Clean activations and corrupted logits are computed once per pair set and reused;
everything stays on the model's device until the final result.  Prompts of a task share
their instruction prefix, and no patch at or after the first operand can change it, so the
prefix is run once and its key/value cache is given to every row: only the positions from
the earliest patched or recorded one onwards are computed (exact up to float rounding).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence, Union

import torch
from torch import Tensor

from .models import LoadedModel, Site

log = logging.getLogger("helixclock")

Replacement = Union[str, Tensor, Callable[[Tensor, Tensor], Tensor]]


@dataclass(frozen=True)
class Point:
    """A hook point at given token positions; ``head`` selects one head of head_out."""

    kind: str
    layer: int | None = None
    positions: tuple[int, ...] = (-1,)
    head: int | None = None

    def __post_init__(self):
        pos = self.positions
        if isinstance(pos, int):
            object.__setattr__(self, "positions", (pos,))
        else:
            object.__setattr__(self, "positions", tuple(int(p) for p in pos))


@dataclass
class Patch:
    """Replace ``point`` by ``value``: "clean" (the clean run's value), a tensor of
    shape [n_pairs, n_positions, *features] (or broadcastable to it), or a function
    ``f(clean, corrupted) -> value`` of tensors of that shape.  ``add=True`` adds the
    value to the corrupted one instead of replacing it."""

    point: Point
    value: Replacement = "clean"
    add: bool = False


@dataclass(frozen=True)
class Record:
    """A variant element that reads ``point`` in that variant's rows, after the variant's
    patches upstream of it took effect (path patching's first pass)."""

    point: Point


@dataclass
class Pairs:
    """Clean/corrupted prompt pairs of one task; tensors live on the model's device."""

    clean: Tensor  # [n, seq] token ids
    corrupted: Tensor  # [n, seq]
    clean_answer: Tensor  # [n] token ids
    corrupted_answer: Tensor  # [n]
    meta: dict = field(default_factory=dict)
    _clean_cache: dict = field(default_factory=dict, repr=False)
    _corrupted_cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.clean.shape[0])

    def to(self, device) -> "Pairs":
        return Pairs(self.clean.to(device), self.corrupted.to(device),
                     self.clean_answer.to(device), self.corrupted_answer.to(device), dict(self.meta))


@dataclass
class RunResult:
    """Per-row outputs of a patched run, shaped [n_variants, n_pairs, ...]."""

    metric: Tensor
    answer_logit: Tensor
    records: dict[Point, Tensor]
    last_logits: Tensor | None = None
    variant_records: list[dict[Point, Tensor]] | None = None


class OOMRetry:
    """Run ``fn(start, stop)`` over ``n`` rows in chunks of ``batch_size``; on CUDA
    out-of-memory halve the chunk, say so in the log, and retry the same rows."""

    def __init__(self, batch_size: int, desc: str = "", progress: bool = True):
        self.batch_size = max(1, int(batch_size))
        self.desc = desc
        self.progress = progress

    def iterate(self, n: int, fn: Callable[[int, int], object]) -> Iterator[object]:
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc=self.desc, disable=not self.progress or n <= self.batch_size,
                   file=sys.stderr, leave=False)
        start = 0
        while start < n:
            stop = min(n, start + self.batch_size)
            try:
                result = fn(start, stop)
            except torch.cuda.OutOfMemoryError:
                if self.batch_size == 1:
                    raise
                self.batch_size = max(1, self.batch_size // 2)
                torch.cuda.empty_cache()
                msg = f"CUDA out of memory: retrying with batch size {self.batch_size}"
                log.warning(msg)
                print(f"[helixclock] {msg}", file=sys.stderr, flush=True)
                continue
            bar.update(stop - start)
            start = stop
            yield result
        bar.close()

    def __call__(self, n: int, fn: Callable[[int, int], object]) -> list:
        return list(self.iterate(n, fn))


class PatchingEngine:
    """Batched activation patching, collection and recording on one model."""

    def __init__(self, model: LoadedModel, batch_size: int = 512, progress: bool = True,
                 prefix_cache: bool = True):
        self.model = model
        self.adapter = model.adapter
        self.batch_size = batch_size
        self.progress = progress
        self.prefix_cache = prefix_cache
        self._runner = OOMRetry(batch_size, progress=progress)
        self._prefixes: dict = {}

    # -- low level -----------------------------------------------------------------
    def _site(self, point: Point) -> Site:
        return self.adapter.site(point.kind, point.layer)

    def _view(self, point: Point, value: Tensor) -> Tensor:
        """The value at a site as the vocabulary shapes it (head_out split per head)."""
        if point.kind == "head_out":
            return value.view(*value.shape[:-1], self.adapter.n_heads, self.adapter.d_head)
        return value

    @staticmethod
    def _positions(point: Point, offset: int) -> list[int]:
        """Positions of a point inside a forward pass that starts at token ``offset``."""
        return [p - offset if p >= 0 else p for p in point.positions]

    def _select(self, point: Point, value: Tensor, offset: int = 0) -> Tensor:
        v = self._view(point, value)[:, self._positions(point, offset)]
        return v[:, :, point.head] if point.head is not None else v

    # -- shared prompt prefix -----------------------------------------------------------
    def _prefix_length(self, ids: Sequence[Tensor], points: Sequence[Point]) -> int:
        """Tokens shared by every row of ``ids`` and before every point's positions."""
        if not self.prefix_cache:
            return 0
        seq = ids[0].shape[1]
        first = ids[0][:1]
        same = torch.ones(seq, dtype=torch.bool, device=first.device)
        for x in ids:
            same &= (x == first).all(0)
        n = int(same.long().cumprod(0).sum())
        earliest = min([p if p >= 0 else seq + p for pt in points for p in pt.positions], default=seq - 1)
        return max(0, min(n, earliest, seq - 1))

    def _prefix_kv(self, ids: Tensor, length: int):
        """Key/value cache of the first ``length`` tokens of ``ids[0]`` (memoised)."""
        if length == 0:
            return None
        key = (ids.device, tuple(ids[0, :length].tolist()))
        if key not in self._prefixes:
            with torch.no_grad():
                out = self.model.hf(ids[:1, :length], use_cache=True)
            self._prefixes[key] = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        return self._prefixes[key]

    def _cache_for(self, kv, rows: int):
        from transformers import DynamicCache

        cache = DynamicCache()
        for i, (k, v) in enumerate(kv):
            cache.update(k.expand(rows, *k.shape[1:]), v.expand(rows, *v.shape[1:]), i)
        return cache

    def _trace(self, ids: Tensor, plan: dict[Site, list[Callable[[Tensor], Tensor | None]]],
               logits_rows: Callable[[Tensor], None] | None, prefix: tuple[int, list] | None = None) -> None:
        """One forward pass of ``ids``: at each site, in forward order, call the plan's
        functions on the site's value; a function returning a tensor replaces it.  With
        ``prefix`` = (length, key/value cache), only ``ids[:, length:]`` is run."""
        model = self.model
        order = sorted(plan, key=lambda s: s.order)
        unembed = self.adapter.unembed
        kwargs = {}
        if prefix is not None and prefix[0] > 0:
            ids = ids[:, prefix[0]:]
            kwargs = {"past_key_values": self._cache_for(prefix[1], ids.shape[0]), "use_cache": True}
        with model.lm.trace(ids, **kwargs):
            for site in order:
                env = model.envoy(site.path)
                raw = env.input if site.io == "input" else env.output
                is_tuple = isinstance(raw, tuple)
                current = raw[0] if is_tuple else raw
                replaced = False
                for fn in plan[site]:
                    new = fn(current)
                    if new is not None:
                        current, replaced = new, True
                if replaced:
                    value = (current,) + tuple(raw[1:]) if is_tuple else current
                    if site.io == "input":
                        env.input = value
                    else:
                        env.output = value
            if logits_rows is not None:
                logits_rows(model.envoy(unembed).output[:, -1])

    # -- collection -------------------------------------------------------------------
    def collect(self, ids: Tensor, points: Sequence[Point], logits: bool = True,
                desc: str = "collect") -> tuple[dict[Point, Tensor], Tensor | None]:
        """Values of ``points`` (and last-token logits) for every row of ``ids``."""
        out: dict[Point, list[Tensor]] = {p: [] for p in points}
        last: list[Tensor] = []
        for chunk in self.iter_collect(ids, points, logits, desc):
            for p in points:
                out[p].append(chunk[p])
            if logits:
                last.append(chunk["logits"])
        values = {p: torch.cat(v) for p, v in out.items()}
        return values, (torch.cat(last) if logits else None)

    def iter_collect(self, ids: Tensor, points: Sequence[Point], logits: bool = True,
                     desc: str = "collect") -> Iterator[dict]:
        """Like :meth:`collect`, one dict per chunk (for streaming to disk)."""
        ids = ids.to(self.model.device)
        length = self._prefix_length([ids], points)
        prefix = (length, self._prefix_kv(ids, length))

        def step(start: int, stop: int) -> dict:
            got: dict = {}
            plan: dict[Site, list] = {}
            for p in points:
                plan.setdefault(self._site(p), []).append(
                    lambda x, p=p: got.__setitem__(p, self._select(p, x, length).detach().clone()))
            grab = (lambda x: got.__setitem__("logits", x.detach().float().clone())) if logits else None
            with torch.no_grad():
                self._trace(ids[start:stop], plan, grab, prefix)
            return got

        yield from self._runner_for(desc).iterate(ids.shape[0], step)

    def _runner_for(self, desc: str) -> OOMRetry:
        """The chunk runner; a halved batch size sticks for later calls."""
        self._runner.desc = desc
        return self._runner

    # -- clean / corrupted caches --------------------------------------------------------
    def clean_values(self, pairs: Pairs, points: Sequence[Point]) -> dict[Point, Tensor]:
        """Clean activations at ``points`` (cached on ``pairs``; one forward for all new ones)."""
        missing = [p for p in points if p not in pairs._clean_cache]
        if missing or "logits" not in pairs._clean_cache:
            values, last = self.collect(pairs.clean, missing, desc="clean run")
            pairs._clean_cache.update(values)
            pairs._clean_cache["logits"] = last
        return {p: pairs._clean_cache[p] for p in points}

    def clean_logits(self, pairs: Pairs) -> Tensor:
        self.clean_values(pairs, [])
        return pairs._clean_cache["logits"]

    def corrupted_values(self, pairs: Pairs, points: Sequence[Point]) -> dict[Point, Tensor]:
        missing = [p for p in points if p not in pairs._corrupted_cache]
        if missing or "logits" not in pairs._corrupted_cache:
            values, last = self.collect(pairs.corrupted, missing, desc="corrupted run")
            pairs._corrupted_cache.update(values)
            pairs._corrupted_cache["logits"] = last
        return {p: pairs._corrupted_cache[p] for p in points}

    def corrupted_logits(self, pairs: Pairs) -> Tensor:
        self.corrupted_values(pairs, [])
        return pairs._corrupted_cache["logits"]

    def clean_ld(self, pairs: Pairs) -> Tensor:
        """LD of the clean run itself: the most any patch can restore, per pair."""
        idx = pairs.clean_answer[:, None]
        return (self.clean_logits(pairs).gather(1, idx) - self.corrupted_logits(pairs).gather(1, idx))[:, 0]

    # -- patching -------------------------------------------------------------------------
    def run(self, pairs: Pairs, variants: Sequence[Sequence[Patch]], metric: str = "ld",
            record: Sequence[Point] = (), keep_logits: bool = False,
            desc: str = "patching") -> RunResult:
        """Run every variant on every pair; return the metric as [n_variants, n_pairs].

        ``metric`` is "ld" (logit difference of the clean answer against the corrupted
        run) or "logit" (the clean answer's patched logit).  ``record`` points are read
        in the patched runs, after the patches upstream of them took effect.
        """
        n, V = len(pairs), len(variants)
        device = self.model.device
        needs_clean = sorted({p.point for v in variants for p in v if isinstance(p, Patch)
                              and not isinstance(p.value, Tensor)},
                             key=lambda p: (self._site(p).order, p.positions, p.head or -1))
        clean = self.clean_values(pairs, needs_clean)
        corrupted_answer_logit = self.corrupted_logits(pairs).gather(1, pairs.clean_answer[:, None])[:, 0]
        values = {}
        for v in variants:
            for p in v:
                if isinstance(p, Patch) and isinstance(p.value, Tensor):
                    values[id(p)] = p.value.to(device)
        per_variant: list[dict[Point, list[Tensor]]] = [{r.point: [] for r in v if isinstance(r, Record)}
                                                        for v in variants]
        answer = torch.empty(V * n, device=device)
        recorded: dict[Point, list[Tensor]] = {p: [] for p in record}
        last_logits: list[Tensor] = []
        ids_all = pairs.corrupted
        touched = [p.point for v in variants for p in v] + list(record)
        length = self._prefix_length([pairs.clean, pairs.corrupted], touched)
        prefix = (length, self._prefix_kv(ids_all, length))

        def step(start: int, stop: int) -> None:
            plan: dict[Site, list] = {}
            for vi, variant in enumerate(variants):
                lo, hi = max(start, vi * n), min(stop, (vi + 1) * n)
                if lo >= hi:
                    continue
                rows = slice(lo - start, hi - start)
                pair_idx = slice(lo - vi * n, hi - vi * n)
                for patch in variant:
                    if isinstance(patch, Record):
                        plan.setdefault(self._site(patch.point), []).append(
                            lambda x, p=patch.point, r=rows, vi=vi: per_variant[vi][p].append(
                                self._select(p, x[r], length).detach().clone()))
                        continue
                    plan.setdefault(self._site(patch.point), []).append(
                        self._patch_fn(patch, rows, pair_idx, clean, values, n, length))
            got: dict = {}
            for p in record:
                plan.setdefault(self._site(p), []).append(
                    lambda x, p=p: got.__setitem__(p, self._select(p, x, length).detach().clone()))
            row_pairs = torch.arange(start, stop, device=device) % n
            ids = ids_all[row_pairs]
            ans = pairs.clean_answer[row_pairs]

            def grab(x: Tensor) -> None:
                x = x.detach().float()
                answer[start:stop] = x.gather(1, ans[:, None])[:, 0]
                if keep_logits:
                    last_logits.append(x.clone())

            with torch.no_grad():
                self._trace(ids, plan, grab, prefix)
            for p in record:
                recorded[p].append(got[p])

        self._runner_for(desc)(V * n, step)
        answer = answer.view(V, n)
        if metric == "ld":
            out = answer - corrupted_answer_logit[None]
        elif metric == "logit":
            out = answer
        else:
            raise ValueError(f"unknown metric {metric!r}; allowed: ld, logit")
        recs = {p: torch.cat(v).view(V, n, *v[0].shape[1:]) for p, v in recorded.items()}
        logits = torch.cat(last_logits).view(V, n, -1) if keep_logits else None
        by_variant = [{p: torch.cat(chunks) for p, chunks in d.items()} for d in per_variant]
        return RunResult(out, answer, recs, logits, by_variant)

    # -- path patching ---------------------------------------------------------------------
    def contribution(self, point: Point, value: Tensor) -> Tensor:
        """What a component's value writes into the residual stream, [n, n_pos, d_model]:
        attn_out and mlp_out as they are, a head through its slice of the output projection."""
        if point.kind in ("attn_out", "mlp_out"):
            return value
        if point.kind == "head_out" and point.head is not None:
            W = self.adapter.head_weights(self.model.hf, point.layer)[point.head]  # [dh, d]
            return value @ W.to(value.dtype)
        raise ValueError(f"no residual-stream contribution for {point}; allowed: attn_out, mlp_out, "
                         "head_out with a head")

    def delta(self, pairs: Pairs, point: Point) -> Tensor:
        """Clean minus corrupted contribution of a component, [n, n_pos, d_model]."""
        clean = self.clean_values(pairs, [point])[point]
        corr = self.corrupted_values(pairs, [point])[point]
        return self.contribution(point, clean) - self.contribution(point, corr)

    def final_logits(self, residual: Tensor) -> Tensor:
        """Logits of final-residual vectors [..., d] (final norm, then the unembedding)."""
        hf = self.model.hf
        norm = hf.get_submodule(self.adapter.final_norm)
        unembed = hf.get_submodule(self.adapter.unembed)
        with torch.no_grad():
            return unembed(norm(residual.to(next(unembed.parameters()).dtype))).float()

    def direct_effects(self, pairs: Pairs, points: Sequence[Point], chunk: int = 64) -> Tensor:
        """DE of components at the last token, [len(points), n_pairs]: each one's clean-minus-
        corrupted write reaches the final residual directly; everything else stays
        corrupted, so the logits are the final norm and unembedding of that residual."""
        last = pairs.corrupted.shape[1] - 1
        final = Point("resid_pre", self.adapter.n_layers, (last,))
        base = self.corrupted_values(pairs, [final])[final][:, 0]  # [n, d]
        ans = pairs.clean_answer[:, None]
        corrupted_answer = self.corrupted_logits(pairs).gather(1, ans)[:, 0]
        out = []
        for i in range(0, len(points), chunk):
            deltas = torch.stack([self.delta(pairs, p)[:, -1] for p in points[i:i + chunk]])  # [c, n, d]
            logits = self.final_logits(base[None] + deltas)  # [c, n, V]
            out.append(logits.gather(2, ans[None].expand(len(deltas), -1, -1))[..., 0] - corrupted_answer[None])
        return torch.cat(out) if out else torch.empty(0, len(pairs), device=base.device)

    def receiver_input(self, receiver: Point) -> Point:
        """Where a receiver reads the residual stream at the last token: its block's input, or
        for the MLP of a sequential block, the residual between attention and MLP."""
        if receiver.kind == "mlp_out" and not self.adapter.parallel:
            return Point("resid_mid", receiver.layer, receiver.positions)
        if receiver.kind in ("mlp_out", "attn_out", "head_out"):
            return Point("resid_pre", receiver.layer, receiver.positions)
        raise ValueError(f"receiver {receiver} must be attn_out, mlp_out or head_out (or 'logits')")

    def path_patch(self, pairs: Pairs, paths: Sequence[tuple[Point, Point | str]],
                   desc: str = "path patching") -> Tensor:
        """Effect of each sender -> receiver path, [len(paths), n_pairs].

        The sender's clean-minus-corrupted write reaches only the receiver's input; every
        other component stays corrupted.  First pass: add it to the receiver's input and
        record the receiver's output; second pass: patch that output into the corrupted run
        (so its effect travels on to the logits).  With the receiver "logits" this is the
        sender's direct effect.
        """
        to_logits = [i for i, (_, r) in enumerate(paths) if r == "logits"]
        to_comp = [i for i, (_, r) in enumerate(paths) if r != "logits"]
        out = torch.empty(len(paths), len(pairs), device=pairs.clean.device)
        if to_logits:
            out[to_logits] = self.direct_effects(pairs, [paths[i][0] for i in to_logits])
        if to_comp:
            first = []
            for i in to_comp:
                sender, receiver = paths[i]
                if receiver.layer < sender.layer or (receiver.layer == sender.layer and (
                        self.adapter.parallel or sender.kind == "mlp_out" or receiver.kind != "mlp_out")):
                    raise ValueError(f"{receiver} does not read {sender}: it is not downstream")
                first.append([Patch(self.receiver_input(receiver), self.delta(pairs, sender), add=True),
                              Record(receiver)])
            res = self.run(pairs, first, desc=f"{desc} (1/2)")
            second = [[Patch(paths[i][1], res.variant_records[j][paths[i][1]])] for j, i in enumerate(to_comp)]
            out[to_comp] = self.run(pairs, second, desc=f"{desc} (2/2)").metric
        return out

    def _patch_fn(self, patch: Patch, rows: slice, pair_idx: slice, clean: dict, values: dict,
                  n_pairs: int, offset: int = 0):
        point = patch.point
        pos = self._positions(point, offset)
        head = point.head

        def fn(x: Tensor) -> Tensor:
            y = x.clone()
            sub = self._view(point, y)[rows]  # a view into y
            target = sub[:, pos] if head is None else sub[:, pos, head]
            if isinstance(patch.value, Tensor):
                val = values[id(patch)]
                if val.dim() == target.dim() and val.shape[0] == n_pairs:
                    val = val[pair_idx]  # one value per pair; otherwise broadcast
            elif patch.value == "clean":
                val = clean[point][pair_idx]
            elif callable(patch.value):
                val = patch.value(clean[point][pair_idx], target)
            else:
                raise ValueError(f"unknown replacement {patch.value!r}; allowed: 'clean', "
                                 "a tensor or a function of (clean, corrupted)")
            new = (target + val) if patch.add else val.expand_as(target)
            if head is None:
                sub[:, pos] = new.to(y.dtype)
            else:
                sub[:, pos, head] = new.to(y.dtype)
            return y

        return fn


def bootstrap_ci(values: Tensor, n_boot: int = 1000, seed: int = 0, level: float = 0.95
                 ) -> tuple[Tensor, Tensor, Tensor]:
    """Mean over the last axis with a percentile bootstrap interval: (mean, low, high)."""
    values = values.float()
    n = values.shape[-1]
    g = torch.Generator(device="cpu").manual_seed(seed)
    idx = torch.randint(0, n, (n_boot, n), generator=g).to(values.device)
    boots = values[..., idx].mean(-1)  # [..., n_boot]
    alpha = (1 - level) / 2
    lo = torch.quantile(boots, alpha, dim=-1)
    hi = torch.quantile(boots, 1 - alpha, dim=-1)
    return values.mean(-1), lo, hi


def draw_pairs(correct, n_pairs: int, seed: int, tokenizer, template: str, vary: Sequence[str] = ("a",),
               clean_a: Sequence[int] | None = None, device=None) -> Pairs:
    """Clean/corrupted pairs drawn (seeded) from a task's correctly answered prompts.

    ``correct`` is a task's accuracy table restricted to correct rows (columns a, b,
    answer, answer_token).  The corrupted prompt changes the operands in ``vary`` and keeps
    the others (a'+b for vary=("a",), a+b' for ("b",)); its answer differs from the clean
    one.  ``clean_a`` restricts the clean prompts' a (e.g. to a held-out test split).
    """
    import numpy as np

    from .tasks import render

    rows = correct.reset_index(drop=True)
    keep = [c for c in ("a", "b") if c not in vary and (rows[c] >= 0).any()]
    rng = np.random.default_rng(seed)
    clean_pool = rows if clean_a is None else rows[rows["a"].isin(list(clean_a))]
    if len(clean_pool) == 0:
        raise ValueError("no correct prompts to draw clean prompts from")
    groups = rows.groupby(keep).indices if keep else {(): np.arange(len(rows))}
    order = rng.permutation(len(clean_pool))
    clean_idx, corrupt_idx = [], []
    for i in order:
        row = clean_pool.iloc[i]
        key = tuple(int(row[c]) for c in keep)
        cands = groups[key[0] if len(key) == 1 else key] if keep else groups[()]
        cands = cands[rows["answer"].to_numpy()[cands] != row["answer"]]
        if len(cands) == 0:
            continue
        clean_idx.append(int(clean_pool.index[i]))
        corrupt_idx.append(int(rng.choice(cands)))
        if len(clean_idx) == n_pairs:
            break
    if not clean_idx:
        raise ValueError(f"no clean/corrupted pairs with different answers (varying {', '.join(vary)})")
    c, x = rows.iloc[clean_idx], rows.iloc[corrupt_idx]

    def ids(frame):
        text = [render(template, int(a), int(b)) for a, b in zip(frame["a"], frame["b"])]
        return torch.tensor(tokenizer(text, add_special_tokens=True)["input_ids"], device=device)

    meta = {"clean_a": c["a"].to_numpy(), "clean_b": c["b"].to_numpy(), "clean_answer": c["answer"].to_numpy(),
            "corrupted_a": x["a"].to_numpy(), "corrupted_b": x["b"].to_numpy(),
            "corrupted_answer": x["answer"].to_numpy(), "vary": tuple(vary), "seed": seed}
    return Pairs(ids(c), ids(x), torch.tensor(c["answer_token"].to_numpy(), device=device),
                 torch.tensor(x["answer_token"].to_numpy(), device=device), meta)

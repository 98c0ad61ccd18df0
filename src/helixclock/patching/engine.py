"""The batched activation-patching engine.

Activation patching asks which internal value carries the information a model uses.
Run the model on a *clean* prompt (``a+b``) and on a *corrupted* one (``a'+b``); then
rerun the corrupted prompt with one internal value replaced by its clean counterpart
(or by a model of it, such as a helix fit) and measure how far the output moves back
towards the clean answer.  The default metric is the logit difference

    LD = logit_patched(clean answer) - logit_corrupted(clean answer),

(for an answer of several tokens, the sum of its tokens' logits under teacher forcing:
:mod:`helixclock.patching.metrics`), so LD = 0 means the patched value carries nothing the model uses, and patching
everything the model needs restores the clean logit.

This engine is the one place every causal experiment goes through.  A variant (a list of
:class:`~helixclock.patching.points.Patch` and ``Record`` objects) is applied to every pair;
:meth:`PatchingEngine.run` stacks all variants along the batch dimension (row
``v * n_pairs + i`` is pair ``i`` under variant ``v``), so a whole layer sweep of many fits is
a handful of forward passes.  The unpatched clean and corrupted runs are cached on the pairs
(:class:`~helixclock.patching.runs.RunCache`), the shared prompt prefix is run once
(:class:`~helixclock.patching.prefix.PrefixCache`), a batch of patched rows starts at the
first block its patches and records touch (the blocks before it compute what the corrupted run
computed: block l reads the corrupted run's resid_pre[l], :meth:`PatchingEngine.residuals`,
kept on the pairs), and everything stays on the model's device until the final result.
Rows whose numbers have different token layouts (numbers of
several tokens, :mod:`helixclock.prompts.layout`) are never mixed in one forward pass: each
batch has one layout, so no padding token is run; rows are stacked layout by layout (each
layout's pairs under every variant), so a sweep of V variants on n pairs in G layouts takes at
most ceil(V * n / batch) + G - 1 patched passes, one clean, one corrupted and one pass
collecting the corrupted run's residuals per batch of pairs and layout aside.  Direct effects
and path patching (:mod:`helixclock.patching.paths`)
and attribution patching (:mod:`helixclock.patching.attribution`) are functions over an
engine: they use its runs, and the engine knows nothing of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..lm.adapters import Site
from ..lm.models import LoadedModel
from ..prompts.layout import Group, Layout, boundaries, group_at, single_group
from .batching import OOMRetry
from .metrics import OF_ANSWER_SCORE, Metric, answer_logits, answer_positions, logit_difference, padded_positions
from .points import Patch, Point, Record
from .prefix import PrefixCache
from .runs import Pairs, RunCache

_NO_ROLES = Layout(0)  # resolves integer positions only (rows given without a layout)

# per site, the functions called on its value in forward order; one returning a tensor replaces it
Plan = dict[Site, list[Callable[[Tensor], Tensor | None]]]


@dataclass
class RunResult:
    """Per-row outputs of a patched run, shaped [n_variants, n_pairs, ...]."""

    metric: Float[Tensor, "variant pair"]
    answer_logit: Float[Tensor, "variant pair"]  # the clean answer's score
    records: dict[Point, Float[Tensor, "variant pair pos *feature"]]
    variant_records: list[dict[Point, Float[Tensor, "pair pos *feature"]]]
    positions: Float[Tensor, "variant pair k"]  # each position's score of its token (NaN past a pair's)
    positions_raw: Float[Tensor, "variant pair k"]  # each position's logit of its token


class PatchingEngine:
    """Batched activation patching, collection and recording on one model."""

    def __init__(
        self,
        model: LoadedModel,
        batch_size: int = 512,
        progress: bool = True,
        prefix_cache: bool = True,
        skip_blocks: bool = True,
        skip_positions: bool = True,
    ):
        self.model = model
        self.adapter = model.adapter
        self.batches = OOMRetry(batch_size, progress=progress)
        self.prefix = PrefixCache(model.hf, enabled=prefix_cache, window=model.adapter.sliding_window)
        self.skip_blocks = skip_blocks  # patched runs start at the first block they touch (_Sweep)
        # ... and, with numbers of several tokens, at the first position they touch (_Sweep; one-token
        # models' runs stay bit for bit, as with logits_to_keep)
        self.skip_positions = skip_positions and model.tokens.several
        self._block_returns_tensor: bool | None = None  # learnt in the first residual collection

    # -- sites and values ------------------------------------------------------------------
    def site(self, point: Point) -> Site:
        return self.adapter.site(point.kind, point.layer)

    def view(self, point: Point, value: Tensor) -> Tensor:
        """The value at a site as the vocabulary shapes it (head_out split per head)."""
        if point.kind == "head_out":
            return value.view(*value.shape[:-1], self.adapter.n_heads, self.adapter.d_head)
        return value

    @staticmethod
    def positions(point: Point, offset: int, layout: Layout | None = None) -> list[int]:
        """Positions of a point inside a forward pass that starts at token ``offset`` (roles
        such as "a" or "last" resolved by the rows' ``layout``)."""
        pos = (layout or _NO_ROLES).positions(point.positions)
        return [p - offset if p >= 0 else p for p in pos]

    def select(
        self, point: Point, value: Float[Tensor, "row seq *feature"], offset: int = 0, layout: Layout | None = None
    ) -> Float[Tensor, "row pos *feature"]:
        """[rows, n_positions, *features] of the point (one head or neuron if indexed)."""
        return self.narrow(point, self.view(point, value)[:, self.positions(point, offset, layout)])

    @staticmethod
    def narrow(point: Point, site_value: Tensor) -> Tensor:
        """An indexed point's value from its site's value [rows, n_positions, ...]."""
        return site_value[:, :, point.index] if point.index is not None else site_value

    # -- one forward pass ------------------------------------------------------------------
    def trace(
        self,
        ids: Int[Tensor, "row seq"],
        plan: Plan,
        on_logits: Callable[[Tensor], None] | None,
        prefix: tuple[int, list | None] = (0, None),
        answer: int = 1,
        skip: tuple[int, Tensor] | None = None,
    ) -> None:
        """One forward pass of ``ids``: at each site, in forward order, call the plan's
        functions on the site's value; a function returning a tensor replaces it.  With
        ``prefix`` = (length, key/value cache), only ``ids[:, length:]`` is run.
        ``on_logits`` receives the logits of the last ``answer`` positions, [rows, answer, V]
        (the last token's, for a one-token answer); without it the forward stops after the
        plan's last site (nothing later is read: no later block, no unembedding is run).  With
        ``skip`` = (n, resid_pre[n]) blocks 0..n-1 are not run: block n reads the given residual
        [rows, positions run, d_model] (every plan site must be at block n or later)."""
        model = self.model
        kwargs = {}
        if model.tokens.several:  # the unembedding only where logits are read
            kwargs["logits_to_keep"] = answer  # (not for one-token models: their runs stay bit for bit)
        if prefix[0] > 0:
            ids = ids[:, prefix[0] :]
            # past_key_values=, not cache=: nnsight's trace does not hand ``cache`` to the model
            kwargs |= {"past_key_values": self.prefix.expand(prefix[1], ids.shape[0]), "use_cache": True}
        with model.lm.trace(ids, **kwargs) as tracer:
            if skip is not None:  # each skipped block "returns" the residual; only the last one's is read
                for layer in range(skip[0]):
                    model.envoy(self.adapter.block_path(layer)).skip(skip[1])
            for site in sorted(plan, key=lambda s: s.order):
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
            if on_logits is None:
                tracer.stop()
            else:
                on_logits(self.adapter.cap_logits(model.envoy(self.adapter.unembed).output[:, -answer:]))

    # -- collection --------------------------------------------------------------------------
    @staticmethod
    def groups(ids: Int[Tensor, "row seq"], groups: Sequence[Group] | None) -> list[Group]:
        """The rows' groups: as given, or every row of ``ids`` in one."""
        return list(groups) if groups is not None else single_group(*ids.shape)

    def collect(
        self,
        ids: Int[Tensor, "row seq"],
        points: Sequence[Point],
        logits: bool = True,
        desc: str = "collect",
        groups: Sequence[Group] | None = None,
    ) -> tuple[dict[Point, Float[Tensor, "row pos *feature"]], Float[Tensor, "row vocab"] | None]:
        """Values of ``points`` [n, n_positions, ...] and last-token logits [n, vocab] (float32)
        for every row of ``ids`` (rows of several token layouts: ``groups``)."""
        values, last, _ = self.collect_run(ids, points, groups, None, desc, logits)
        return values, last

    def collect_run(
        self,
        ids: Int[Tensor, "row seq"],
        points: Sequence[Point],
        groups: Sequence[Group] | None = None,
        answers: Int[Tensor, "row k"] | None = None,
        desc: str = "collect",
        logits: bool = True,
        scoring: str = "logit",
    ) -> tuple[
        dict[Point, Float[Tensor, "row pos *feature"]],
        Float[Tensor, "row vocab"] | None,
        tuple[Float[Tensor, "row k"], Float[Tensor, "row k"]] | None,
    ]:
        """:meth:`collect`, and with ``answers`` [n, K] each row's teacher-forced answer tokens'
        scores and raw logits at the last ``layout.answer`` positions, [n, K] each (NaN past a
        row's positions; ``scoring`` as :func:`~.metrics.answer_positions`)."""
        out: dict[Point, list[Tensor]] = {p: [] for p in points}
        last: list[Tensor] = []
        scored: list[Tensor] = []
        raw: list[Tensor] = []
        for chunk in self.iter_collect(ids, points, logits, desc, groups, answers, scoring):
            for p in points:
                out[p].append(chunk[p])
            if logits:
                last.append(chunk["logits"])
            if answers is not None:
                scored.append(chunk["positions"])
                raw.append(chunk["positions_raw"])
        values = {p: torch.cat(v) for p, v in out.items()}
        positions = (torch.cat(scored), torch.cat(raw)) if answers is not None else None
        return values, (torch.cat(last) if logits else None), positions

    def iter_collect(
        self,
        ids: Int[Tensor, "row seq"],
        points: Sequence[Point],
        logits: bool = True,
        desc: str = "collect",
        groups: Sequence[Group] | None = None,
        answers: Int[Tensor, "row k"] | None = None,
        scoring: str = "logit",
    ) -> Iterator[dict]:
        """Like :meth:`collect`, one dict per chunk (for streaming to disk); a chunk never
        mixes token layouts."""
        ids = ids.to(self.model.device)
        groups = self.groups(ids, groups)
        prefix = self.prefix.get(ids, self.prefix.length([ids], points, groups))

        def step(start: int, stop: int) -> dict:
            layout = group_at(groups, start).layout
            got: dict = {}
            plan: Plan = {}
            for p in points:
                plan.setdefault(self.site(p), []).append(
                    lambda x, p=p: got.__setitem__(p, self.select(p, x, prefix[0], layout).detach().clone())
                )

            def grab(x: Tensor) -> None:
                x = x.detach().float()
                if logits:
                    got["logits"] = x[:, 0].clone()
                if answers is not None:
                    rows = answers[start:stop].to(x.device)
                    got["positions"] = padded_positions(answer_positions(x, rows, scoring), answers.shape[1])
                    got["positions_raw"] = padded_positions(answer_logits(x, rows), answers.shape[1])

            reads = logits or answers is not None
            with torch.no_grad():
                self.trace(ids[start:stop, : layout.length], plan, grab if reads else None, prefix, layout.answer)
            return got

        yield from self.batches.iterate(ids.shape[0], step, desc, boundaries(groups))

    # -- the unpatched runs of a pair set ----------------------------------------------------
    def unpatched(self, run: RunCache, points: Sequence[Point]) -> dict[Point, Tensor]:
        """Values of ``points`` in an unpatched run of a pair set (its clean or its corrupted
        side), computing in one pass what the run's cache lacks: the run's logits and answer
        scores, and every missing point."""
        missing = run.missing(points)
        if missing or not run.collected:
            values, logits, positions = self.collect_run(
                run.ids, missing, run.groups, run.answers, run.desc, scoring=run.scoring
            )
            run.store(values, logits, positions)
        return {p: run.values[p] for p in points}

    def clean_values(self, pairs: Pairs, points: Sequence[Point]) -> dict[Point, Tensor]:
        return self.unpatched(pairs.clean_run, points)

    def corrupted_values(self, pairs: Pairs, points: Sequence[Point]) -> dict[Point, Tensor]:
        return self.unpatched(pairs.corrupted_run, points)

    def clean_logits(self, pairs: Pairs) -> Float[Tensor, "pair vocab"]:
        self.unpatched(pairs.clean_run, [])
        return pairs.clean_run.logits

    def corrupted_logits(self, pairs: Pairs) -> Float[Tensor, "pair vocab"]:
        self.unpatched(pairs.corrupted_run, [])
        return pairs.corrupted_run.logits

    def clean_ld(self, pairs: Pairs) -> Float[Tensor, " pair"]:
        """The clean LD, per pair: LD of the clean run itself, what patching every value of the
        clean run restores (a reference, not a bound: a single patch may restore more)."""
        self.unpatched(pairs.clean_run, [])
        self.unpatched(pairs.corrupted_run, [])
        return pairs.clean_run.answer_score() - pairs.corrupted_run.answer_score()

    def residuals(
        self, run: RunCache, prefix: tuple[int, list | None], layers: Sequence[int]
    ) -> dict[int, Float[Tensor, "row pos d_model"]] | None:
        """resid_pre[l] of an unpatched run (the clean or the corrupted side of a pair set) at
        every position a forward with ``prefix`` runs, [n, seq - prefix length, d_model] (zero
        past a row's layout), for each l of ``layers`` (l >= 1): what blocks 0..l-1 compute in a
        patched run of the run's prompts that touches nothing before block l.  Computed in one
        pass for the layers the run lacks and kept on the run; None where the model's blocks do
        not return the residual as a plain tensor (GPT-Neo's return a tuple: none is skipped)."""
        if self._block_returns_tensor is False:  # learnt once: nothing to collect
            return None
        offset = prefix[0]
        missing = sorted({layer for layer in layers if (offset, layer) not in run.residuals})
        if missing:
            self._collect_residuals(run, prefix, missing)
        if not self._block_returns_tensor:
            return None
        return {layer: run.residuals[offset, layer] for layer in layers}

    def _collect_residuals(self, run: RunCache, prefix: tuple[int, list | None], layers: Sequence[int]) -> None:
        """One forward pass over the run's rows, stopped after the last of ``layers``, that keeps
        each one's resid_pre at every position run; it also learns whether a block returns a tensor."""
        offset, ids = prefix[0], run.ids.to(self.model.device)
        sites = {self.adapter.site("resid_pre", layer): layer for layer in layers}
        pieces: dict[int, list[tuple[int, int, Tensor]]] = {layer: [] for layer in layers}
        returns: list[bool] = []
        block = self.model.hf.get_submodule(self.adapter.block_path(0))
        hook = block.register_forward_hook(lambda module, args, output: returns.append(isinstance(output, Tensor)))

        def step(start: int, stop: int) -> None:
            layout = group_at(run.groups, start).layout
            keep = lambda x, layer: pieces[layer].append((start, stop, x.detach().clone()))  # noqa: E731
            plan: Plan = {site: [lambda x, layer=layer: keep(x, layer)] for site, layer in sites.items()}
            with torch.no_grad():
                self.trace(ids[start:stop, : layout.length], plan, None, prefix, layout.answer)

        try:
            self.batches(ids.shape[0], step, f"{run.desc}: residuals", boundaries(run.groups))
        finally:
            hook.remove()
        self._block_returns_tensor = all(returns)
        for layer, parts in pieces.items():
            first = parts[0][2]
            out = first.new_zeros(ids.shape[0], ids.shape[1] - offset, first.shape[-1])
            for start, stop, x in parts:
                out[start:stop, : x.shape[1]] = x
            run.residuals[offset, layer] = out

    def keys_values(self, run: RunCache, prefix: tuple[int, list | None]) -> list[tuple[Tensor, Tensor]]:
        """Per layer, the keys and values of an unpatched run (the clean or the corrupted side of a
        pair set) at every position a forward with ``prefix`` runs, [n, kv heads, seq - prefix
        length, d_head] each (zero past a row's layout): what a patched run of the run's prompts
        that touches nothing before position p attends to at the positions before p.  Computed in
        one pass of the model's own forward (no hooks) and kept on the run."""
        offset = prefix[0]
        if offset in run.kv:
            return run.kv[offset]
        # deferred: transformers stays out of the jobs that load no model (neuron_fits)
        from transformers import DynamicCache

        ids = run.ids.to(self.model.device)
        pieces: list[tuple[int, int, list]] = []

        def step(start: int, stop: int) -> None:
            layout = group_at(run.groups, start).layout
            cache = self.prefix.expand(prefix[1], stop - start) if offset else DynamicCache()
            with torch.no_grad():
                out = self.model.hf(
                    ids[start:stop, offset : layout.length], **self.prefix.cache_kwargs(cache), logits_to_keep=1
                )
            kv = [(layer.keys[:, :, offset:], layer.values[:, :, offset:]) for layer in out.past_key_values.layers]
            pieces.append((start, stop, kv))

        self.batches(ids.shape[0], step, f"{run.desc}: keys and values", boundaries(run.groups))
        shape = lambda x: (ids.shape[0], x.shape[1], ids.shape[1] - offset, x.shape[3])  # noqa: E731
        out = [(k.new_zeros(shape(k)), v.new_zeros(shape(v))) for k, v in pieces[0][2]]
        for start, stop, kv in pieces:
            for (keys, values), (k, v) in zip(out, kv):
                keys[start:stop, :, : k.shape[2]] = k
                values[start:stop, :, : v.shape[2]] = v
        run.kv[offset] = out
        return out

    # -- patching ------------------------------------------------------------------------------
    def run(
        self,
        pairs: Pairs,
        variants: Sequence[Sequence[Patch | Record]],
        metric: Metric | None = logit_difference,
        record: Sequence[Point] = (),
        desc: str = "patching",
    ) -> RunResult:
        """Run every variant on every pair; return ``metric`` as [n_variants, n_pairs].

        ``metric`` is a function of the patched run's logits at the answer positions (see
        :mod:`helixclock.patching.metrics`; LD by default).  ``record`` points are read in every
        patched run, a variant's ``Record`` elements in that variant's rows, after the patches
        upstream of them took effect.  With ``metric`` None the runs only record (metric, scores
        NaN) and stop after the last recorded or patched site.
        """
        sweep = _Sweep(self, pairs, variants, metric, record)
        edges = boundaries(pairs.groups, len(variants))
        self.batches(len(variants) * len(pairs), sweep.step, desc, edges)
        return sweep.result()


def _check_repeats(new: Tensor, repeats: list[tuple[int, int]], point: Point) -> None:
    """A tensor value (or a masked patch) on a padded span: each repeated position must get its
    first's value."""
    slots, firsts = [i for i, _ in repeats], [j for _, j in repeats]
    if not torch.equal(new[:, slots], new[:, firsts]):
        raise ValueError(
            f"patch at {point}: a tensor value on the padded span {point.positions} gives a repeated "
            "position another value than its first; fill the padding with the first position's value, "
            "or patch with 'clean' or a function of (clean, corrupted)"
        )


class _Sweep:
    """The state of one :meth:`PatchingEngine.run`: which rows get which patches, and what
    they produce."""

    def __init__(self, engine: PatchingEngine, pairs: Pairs, variants, metric: Metric, record: Sequence[Point]):
        self.engine, self.pairs, self.variants, self.metric, self.record = engine, pairs, variants, metric, record
        # LD and the like from the answer score the sweep makes anyway (metrics.OF_ANSWER_SCORE)
        self.of_score = next((f for m, f in OF_ANSWER_SCORE.items() if m is metric), None)
        self.n, device = len(pairs), engine.model.device
        # stacked rows are grouped by token layout, then variant, then pair: group g's rows
        # [V * g.start, V * g.stop) hold its pairs under every variant in turn, so a batch may
        # span many variants of one layout (with one layout, row v * n + i is pair i, variant v)
        self.V = len(variants)
        patches = [p for v in variants for p in v if isinstance(p, Patch)]
        needs_clean = list(dict.fromkeys(p.point for p in patches if not isinstance(p.value, Tensor)))
        self.clean = engine.clean_values(pairs, needs_clean)
        engine.corrupted_logits(pairs)
        self.tensors = {id(p): p.value.to(device) for p in patches if isinstance(p.value, Tensor)}
        self.masks = {id(p): p.where.to(device) for p in patches if p.where is not None}
        touched = [p.point for v in variants for p in v] + list(record)
        length = engine.prefix.length([pairs.clean, pairs.corrupted], touched, pairs.groups)
        self.prefix = engine.prefix.get(pairs.corrupted, length)
        # Blocks before the first one a batch's patches and records touch compute what the
        # corrupted run computes: a batch starts there, from the corrupted run's residual (exact up
        # to float rounding, as the prefix cache; the blocks' share of a sweep's cost is halved
        # on average over a layer sweep)
        self.L = engine.adapter.n_layers
        firsts = {min(self._first_block([i.point for i in v]), self._first_block(record)) for v in variants}
        starts = [b for b in firsts if b > 0]
        self.residuals = engine.residuals(pairs.corrupted_run, self.prefix, starts) if engine.skip_blocks else None
        # Likewise the positions before the first one a batch touches: a batch runs from there,
        # attending to the corrupted run's keys and values before it (numbers of several tokens,
        # where a patch at the answer's positions leaves most of the prompt as the corrupted run
        # computed it)
        self.kv = engine.keys_values(pairs.corrupted_run, self.prefix) if engine.skip_positions else None
        size = len(variants) * self.n
        self.metric_out = torch.full((size,), float("nan"), device=device)
        self.answer = torch.full((size,), float("nan"), device=device)
        K = pairs.answers.shape[1]
        self.positions = torch.full((size, K), float("nan"), device=device)
        self.positions_raw = torch.full((size, K), float("nan"), device=device)
        self.recorded: dict[Point, list[Tensor]] = {p: [] for p in record}
        self.per_variant: list[dict[Point, list[Tensor]]] = [
            {r.point: [] for r in v if isinstance(r, Record)} for v in variants
        ]

    def _first_block(self, points: Sequence[Point]) -> int:
        """The first block a run touching ``points`` must run (n_layers: none)."""
        return min((self.engine.site(p).order[0] for p in points), default=self.L)

    def step(self, start: int, stop: int) -> None:
        """Rows [start, stop) of the stacked variants (one variant block or several, one token
        layout)."""
        engine = self.engine
        group = next(g for g in self.pairs.groups if self.V * g.start <= start < self.V * g.stop)
        layout, base, n_g = group.layout, self.V * group.start, group.stop - group.start
        spans = []  # (variant, rows in the batch, its pairs)
        for vi in range(self.V):
            first = base + vi * n_g  # the row of (pair group.start, variant vi)
            lo, hi = max(start, first), min(stop, first + n_g)
            if lo < hi:
                spans.append(
                    (vi, slice(lo - start, hi - start), slice(group.start + lo - first, group.start + hi - first))
                )
        pair_rows = group.start + (torch.arange(start, stop, device=self.metric_out.device) - base) % n_g
        touched = [item.point for vi, _, _ in spans for item in self.variants[vi]] + list(self.record)
        prefix = self._start(touched, layout, pair_rows)
        offset = prefix[0]
        plan: Plan = {}
        for vi, rows, pair_idx in spans:
            for item in self.variants[vi]:
                plan.setdefault(engine.site(item.point), []).append(
                    self._record_fn(item.point, rows, self.per_variant[vi][item.point], layout, offset)
                    if isinstance(item, Record)
                    else self._patch_fn(item, rows, pair_idx, layout, offset)
                )
        got: dict = {}
        for p in self.record:
            plan.setdefault(engine.site(p), []).append(
                lambda x, p=p: got.__setitem__(p, engine.select(p, x, offset, layout).detach().clone())
            )

        def on_logits(x: Tensor) -> None:
            x = x.detach().float()
            answers, k = self.pairs.answers[pair_rows], x.shape[1]
            scored = answer_positions(x, answers, self.pairs.scoring)
            self.positions[start:stop, :k] = scored
            self.positions_raw[start:stop, :k] = answer_logits(x, answers)
            self.answer[start:stop] = scored.sum(1)
            self.metric_out[start:stop] = (
                self.of_score(self.answer[start:stop], pair_rows, self.pairs)
                if self.of_score is not None
                else self.metric(x, pair_rows, self.pairs)
            )

        first = min((site.order[0] for site in plan), default=self.L)
        skip = None
        if self.residuals and first > 0:
            skip = (first, self.residuals[first][pair_rows, offset - self.prefix[0] : layout.length - self.prefix[0]])
        with torch.no_grad():
            ids = self.pairs.corrupted[pair_rows, : layout.length]
            engine.trace(ids, plan, on_logits if self.metric is not None else None, prefix, layout.answer, skip)
        for p in self.record:
            self.recorded[p].append(got[p])

    def _start(self, touched: Sequence[Point], layout: Layout, pair_rows: Tensor) -> tuple[int, list | None]:
        """(p, per-layer keys and values of positions 0..p-1) a batch's forward starts from: the
        shared prefix, or where the corrupted run's keys and values are kept, the first position
        the batch's patches and records touch (at most the first answer position, whose logits
        are read); positions before it compute what the corrupted run computed.  Not past a
        sliding attention window (as the shared prefix: kept keys are exact only within it)."""
        offset = self.prefix[0]
        if self.kv is None or not self.engine.prefix.exact_for(layout.length):
            return self.prefix
        p = layout.first_position(touched)
        if p <= offset:
            return self.prefix
        own = [(k[pair_rows, :, : p - offset], v[pair_rows, :, : p - offset]) for k, v in self.kv]
        if offset == 0:
            return p, own
        rows = len(pair_rows)
        shared = self.prefix[1]
        return p, [
            (torch.cat([k0.expand(rows, *k0.shape[1:]), k], 2), torch.cat([v0.expand(rows, *v0.shape[1:]), v], 2))
            for (k0, v0), (k, v) in zip(shared, own)
        ]

    def _record_fn(self, point: Point, rows: slice, into: list, layout: Layout, offset: int):
        return lambda x: into.append(self.engine.select(point, x[rows], offset, layout).detach().clone())

    def _patch_fn(self, patch: Patch, rows: slice, pair_idx: slice, layout: Layout, offset: int):
        engine, point = self.engine, patch.point
        pos = engine.positions(point, offset, layout)
        # a span narrower than its class repeats its first position (Layout.resolve): a tensor
        # value must then give each repeat the value of the first, or the patch is not defined;
        # so given, an added value is added once (each position is written, not accumulated)
        repeats = [(i, pos.index(p)) for i, p in enumerate(pos) if pos.index(p) != i]

        def fn(x: Tensor) -> Tensor:
            y = x.clone()
            sub = engine.view(point, y)[rows]  # a view into y
            target = sub[:, pos] if point.index is None else sub[:, pos, point.index]
            new = self._value(patch, target, pair_idx)
            new = (target + new) if patch.add else new.expand_as(target)
            if patch.where is not None:
                new = torch.where(self._mask(patch, target, pair_idx), new.to(target.dtype), target)
            if repeats and (isinstance(patch.value, Tensor) or patch.where is not None):
                _check_repeats(new, repeats, point)
            if point.index is None:
                sub[:, pos] = new.to(y.dtype)
            else:
                sub[:, pos, point.index] = new.to(y.dtype)
            return y

        return fn

    def _mask(self, patch: Patch, target: Tensor, pair_idx: slice) -> Tensor:
        """The patch's ``where`` for the rows of ``pair_idx``: per pair where it has the pair axis
        ([n_pairs, n_positions, *features]), else broadcast to every row."""
        mask = self.masks[id(patch)]
        return mask[pair_idx] if mask.dim() == target.dim() and mask.shape[0] == self.n else mask

    def _value(self, patch: Patch, target: Tensor, pair_idx: slice) -> Tensor:
        """The replacement for the rows of ``pair_idx`` (target: their corrupted values)."""
        if isinstance(patch.value, Tensor):
            val = self.tensors[id(patch)]
            return val[pair_idx] if val.dim() == target.dim() and val.shape[0] == self.n else val
        if isinstance(patch.value, str) and patch.value == "clean":
            return self.clean[patch.point][pair_idx]
        if callable(patch.value):
            return patch.value(self.clean[patch.point][pair_idx], target)
        raise ValueError(
            f"unknown replacement {patch.value!r}; allowed: 'clean', a tensor or a function of (clean, corrupted)"
        )

    def unstack(self, rows: Tensor) -> Tensor:
        """Per-row values [V * n, ...] in stacked (layout, variant, pair) order -> [V, n, ...]."""
        out = rows.new_empty(self.V, self.n, *rows.shape[1:])
        for g in self.pairs.groups:
            out[:, g.start : g.stop] = rows[self.V * g.start : self.V * g.stop].view(
                self.V, g.stop - g.start, *rows.shape[1:]
            )
        return out

    def result(self) -> RunResult:
        recs = {p: self.unstack(torch.cat(v)) for p, v in self.recorded.items()}
        by_variant = [{p: torch.cat(chunks) for p, chunks in d.items()} for d in self.per_variant]
        return RunResult(
            self.unstack(self.metric_out),
            self.unstack(self.answer),
            recs,
            by_variant,
            self.unstack(self.positions),
            self.unstack(self.positions_raw),
        )

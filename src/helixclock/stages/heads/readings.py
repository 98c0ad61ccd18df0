"""Attention heads at each reading of the model's token layout (section 5.2; for numbers of
several tokens docs/several-tokens.md, "Numbers of several tokens"): one implementation, whatever
the tokenizer.

Every table carries column ``reading``.  Where every number is one token (the paper's models)
there is one reading, the last token, and this is section 5.2 exactly: each head's output at the
last token fitted by helix(a,b,a+b), helix(a+b) and helix(a,b) on the sample of correct prompts,
TE and DE by the paper's logit difference, Fig. D6's attention from the last token to a, b and
itself (tests/unit/test_readings.py holds it to the paper's definitions).  Where numbers may take
several tokens the head stage is read at the model's further readings
(:attr:`helixclock.prompts.layout.NumberTokens.readings`), as Figs. 5 and 6 are: at the last prompt
token t0, the paper-comparable reading, and at every position that predicts an answer token
(t0 and the teacher-forced answer tokens but the last), patched together.  At each reading the
heads' TE is activation patching there scored by the log-likelihood-ratio LD, their DE their
clean - corrupted write there through the final norm and unembedding, each position scored on
its own token (one metric, so DE/TE is meaningful); the helix fits of each head's output are
fitted per position (:func:`~helixclock.causal.experiments.answer_position_fits`) and patched in at
their positions; categories, the mixed-head sweep and path patching follow the paper's
definitions on those positions (:func:`.patching.head_reading`).  Fig. D6's attention is read
from t0 and from each answer position to a's and b's spans and to each of their digits
(:func:`span_attention`).  A third reading, at the first differing token (p*: the position that
predicts the first answer token the clean and the corrupted answer do not share,
:mod:`helixclock.causal.first_difference`), measures the TE and DE of the heads the last-token reading
measured and of the heads a screen at p* adds, and their helix(a,b,a+b) fits, TE and DE scoring the
one token p* predicts, by stratum (answer tokens, p*): rows of the effects and fits tables with
columns ``answer_tokens`` and ``p_star``.  Heads chosen at the last token alone would miss a head
that acts only at p* (SmolLM2's three-token answers: p* after "1"), so every head is screened by
attribution at each pair's own p*, pooled over the strata, on the selection draw (without one, on
the measuring pairs, as the last token's screen is); the heads it lists by Benjamini-Hochberg and
the last-token reading did not measure are added (:func:`first_difference_screen`: the screen
table's rows of the reading).  Where numbers take several tokens the effects and fits tables say
whose list each head came from (column ``screen``: its reading's own at the last token and the
answer positions; at p* "last token" or "first differing token"); the paper's models (one token,
one reading) have no reading at p* and their tables are unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

from ...causal.experiments import answer_position_fits, answer_width, total_and_direct, widen
from ...causal.first_difference import FirstDifference, first_difference_pairs
from ...causal.pairs import SelectionDraw, forced_rows
from ...fitting.bases import Basis, clock_bases
from ...patching import Pairs, PatchingEngine, Point
from ...prompts.layout import READINGS, ROLE_READINGS, Group
from ...prompts.sampling import seeded_rows
from ...stats.inference import t_test
from ...stats.multiplicity import benjamini_hochberg
from ...stats.statistics import pair_values
from .patching import (
    ATTENTION_PROMPTS,
    ATTENTION_SEED,
    FittedHeads,
    HeadSettings,
    fit_effects,
    head_reading,
    screen_heads,
)

KEYS = ("a", "b", "last", "a_units", "a_tens", "b_units", "b_tens")  # Fig. D6's keys (attn_<key>)


def head_outputs(
    engine: PatchingEngine, sample: pd.DataFrame, template: str
) -> tuple[Float[Tensor, "head row pos d_head"], np.ndarray, np.ndarray]:
    """Every head's output at every position that predicts an answer token, on the prompts of
    ``sample`` (correct a+b prompts) teacher-forced with their own answers: [L * H, n, K, d_head]
    (index layer * n_heads + head), the rows' (a, b) and answer token counts."""
    ad = engine.adapter
    ids, groups, order, k = forced_rows(engine.model, sample, template)
    points = [Point("head_out", layer, ("answer",)) for layer in range(ad.n_layers)]
    values, _ = engine.collect(ids, points, logits=False, desc="head outputs", groups=groups)
    H = torch.stack([values[p] for p in points])  # [L, n, K, H, dh]
    H = H.permute(0, 3, 1, 2, 4).reshape(ad.n_layers * ad.n_heads, *H.shape[1:3], ad.d_head)
    return H.float(), sample[["a", "b"]].to_numpy()[order], k


def head_readings(
    engine: PatchingEngine,
    pairs: Pairs,
    sample: pd.DataFrame,
    template: str,
    settings: HeadSettings,
    select: SelectionDraw | None = None,
) -> dict[str, pd.DataFrame]:
    """Everything of section 5.2 that runs the model, at each reading of the model's token layout
    (column ``reading``; :attr:`helixclock.prompts.layout.NumberTokens.readings`): the raw tables of
    :func:`.patching.head_reading` (screen, effects, fits, topk, mixed, paths) and the categorised
    top heads at the last prompt token and, where numbers take several tokens, at every position
    that predicts an answer token; there, too, the effects and fits at the first differing token
    by stratum (:func:`first_difference_heads`) of the heads the last-token reading measured and
    those the screen at p* adds (:func:`first_difference_screen`, on the selection draw's
    ``screen`` pairs, or without a selection draw on ``pairs``; column ``screen`` of the effects
    and fits: whose list each head came from).
    The heads' outputs are fitted on the prompts of ``sample`` (correct a+b prompts of
    ``template``), and Fig. D6's attention is :func:`span_attention`'s (column ``position``: 0 is
    the last prompt token).  The heads of each reading are chosen on the selection draw
    ``select`` where there is one (:func:`.patching.choose_heads`; None: on ``pairs``, the
    paper's)."""
    readings = engine.model.tokens.readings
    ad = engine.adapter
    H, ab, k = head_outputs(engine, sample, template)
    K = int(pairs.answer_tokens().max())  # the most answer tokens of a pair: the positions fitted
    if H.shape[2] < K:
        raise ValueError(
            f"the fitted prompts' answers have at most {H.shape[2]} tokens and the pairs' {K}: no fit for "
            "the pairs' last answer positions (config key clock.fit_prompts: a larger sample)"
        )
    fits = answer_position_fits(H[:, :, :K], ab, k, clock_bases(settings.periods), settings.pca_components)
    index = {(layer, h): layer * ad.n_heads + h for layer in range(ad.n_layers) for h in range(ad.n_heads)}
    fitted = {
        "last": lambda: FittedHeads(fits[:1], index, pairs),
        "answer": lambda: AnswerHeads(fits, index, pairs, answer_width(pairs)),
    }
    out: dict[str, list[pd.DataFrame]] = {}
    for position in (r for r in readings if r in ROLE_READINGS):
        for name, table in head_reading(engine, pairs, fitted[position](), position, settings, select).items():
            out.setdefault(name, []).append(table.assign(reading=READINGS[position])[["reading", *table.columns]])
    if "differ" in readings:
        for name in ("effects", "fits"):  # which screen's list each head measured came from
            out[name] = [t.assign(screen=t["reading"]) for t in out[name]]
        measured = out["effects"][0]  # the heads the last-token reading measured, in its order
        chosen = list(dict.fromkeys(zip(measured["layer"].astype(int), measured["head"].astype(int))))
        screened = select.screen if select is not None else pairs  # no selection draw: the measuring pairs
        screen, added = first_difference_screen(engine, screened, chosen, settings.screen_alpha)
        out["screen"].append(screen.assign(reading=READINGS["differ"])[["reading", *screen.columns]])
        came = {**dict.fromkeys(chosen, READINGS["last"]), **dict.fromkeys(added, READINGS["differ"])}
        for name, table in first_difference_heads(engine, pairs, fits, index, chosen + added, settings.periods).items():
            table = table.assign(screen=[came[la, h] for la, h in zip(table["layer"], table["head"])])
            out[name].append(table.assign(reading=READINGS["differ"])[["reading", *table.columns]])
    tables = {name: pd.concat(parts, ignore_index=True) for name, parts in out.items()}
    # Fig. D6 on a seeded sample of the fitted prompts (they come in the accuracy table's order,
    # sorted by a, where a model has fewer correct prompts than clock.fit_prompts)
    attended = seeded_rows(sample, ATTENTION_PROMPTS, ATTENTION_SEED)
    few, few_groups, _, _ = forced_rows(engine.model, attended, template)
    tables["attention"] = span_attention(engine.model, few, few_groups)
    return tables


class AnswerHeads(FittedHeads):
    """:class:`.patching.FittedHeads` at role "answer" of pairs whose role is wider than their
    longest answer (its width is the most answer tokens among all the correct prompts, not the
    drawn pairs'): fitted at each answer position the pairs reach, a position past a pair's
    answer (or past every pair's) repeating its first, as a padded role does."""

    def __init__(self, fits, index, pairs: Pairs, width: int):
        super().__init__(fits, index, pairs, pairs.answer_tokens())
        self.width = width

    def __call__(self, basis: Basis, point: Point) -> torch.Tensor:
        return widen(super().__call__(basis, point), self.width)


class FirstDifferenceHeads(FittedHeads):
    """:class:`.patching.FittedHeads` at the first differing token: each pair of ``differ``'s cut
    pairs gets its fit at its own p* (the answer position it predicts), [n_pairs, 1, d_head]."""

    def __init__(self, fits, index, differ: FirstDifference):
        super().__init__(fits, index, differ.pairs)
        self.at = torch.as_tensor(differ.at, device=self.device)

    def __call__(self, basis: Basis, point: Point) -> torch.Tensor:
        out = super().__call__(basis, point)  # [n, positions, d_head]
        return out[torch.arange(len(self.at), device=self.device), self.at][:, None]


def first_difference_heads(
    engine: PatchingEngine, pairs: Pairs, fits, index: dict, heads: list[tuple[int, int]], periods
) -> dict[str, pd.DataFrame]:
    """The reading at the first differing token (:mod:`helixclock.causal.first_difference`): the TE and
    DE of ``heads`` ((layer, head): those the last-token reading measured, then those the screen at
    p* adds, :func:`first_difference_screen`) and each one's
    helix(a,b,a+b) fit of its answer position p* patched in, on the pairs cut after p*, each raw
    table by stratum (columns ``answer_tokens``, ``p_star``) in the pairs' order."""
    differ = first_difference_pairs(pairs)
    points = [Point("head_out", layer, ("last",), index=h) for layer, h in heads]
    effects = total_and_direct(engine, differ.pairs, points, desc="head effects (first differing token)")
    helix_all = clock_bases(periods)[0]
    fitted = FirstDifferenceHeads(fits, index, differ)
    fit_raw = fit_effects(engine, differ.pairs, [(p, helix_all) for p in points], fitted)
    return {"effects": differ.table(effects), "fits": differ.table(fit_raw)}


def first_difference_screen(
    engine: PatchingEngine, pairs: Pairs, chosen: list[tuple[int, int]], alpha: float
) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    """The head screen at the first differing token: every head's attribution score
    (:func:`.patching.screen_heads`) on ``pairs`` cut after p* (each pair attributed at its own
    p*, the position that predicts the first answer token the clean and the corrupted answer do
    not share, its metric the LD of that one token, as the reading at p* scores it), pooled over
    the strata (a stratum of a few pairs cannot rank heads; :meth:`FirstDifference.pooled`).  Each
    head's mean score over the pairs is tested against 0 (the one-sample t test, ``p_value``) and
    the heads are a screening list: Benjamini-Hochberg over every head at false discovery rate
    ``alpha`` (``listed``); those listed and not in ``chosen`` (the heads the last-token reading
    measured) are added to the reading at p*.  Returns the raw table (columns layer, head,
    screened: measured at p*, in ``chosen`` or listed, as the last token's screen marks the heads
    measured there; listed, p_value, then the pairs in ``pairs``' order) and the added heads, in
    layer and head order."""
    differ = first_difference_pairs(pairs)
    raw = differ.pooled(screen_heads(engine, differ.pairs, "last"))
    values = pair_values(raw).astype(np.float64)
    n = (~np.isnan(values)).sum(1)
    se = np.nanstd(values, axis=1, ddof=1) / np.sqrt(n)
    p = t_test(np.nanmean(values, axis=1), se, n - 1)
    listed, _ = benjamini_hochberg(p, alpha)
    heads = list(zip(raw["layer"].astype(int), raw["head"].astype(int)))
    measured = np.array([h in set(chosen) for h in heads], dtype=bool)
    added = [h for h, hit in zip(heads, listed & ~measured) if hit]
    first = pd.DataFrame(
        {"layer": raw["layer"], "head": raw["head"], "screened": measured | listed, "listed": listed, "p_value": p}
    )
    return pd.concat([first, raw.drop(columns=["layer", "head"])], axis=1), added


def _keys(layout) -> dict[str, list[int]]:
    """Fig. D6's key positions in one layout: a's and b's spans, the last prompt token, and the
    units and tens digits of a and b (a number's last token and the one before; no tens key
    where the number is one token)."""
    spans = {name: (start, end) for name, start, end in layout.spans}
    keys = {"a": list(range(*spans["a"])), "b": list(range(*spans["b"])), "last": [layout.resolve("last")[0]]}
    for name in ("a", "b"):
        start, end = spans[name]
        keys[f"{name}_units"] = [end - 1]
        keys[f"{name}_tens"] = [end - 2] if end - 2 >= start else []
    return keys


def span_attention(model, ids: Tensor, groups: list[Group], batch_size: int = 64) -> pd.DataFrame:
    """Fig. D6 for answers of several tokens: every head's mean attention from each position that
    predicts an answer token (``position`` 0: the last prompt token) to a's span, b's span (summed
    over their tokens), the last prompt token, and the units and tens digits of a and b; means
    over the rows where the position and the key exist (``n_rows``, ``n_rows_tens_a``/``_b``)."""
    hf = model.hf
    hf.set_attn_implementation("eager")  # attention weights are only materialised by eager
    sums: dict[tuple[int, str], Tensor] = {}
    counts: dict[tuple[int, str], int] = {}
    try:
        with torch.no_grad():
            for g in groups:
                keys = _keys(g.layout)
                first = g.layout.resolve("last")[0]
                queries = range(first, first + g.layout.answer_tokens)
                for i in range(g.start, g.stop, batch_size):
                    rows = ids[i : min(i + batch_size, g.stop), : g.layout.length].to(model.device)
                    # the base model: attention weights without the unembedding of every position
                    att = torch.stack(hf.base_model(rows, output_attentions=True).attentions)  # [L, B, H, S, S]
                    for j, q in enumerate(queries):
                        for name, pos in keys.items():
                            if not pos:
                                continue
                            part = att[:, :, :, q, pos].float().sum(-1).sum(1)  # [L, H]
                            sums[j, name] = sums.get((j, name), 0) + part
                            counts[j, name] = counts.get((j, name), 0) + len(rows)
    finally:
        hf.set_attn_implementation(model.attn_implementation)
    L, Hn = next(iter(sums.values())).shape
    tables = []
    for j in sorted({j for j, _ in sums}):
        table = {"layer": np.repeat(np.arange(L), Hn), "head": np.tile(np.arange(Hn), L), "position": j}
        for name in KEYS:
            mean = sums[j, name] / counts[j, name] if (j, name) in sums else torch.full((L, Hn), float("nan"))
            table[f"attn_{name}"] = mean.reshape(-1).cpu().numpy()
        table["n_rows"] = counts[j, "a"]
        table["n_rows_tens_a"], table["n_rows_tens_b"] = counts.get((j, "a_tens"), 0), counts.get((j, "b_tens"), 0)
        tables.append(pd.DataFrame(table))
    return pd.concat(tables, ignore_index=True)

"""The reading at the first differing token (docs/several-tokens.md, "Numbers of several tokens"; paper section 5.1's
TE and DE carried over to answers of several tokens).

The paper's answers are one token, and its TE and DE score that token at the last prompt token.
An answer of several tokens is scored by teacher forcing, and the clean and the corrupted answer
may share their first tokens: with a, b <= 99 and pairs that keep the answer's token count, every
three-digit answer is 100-198 and begins with "1" in both runs, so at the last prompt token such a
pair changes nothing the model predicts there.  This reading patches and scores at **p***, the
position that predicts the first answer token the two answers do not share:

* the last prompt token, where the answers differ in their first token (the paper's reading);
* the position after "1" (three-digit answers whose tens digits differ);
* the tens digit's position (answers with the same tens digit).

Up to p* the two answers share their tokens, so the teacher-forced clean answer is on the
corrupted run's own path there too.  A pair's rows are cut after p*
(:func:`first_difference_pairs`): p* is then their last token, one token is read (the clean
answer's at p*), and every experiment of the last token (TE by activation patching, DE by path
patching, fits patched in) runs unchanged on them, TE and DE scoring the same token.  The cut rows
compute at p* what the whole rows compute there (causal attention).  Pairs differ in p*, so the
cut pairs are regrouped by layout; :meth:`FirstDifference.table` puts their per-pair columns back
in the pairs' order and splits each row by stratum (:data:`helixclock.prompts.layout.STRATA`: the answer's
token count and p*), since a mean over pairs read at different kinds of position has no meaning of
its own.  For pairs whose every pair reads one position (one-token answers) p* is the last token
and the pairs are returned as they are: the reading is the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..patching import Pairs
from ..prompts.layout import READINGS, STRATA, Layout, groups_of, layout_order
from ..stats.statistics import PAIR, TERM, pair_columns

READING = READINGS["differ"]
KEPT_TERMS = ("ld", "ld_raw")  # one token is read at p*: its LD (and raw logit) is every term


@dataclass(frozen=True)
class FirstDifference:
    """The pairs cut after p* (``pairs``: row r is pair ``order[r]`` of the pairs they were made
    from) and each of those pairs' stratum, in their order: ``answer_tokens`` and ``p_star`` (the
    answer tokens before p*; 0: the last prompt token)."""

    pairs: Pairs
    order: np.ndarray
    answer_tokens: np.ndarray
    p_star: np.ndarray

    @property
    def at(self) -> np.ndarray:
        """p* of each row of ``pairs`` (the answer position it predicts)."""
        return self.p_star[self.order]

    def strata(self) -> list[tuple[int, int]]:
        """The strata (answer tokens, p*) the pairs fall into, sorted."""
        return sorted(set(zip(self.answer_tokens.tolist(), self.p_star.tolist())))

    def table(self, raw: pd.DataFrame) -> pd.DataFrame:
        """A raw table of ``pairs`` (one column per row of ``pairs``) with its pair columns back in
        the original pairs' order and each row once per stratum (columns ``answer_tokens`` and
        ``p_star`` before the pairs; a pair outside the stratum is NaN); of LD by term, its
        ``ld`` and ``ld_raw`` rows only (one token is read at p*: the others are that one's, or
        empty)."""
        if TERM in raw:
            raw = raw[raw[TERM].isin(KEPT_TERMS)]
        labels, values, names = self._in_order(raw)
        parts = []
        for k, j in self.strata():
            inside = (self.answer_tokens == k) & (self.p_star == j)
            part = labels.assign(**{STRATA[0]: k, STRATA[1]: j})
            parts.append(
                pd.concat(
                    [part, pd.DataFrame(np.where(inside[None], values, np.nan).astype(np.float32), columns=names)],
                    axis=1,
                )
            )
        return pd.concat(parts, ignore_index=True)

    def pooled(self, raw: pd.DataFrame) -> pd.DataFrame:
        """A raw table of ``pairs`` with its pair columns back in the original pairs' order, each
        row once, over every pair whatever its stratum: for a screen that ranks components over
        all the pairs, each pair read at its own p* (the heads' screen at the first differing
        token, :func:`helixclock.stages.heads.readings.first_difference_screen`), never for a
        reported mean (:meth:`table`)."""
        labels, values, names = self._in_order(raw)
        return pd.concat([labels, pd.DataFrame(values, columns=names)], axis=1)

    def _in_order(self, raw: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
        """A raw table's labels, its values [rows, pairs] in the original pairs' order and their
        column names."""
        cols = pair_columns(raw)
        if len(cols) != len(self.order):
            raise ValueError(f"a table of {len(cols)} pairs for {len(self.order)} pairs at the first differing token")
        labels = raw.drop(columns=cols).reset_index(drop=True)
        values = np.full((len(raw), len(cols)), np.nan, dtype=np.float32)
        values[:, self.order] = raw[cols].to_numpy(np.float32)
        return labels, values, [f"{PAIR}{i}" for i in range(len(cols))]


def first_difference_pairs(pairs: Pairs) -> FirstDifference:
    """The pairs cut after p* (module docstring): each pair's rows end at the position that
    predicts the first answer token the clean and the corrupted answer do not share (recorded by
    :func:`helixclock.causal.pairs.draw_pairs` as ``meta["first_difference"]``), which is then their last
    token and their one position read, the clean answer's token there scored as the pairs score
    it; regrouped by layout.  Pairs whose every pair reads one position (the paper's) come back as
    they are."""
    n = len(pairs)
    k = pairs.answer_tokens().cpu().numpy()
    first = pairs.meta.get("first_difference")
    one = all(g.layout.answer == 1 for g in pairs.groups)
    if first is None:
        if not one:
            raise ValueError(
                "pairs whose answers read several positions but record no first differing token "
                "(meta 'first_difference': pairs drawn by helixclock.causal.pairs.draw_pairs)"
            )
        first = np.zeros(n, dtype=np.int64)
    first = np.asarray(first, dtype=np.int64)
    bad = np.flatnonzero((first < 0) | (first >= k))
    if len(bad):
        raise ValueError(
            f"pair {int(bad[0])}: its clean and corrupted answers share every token (first difference "
            f"{int(first[bad[0]])}, {int(k[bad[0]])} answer tokens): no position predicts a token they do not share"
        )
    if one:
        return FirstDifference(pairs, np.arange(n), k, first)
    layouts: list[Layout] = []
    for g in pairs.groups:
        lay = g.layout
        width = tuple(w for w in lay.width if w[0] != "answer")
        start = lay.length - lay.answer  # the last prompt token
        layouts += [Layout(start + int(first[i]) + 1, lay.spans, 1, width, 0) for i in range(g.start, g.stop)]
    order = layout_order(layouts)
    device = pairs.clean.device
    idx = torch.as_tensor(order, device=device)
    rows = torch.arange(n, device=device)
    clean = pairs.answers[rows, torch.as_tensor(first, device=device)]
    token = pairs.meta.get("first_difference_token")
    wrong = torch.as_tensor(token, device=device) if token is not None else pairs.corrupted_answer
    meta = {key: v[order] if isinstance(v, np.ndarray) and len(v) == n else v for key, v in pairs.meta.items()}
    cut = Pairs(
        pairs.clean[idx],
        pairs.corrupted[idx],
        clean[idx],
        wrong[idx],
        meta,
        groups_of([layouts[i] for i in order]),
        clean[idx][:, None],
        pairs.scoring,
        pairs.digits,
    )
    return FirstDifference(cut, order, k, first)

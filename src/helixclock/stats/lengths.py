"""Summaries by answer length (docs/findings.md, "Findings").

A pair's LD sums the terms of its answer's tokens (docs/several-tokens.md, "Numbers of several tokens"): three
for an answer of three tokens, two for two, so a mean over pairs mixes answers of different
lengths in proportions the draw happened to give (28 of SmolLM2's 50 Table 1 pairs have
three-digit answers).  Every several-token summary keeps its mean over all pairs and also
reports its strata by the answer's token count (:func:`by_length`, with each stratum's share of
the pairs: the mix); a comparison across models reads length-standardised means
(:func:`standardised`: the strata's means weighted by :data:`STANDARD`, the same weights for
every model), so that a model whose draw has more long answers is not read as having larger
effects.

A pair's token count comes from its job's pairs table (``answer_tokens``,
:func:`helixclock.causal.pairs.pair_table`) or, for a table that has its LD's terms by place value, from
the terms the pair has (:func:`answer_lengths`).  Pandas only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from .statistics import TERM, labels_of, pair_columns

PLACES = ("units", "tens", "hundreds")  # an LD table's terms by place value (helixclock.patching.metrics.PLACES)
# The standard mix of answer lengths: the share of the 10,000 a+b problems (a, b in 0..99) whose
# answer has 1, 2 or 3 digits (a+b < 10: 55; 10..99: 4,995; 100..198: 4,950), the token counts of a
# tokenizer that splits numbers into digits (both real models)
STANDARD = {1: 55 / 10_000, 2: 4_995 / 10_000, 3: 4_950 / 10_000}
LENGTH = "answer_tokens"


def answer_lengths(raw: pd.DataFrame) -> np.ndarray | None:
    """[n pairs] each pair column's answer token count, read from a raw LD table's terms by place
    value (a pair has a term for each of its answer's tokens, NaN for the others); None for a
    table without terms (one-token answers)."""
    if TERM not in raw or not raw[TERM].isin(PLACES).any():
        return None
    cols = pair_columns(raw)
    count = np.zeros(len(cols), dtype=np.int64)
    for place in PLACES:
        rows = raw.loc[raw[TERM] == place, cols]
        count += rows.notna().any(axis=0).to_numpy() if len(rows) else 0
    return count


def pair_lengths(raw: pd.DataFrame, pairs: pd.DataFrame | None) -> np.ndarray:
    """[n pairs] the answer token count of each pair column of ``raw``: from its job's pairs table
    (its measuring draw, where it has several), else from the table's terms, else 1 (one-token
    answers)."""
    cols = pair_columns(raw)
    if pairs is not None and "answer_tokens" in pairs:
        if "draw" in pairs:
            pairs = pairs[pairs["draw"] == "measure"]  # helixclock.causal.pairs.MEASURE
        by_pair = pairs.set_index("pair")["answer_tokens"]
        return by_pair.loc[cols].to_numpy(dtype=np.int64)
    found = answer_lengths(raw)
    return found if found is not None else np.ones(len(cols), dtype=np.int64)


def mix(lengths) -> str:
    """The mix of answer lengths in words: "2 tokens: 22 pairs, 3 tokens: 28 pairs"."""
    values, counts = np.unique(np.asarray(lengths), return_counts=True)
    return ", ".join(
        f"{v} token{'s' if v != 1 else ''}: {c} pair{'s' if c != 1 else ''}" for v, c in zip(values, counts)
    )


def by_length(raw: pd.DataFrame, lengths: np.ndarray, summary: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
    """``summary`` (a table job's summary of a raw table) of each stratum of the pairs by answer
    token count: its rows with column ``answer_tokens`` first and ``share_of_pairs`` (the
    stratum's share of the pairs: the mix) second."""
    cols = pair_columns(raw)
    lengths = np.asarray(lengths)
    if len(lengths) != len(cols):
        raise ValueError(f"by_length: {len(lengths)} answer lengths for {len(cols)} pair columns")
    parts = []
    for length in np.unique(lengths):
        keep = [c for c, n in zip(cols, lengths) if n == length]
        table = summary(pd.concat([labels_of(raw), raw[keep]], axis=1))
        table.insert(0, LENGTH, int(length))
        table.insert(1, "share_of_pairs", len(keep) / len(cols))
        parts.append(table)
    return pd.concat(parts, ignore_index=True)


def standardised(means: Mapping[int, np.ndarray], weights: Mapping[int, float] = STANDARD) -> np.ndarray:
    """The length-standardised mean: the strata's means (``means``: token count -> means) weighted
    by the standard mix, over the strata present (weights renormalised to them; a length the
    standard lacks is an error)."""
    unknown = sorted(set(means) - set(weights))
    if unknown:
        raise ValueError(f"standardised: answer lengths {unknown} have no standard weight; known: {sorted(weights)}")
    total = sum(weights[k] for k in means)
    return sum(weights[k] * np.asarray(v, dtype=np.float64) for k, v in means.items()) / total

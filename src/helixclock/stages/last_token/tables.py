"""The last-token stage's tables (pandas only): Fig. 5's curves and Fig. 6's effects with
intervals, and for answers of several tokens both by stratum (answer tokens, p*) at every reading,
the first differing token's among them (docs/several-tokens.md, "Numbers of several tokens")."""

from __future__ import annotations

import pandas as pd

from ...prompts.layout import STRATA
from ...stats.lengths import by_length, pair_lengths
from ...stats.statistics import Resampling, summarise, te_de_table
from ...stats.strata import FIRST_DIFFERENCE, reading_rows, strata_masks, strata_summary, strata_table, with_matched


def effects_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Fig. 6: TE and DE of every attention and MLP output, with intervals; answers of several
    tokens per reading (the last token, the answer positions) with the TE of the terms DE scores
    (``te_matched``, ``de_over_te_matched``: :func:`helixclock.stats.statistics.with_matched`)."""
    parts = []
    for reading in dict.fromkeys(raw["reading"]):
        if reading == FIRST_DIFFERENCE:
            continue  # by stratum only: layer_effects_strata
        part = reading_rows(raw, reading)
        table = with_matched(te_de_table(part, resampling), part, reading, resampling)
        parts.append(table.assign(reading=reading)[["reading", *table.columns]])
    return pd.concat(parts, ignore_index=True)


def fits_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Fig. 5's curves with intervals (of answers of several tokens, the last token's and the
    answer positions' readings: the first differing token's are by stratum, fits_strata)."""
    parts = [
        summarise(reading_rows(raw, r), resampling).assign(reading=r)
        for r in dict.fromkeys(raw["reading"])
        if r != FIRST_DIFFERENCE
    ]
    out = pd.concat(parts, ignore_index=True)
    return out[["reading", *[c for c in out.columns if c != "reading"]]]


def role_rows(raw: pd.DataFrame) -> pd.DataFrame:
    """A raw table's rows of the readings at a role (the last token, the answer positions),
    without the first differing token's (read by stratum only) and the strata columns those
    rows bring."""
    return raw[raw["reading"] != FIRST_DIFFERENCE].drop(columns=[c for c in STRATA if c in raw])


def last_token_summary(raw: dict[str, pd.DataFrame], resampling: Resampling) -> dict[str, pd.DataFrame]:
    """Rule last_token_summary: means with bootstrap intervals of Fig. 5's curves (``fits``) and
    of Fig. 6's effects (``layer_effects``); both by answer token count (``*_by_length``,
    :func:`helixclock.stats.lengths.by_length`, at the readings of a role: the pairs' lengths from
    ``raw["pairs"]`` where given) and by stratum (answer tokens, p*) at every reading:
    ``layer_effects_strata`` (TE, DE and DE/TE of the terms DE scores; at the first differing
    token of the one token p* predicts) and ``fits_strata`` (Fig. 5's curves there).  One-token
    answers: one stratum, the paper's numbers."""
    pairs = raw.get("pairs")
    fits, effects = raw["fits"], raw["layer_effects"]
    masks = strata_masks(effects)
    at_roles = {"fits": role_rows(fits), "layer_effects": role_rows(effects)}
    return {
        "fits": fits_table(fits, resampling),
        "layer_effects": effects_table(effects, resampling),
        "fits_by_length": by_length(
            at_roles["fits"], pair_lengths(at_roles["fits"], pairs), lambda t: summarise(t, resampling)
        ),
        "layer_effects_by_length": by_length(
            at_roles["layer_effects"],
            pair_lengths(at_roles["layer_effects"], pairs),
            lambda t: effects_table(t, resampling),
        ),
        "fits_strata": strata_summary(fits, masks, resampling),
        "layer_effects_strata": strata_table(effects, resampling),
    }

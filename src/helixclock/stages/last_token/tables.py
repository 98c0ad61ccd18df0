"""The last-token stage's tables (pandas only)."""

from __future__ import annotations

import pandas as pd

from ...lengths import by_length, pair_lengths
from ...statistics import Resampling, summarise, te_de_table


def effects_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Fig. 6: TE and DE of every attention and MLP output, with intervals."""
    return te_de_table(raw, resampling)


def last_token_summary(raw: dict[str, pd.DataFrame], resampling: Resampling) -> dict[str, pd.DataFrame]:
    """Rule last_token_summary: means with bootstrap intervals of Fig. 5's curves (``fits``) and
    of Fig. 6's effects (``layer_effects``), and both by answer token count (``*_by_length``,
    :func:`helixclock.lengths.by_length`; the pairs' lengths from ``raw["pairs"]`` where given)."""
    pairs = raw.get("pairs")
    fits, effects = raw["fits"], raw["layer_effects"]
    return {
        "fits": summarise(fits, resampling),
        "layer_effects": effects_table(effects, resampling),
        "fits_by_length": by_length(fits, pair_lengths(fits, pairs), lambda t: summarise(t, resampling)),
        "layer_effects_by_length": by_length(
            effects, pair_lengths(effects, pairs), lambda t: effects_table(t, resampling)
        ),
    }

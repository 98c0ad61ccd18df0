"""The last-token stage's tables (pandas only)."""

from __future__ import annotations

import pandas as pd

from ...statistics import Resampling, summarise, te_de_table


def effects_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Fig. 6: TE and DE of every attention and MLP output, with intervals."""
    return te_de_table(raw, resampling)


def last_token_summary(raw: dict[str, pd.DataFrame], resampling: Resampling) -> dict[str, pd.DataFrame]:
    """Rule last_token_summary: means with bootstrap intervals of Fig. 5's curves (``fits``) and
    of Fig. 6's effects (``layer_effects``)."""
    return {
        "fits": summarise(raw["fits"], resampling),
        "layer_effects": effects_table(raw["layer_effects"], resampling),
    }

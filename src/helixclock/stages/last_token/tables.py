"""The last-token stage's tables (pandas only)."""

from __future__ import annotations

import pandas as pd

from ...statistics import Resampling, te_de_table


def effects_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Fig. 6: TE and DE of every attention and MLP output, with intervals."""
    return te_de_table(raw, resampling)

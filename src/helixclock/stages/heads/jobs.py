"""Attention heads (section 5.2, appendix D.1): rule head_patching's entry point, one path
whatever the model's tokenizer (:func:`.readings.head_readings`: the paper's last token, and
where numbers take several tokens the further readings of docs/several-tokens.md, "Numbers of
several tokens")."""

from __future__ import annotations

import pandas as pd

from ...causal.pairs import SelectionDraw, job_pairs
from ...patching import Pairs, PatchingEngine
from .patching import HeadSettings
from .readings import head_readings


def head_patching(
    engine: PatchingEngine,
    pairs: Pairs,
    sample: pd.DataFrame,
    template: str,
    settings: HeadSettings = HeadSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
    select: SelectionDraw | None = None,
) -> dict[str, pd.DataFrame]:
    """Rule head_patching: every table of section 5.2 that runs the model, at each reading of the
    model's token layout (column ``reading``), its heads' helix fits fitted to the outputs of
    ``sample`` (correct a+b prompts of ``template``).  The heads screened in and their order by
    TE are chosen on the selection draw ``select`` where there is one
    (:func:`.patching.choose_heads`; None: on ``pairs``, the paper's, ``compat: authors``);
    ``pairs`` (table) lists both draws (:func:`helixclock.causal.pairs.job_pairs`)."""
    out = head_readings(engine, pairs, sample, template, settings, select)
    return {**out, "pairs": job_pairs(pairs, select)}

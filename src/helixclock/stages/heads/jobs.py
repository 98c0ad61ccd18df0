"""Attention heads (section 5.2, appendix D.1): rule head_patching's entry point.

:func:`head_patching` chooses, by :attr:`helixclock.models.LoadedModel.tokens`, between the paper's
heads at the last token (:func:`.patching.last_token_heads`, every number one token) and the two
readings of answers of several tokens (:func:`.readings.head_patching_readings`; docs/several-tokens.md, "Numbers
of several tokens").
"""

from __future__ import annotations

import pandas as pd

from ...pairs import SelectionDraw, job_pairs, prompt_ids
from ...patching import Pairs, PatchingEngine
from .patching import HeadSettings, last_token_heads
from .readings import head_patching_readings


def head_patching(
    engine: PatchingEngine,
    pairs: Pairs,
    sample: pd.DataFrame,
    template: str,
    positions: dict[str, int] | None,
    settings: HeadSettings = HeadSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
    select: SelectionDraw | None = None,
) -> dict[str, pd.DataFrame]:
    """Rule head_patching: every table of section 5.2 that runs the model, its heads' helix fits
    fitted to the outputs of ``sample`` (correct a+b prompts of ``template``).  Numbers of one
    token: at the card's ``positions`` of a+b (a, b, last); numbers of several tokens (whose
    ``positions`` are None): at both readings, column ``reading``.  The heads screened in and
    their order by TE are chosen on the selection draw ``select`` where there is one
    (:func:`.patching.choose_heads`; None: on ``pairs``, the paper's, ``compat: authors``);
    ``pairs`` (table) lists both draws (:func:`helixclock.pairs.job_pairs`)."""
    if engine.model.tokens.several:
        out = head_patching_readings(engine, pairs, sample, template, settings, select)
    else:
        ids = prompt_ids(engine.model.tokenizer, template, sample)
        a, b = sample["a"].to_numpy(), sample["b"].to_numpy()
        out = last_token_heads(engine, pairs, ids, a, b, positions, settings, select)
    return {**out, "pairs": job_pairs(pairs, select)}

"""TE and DE of the same tokens, and the strata of answers of several tokens (docs/several-tokens.md, "Numbers of
several tokens"; issue 46): the summary tables' side of the reading at the first differing token
(:mod:`helixclock.causal.first_difference`), pandas only.

At the last prompt token DE scores the first answer token alone, while TE, the log-likelihood
ratio of the whole answer, has a term per answer token and one for the end token: DE/TE of the
whole LD compares different tokens.  :func:`matched_terms` cuts TE to the terms DE scores (at
the last token the first answer token's; at the answer positions every answer token's; the end
token in neither), from the raw tables' ``term`` rows (no model run).  The reading at the first
differing token is read by stratum (the answer's token count and p*), never averaged over kinds
of position; :func:`strata_table` and :func:`strata_summary` cut every reading to those strata.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..prompts.layout import READINGS, STRATA
from .statistics import TERM, Resampling, labels_of, pair_columns, pair_values, primary, summarise

LAST, ANSWER, FIRST_DIFFERENCE = (READINGS[k] for k in ("last", "answer", "differ"))
FIRST_TOKEN = ("hundreds", "tens", "units")  # the place of an answer's first token, by its length 3, 2, 1
MATCHED = "matched"  # the term of TE rows cut to the tokens DE scores (matched_terms)


def reading_rows(table: pd.DataFrame, reading: str | None) -> pd.DataFrame:
    """The rows of one reading of a table (column ``reading``), without it and without the
    strata columns where the reading has none (the first differing token's rows bring them into
    a table; the other readings' rows leave them empty)."""
    part = table[table["reading"] == reading].drop(columns="reading")
    empty = [c for c in STRATA if c in part and part[c].isna().all()]
    return part.drop(columns=empty).reset_index(drop=True)


def matched_rows(raw: pd.DataFrame, reading: str) -> pd.DataFrame:
    """The rows of a raw LD table of one reading of answers of several tokens (rows by term,
    column ``term``: :data:`helixclock.patching.metrics.TERMS`) cut to the terms a DE at that
    reading scores, one row per variant, term ``matched``: at the last token the first answer
    token's term (its hundreds, tens or units term by the answer's length: DE at the last prompt
    token scores that token alone), at the answer positions every answer token's (LD less the end
    token's term).  The end token is in neither.  The first token's term needs answers of at most
    three tokens (the places the table keeps): a table whose places and end do not add up to LD
    is an error."""
    cols = pair_columns(raw)
    ld = raw[raw[TERM] == "ld"].reset_index(drop=True)
    keys = [c for c in ld.columns if c not in cols and c != TERM]

    def term(name: str) -> np.ndarray:
        rows = raw[raw[TERM] == name].drop(columns=TERM)
        got = ld[keys].merge(rows, on=keys, how="left", sort=False)
        return got[cols].to_numpy(np.float64)

    places = {name: term(name) for name in FIRST_TOKEN}
    end = np.nan_to_num(term("end"))
    total = ld[cols].to_numpy(np.float64)
    if reading == LAST:
        added = np.nansum(np.stack(list(places.values())), 0) + end
        if not np.allclose(added, total, rtol=1e-3, atol=1e-3, equal_nan=True):
            raise ValueError(
                "the terms by place and the end's do not add up to LD: answers of more than "
                f"{len(FIRST_TOKEN)} tokens, whose first token's term the table does not keep"
            )
        matched = places["hundreds"]
        for name in FIRST_TOKEN[1:]:
            matched = np.where(np.isnan(matched), places[name], matched)
    elif reading == ANSWER:
        matched = total - end
    else:
        raise ValueError(f"reading {reading!r}: matched terms of {LAST!r} or {ANSWER!r}")
    values = pd.DataFrame(matched.astype(np.float32), columns=cols)
    return pd.concat([ld[keys].assign(**{TERM: MATCHED}), values], axis=1)


def matched_terms(raw: pd.DataFrame, reading: str) -> pd.DataFrame:
    """A raw TE/DE table of one reading of answers of several tokens (TE by term; DE the score of
    the tokens its positions predict, helixclock.patching.paths.direct_effects) with TE cut to
    the terms DE scores (:func:`matched_rows`), then the DE rows as they are, term ``matched``
    in both: TE and DE of the same tokens."""
    te = matched_rows(raw[raw["effect"] == "te"], reading)
    de = raw[raw["effect"] == "de"].reset_index(drop=True).assign(**{TERM: MATCHED})
    return pd.concat([te, de[te.columns]], ignore_index=True)


def strata_masks(raw: pd.DataFrame) -> list[tuple[int, int, np.ndarray]]:
    """The strata of a raw table's pairs, (answer tokens, p*, boolean mask over its pair columns),
    from its rows of the first differing token (each row once per stratum, NaN outside it)."""
    if not (raw["reading"] == FIRST_DIFFERENCE).any():
        return []
    rows = raw[raw["reading"] == FIRST_DIFFERENCE]
    out = []
    for (k, j), part in rows.groupby(list(STRATA), sort=True):
        out.append((int(k), int(j), ~np.isnan(pair_values(part)).all(0)))
    return out


def stratified(raw: pd.DataFrame, masks: list[tuple[int, int, np.ndarray]]) -> pd.DataFrame:
    """Each row of a raw table once per stratum of ``masks`` (:func:`strata_masks`; columns
    ``answer_tokens`` and ``p_star``), its pairs outside the stratum NaN."""
    cols = pair_columns(raw)
    labels, values = labels_of(raw).reset_index(drop=True), pair_values(raw)
    parts = []
    for k, j, mask in masks:
        part = labels.assign(**{STRATA[0]: k, STRATA[1]: j})
        kept = pd.DataFrame(np.where(mask[None], values, np.nan).astype(np.float32), columns=cols)
        parts.append(pd.concat([part, kept], axis=1))
    return pd.concat(parts, ignore_index=True) if parts else raw.iloc[:0].assign(**dict.fromkeys(STRATA, 0))


def _te_and_de(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """TE and DE side by side, merged on their labels (rows in TE's order), with DE/TE."""
    summary = summarise(raw, resampling)
    keys = [c for c in summary.columns if c not in ("effect", "ld_mean", "ld_low", "ld_high", "n_pairs")]
    parts = {}
    for e in ("te", "de"):
        part = summary[summary["effect"] == e].drop(columns="effect")
        parts[e] = part.rename(columns={"ld_mean": e, "ld_low": f"{e}_low", "ld_high": f"{e}_high"})
    out = parts["te"].merge(parts["de"].drop(columns="n_pairs"), on=keys, how="left", sort=False)
    out["de_over_te"] = out["de"].astype(np.float64) / out["te"].astype(np.float64)
    return out[keys + ["te", "te_low", "te_high", "n_pairs", "de", "de_low", "de_high", "de_over_te"]]


def with_matched(table: pd.DataFrame, raw: pd.DataFrame, reading: str | None, resampling: Resampling) -> pd.DataFrame:
    """A TE/DE table (:func:`te_de_table`) of a reading of answers of several tokens with the TE
    of the terms DE scores beside it (:func:`matched_terms`): ``te_matched`` with its interval and
    ``de_over_te_matched`` (a ratio of means).  A table of one-token answers, or of a reading
    other than the last token's and the answer positions', as it is."""
    if TERM not in raw or reading not in (LAST, ANSWER):
        return table
    matched = _te_and_de(matched_terms(raw, reading).drop(columns=TERM), resampling)
    keys = [c for c in table.columns if c in matched.columns and c not in ("te", "te_low", "te_high", "n_pairs")]
    keys = [c for c in keys if not c.startswith("de")]
    names = {"te": "te_matched", "te_low": "te_matched_low", "te_high": "te_matched_high"}
    out = table.merge(matched[keys + list(names)].rename(columns=names), on=keys, how="left", sort=False)
    out["de_over_te_matched"] = out["de"].astype(np.float64) / out["te_matched"].astype(np.float64)
    return out


def by_stratum(raw: pd.DataFrame, reading: str, masks: list[tuple[int, int, np.ndarray]]) -> pd.DataFrame:
    """A raw table's rows of one reading by stratum, without ``term``: at the first differing
    token its LD rows as they are (one token read, each row once per stratum already); at the last
    token and the answer positions the terms DE scores (:func:`matched_rows`, TE and DE alike:
    :func:`matched_terms` where the table has an ``effect`` column), cut to each stratum of
    ``masks``."""
    part = reading_rows(raw, reading)
    if reading == FIRST_DIFFERENCE:
        return primary(part)
    matched = matched_terms(part, reading) if "effect" in part else matched_rows(part, reading)
    return stratified(matched.drop(columns=TERM), masks)


def strata_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """TE, DE and DE/TE of every component of a raw TE/DE table by stratum (answer tokens, p*):
    at the last token and at the answer positions of the terms DE scores (:func:`matched_terms`),
    at the first differing token as it is (one token read).  The strata are those of the first
    differing token's rows, and every reading is cut to them (the same pairs in each);
    a reading is never averaged over strata.  A table of the paper's answers (one token, scored by
    the logit difference, no reading at the first differing token) is one stratum (one answer
    token, p* the last token) at the last token, its TE and DE the paper's."""
    masks = strata_masks(raw)
    if not masks and TERM not in raw:  # the paper's answers: their TE and DE, one stratum
        out = _te_and_de(primary(reading_rows(raw, LAST)), resampling)
        return out.assign(reading=LAST, answer_tokens=1, p_star=0)[["reading", *STRATA, *out.columns]]
    if not masks:  # no reading at the first differing token: no strata to cut to
        return pd.DataFrame(columns=["reading", *STRATA, "te", "de", "de_over_te"])
    parts = []
    for reading in dict.fromkeys(raw["reading"]):
        out = _te_and_de(by_stratum(raw, reading, masks), resampling)
        parts.append(out.assign(reading=reading)[["reading", *out.columns]])
    out = pd.concat(parts, ignore_index=True)
    for c in STRATA:
        out[c] = out[c].astype(int)
    first = ["reading", *STRATA]
    return out[first + [c for c in out.columns if c not in first]]


def strata_summary(raw: pd.DataFrame, masks: list[tuple[int, int, np.ndarray]], resampling: Resampling) -> pd.DataFrame:
    """Means with intervals of a raw table's rows by reading and stratum (:func:`by_stratum`;
    ``masks`` from the TE/DE table of the same job, :func:`strata_masks`), columns ``reading``,
    ``answer_tokens``, ``p_star`` first; a table of one-token answers as one stratum at the last
    token."""
    if not masks and TERM not in raw:  # the paper's answers: one stratum at the last token
        out = summarise(primary(reading_rows(raw, LAST)), resampling)
        return out.assign(reading=LAST, answer_tokens=1, p_star=0)[["reading", *STRATA, *out.columns]]
    parts = []
    for reading in dict.fromkeys(raw["reading"]):
        if not masks:
            continue
        out = summarise(by_stratum(raw, reading, masks), resampling)
        parts.append(out.assign(reading=reading)[["reading", *out.columns]])
    if not parts:
        return pd.DataFrame(columns=["reading", *STRATA, "ld_mean"])
    out = pd.concat(parts, ignore_index=True)
    for c in STRATA:
        out[c] = out[c].astype(int)
    return out[["reading", *STRATA, *[c for c in out.columns if c not in ("reading", *STRATA)]]]

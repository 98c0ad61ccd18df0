"""Head categories and the heads stage's tables (pandas only).

Heads are sorted into *a,b heads* (move the a and b helices to the last token: mostly
indirect effect, well modelled by helix(a, b)) and *a+b heads* (write helix(a+b) to the
logits: mostly direct effect), with the paper's confidences

    c_ab  = (1 - DE/TE) * helix(a,b) / helix(a,b,a+b)
    c_a+b = (DE/TE)     * helix(a+b) / helix(a,b,a+b)

where helix(.) is the LD recovered when the head's output is replaced by that fit.  The m
least confident heads may be *mixed*.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...prompts.layout import READINGS
from ...stats.lengths import by_length, pair_lengths
from ...stats.statistics import (
    Resampling,
    fraction_table,
    pair_values,
    primary,
    smallest_k,
    summarise,
    te_de_table,
    topk_table,
)
from ...stats.strata import reading_rows, strata_masks, strata_summary, strata_table, with_matched

FIT_KEYS = {"helix(a,b,a+b)": "fit_all", "helix(a+b)": "fit_sum", "helix(a,b)": "fit_ab"}


def categorise(heads: pd.DataFrame) -> pd.DataFrame:
    """Add c_ab, c_a+b, c = max of both, and the category a,b or a+b; sort by c (descending).

    ``heads`` has columns te, de and the fit LDs fit_ab = helix(a,b), fit_sum = helix(a+b),
    fit_all = helix(a,b,a+b).  The paper's formulas, unclipped: clipping DE/TE and the fit ratios
    to [0, 1] would make the category differ from the sign of g = DE helix(a+b) - (TE - DE)
    helix(a,b), which the findings test (README, "Findings"; e.g. DE/TE 0.45, helix(a,b)/helix
    1.0, helix(a+b)/helix 1.6 is a+b unclipped and a,b clipped).
    """
    df = heads.copy()
    ratio = df["de"] / df["te"]
    df["c_ab"] = (1 - ratio) * df["fit_ab"] / df["fit_all"]
    df["c_a+b"] = ratio * df["fit_sum"] / df["fit_all"]
    df["c"] = df[["c_ab", "c_a+b"]].max(axis=1)
    df["category"] = np.where(df["c_ab"] >= df["c_a+b"], "a,b", "a+b")
    return df.sort_values("c", ascending=False, kind="stable").reset_index(drop=True)


def with_mixed(categorised: pd.DataFrame, m: int) -> pd.Series:
    """Categories when the m least confident heads (lowest c) are mixed."""
    cats = categorised["category"].copy()
    if m > 0:
        cats.iloc[len(cats) - m :] = "mixed"
    return cats


def mean_effects(raw_effects: pd.DataFrame, raw_fits: pd.DataFrame) -> pd.DataFrame:
    """Per head: name, layer, head, mean TE, DE and fit LDs (no intervals; what the model job
    ranks and categorises by)."""
    means = raw_effects.assign(mean=pair_values(raw_effects).mean(1))
    df = means.pivot_table(index=["layer", "head"], columns="effect", values="mean").reset_index()
    fits = raw_fits.assign(mean=pair_values(raw_fits).mean(1))
    fits = fits.pivot_table(index=["layer", "head"], columns="fit", values="mean").rename(columns=FIT_KEYS)
    df = df.merge(fits.reset_index(), on=["layer", "head"], how="left")
    df.insert(0, "name", [f"L{int(l)}H{int(h)}" for l, h in zip(df["layer"], df["head"])])
    return df


def effects_table(
    raw_effects: pd.DataFrame,
    raw_fits: pd.DataFrame,
    resampling: Resampling,
    screen: pd.DataFrame | None = None,
    reading: str | None = None,
) -> pd.DataFrame:
    """figD2/D4: TE and DE with intervals, and helix(a,b,a+b)'s LD, for every head patched (of LD
    itself where the raw tables have its terms); with the raw ``screen`` also each head's mean
    attribution score (``attribution``: the first-order estimate of its TE).  Answers of several
    tokens at ``reading`` (the last token or the answer positions): also the TE of the terms DE
    scores (``te_matched`` with its interval, ``de_over_te_matched``:
    :func:`helixclock.stats.statistics.with_matched`)."""
    out = with_matched(te_de_table(raw_effects, resampling), raw_effects, reading, resampling)
    out["name"] = [f"L{int(l)}H{int(h)}" for l, h in zip(out["layer"], out["head"])]
    raw_fits = primary(raw_fits)
    fits = summarise(raw_fits[raw_fits["fit"] == "helix(a,b,a+b)"], resampling)
    out = out.merge(fits[["layer", "head", "ld_mean"]].rename(columns={"ld_mean": "fit_all"}), on=["layer", "head"])
    out["fit_fraction"] = out["fit_all"] / out["te"]
    if screen is not None:
        scores = screen[["layer", "head"]].assign(attribution=pair_values(screen).mean(1))
        out = out.merge(scores, on=["layer", "head"], how="left")
    return out


def attention_at(attention: pd.DataFrame, reading: str | None) -> pd.DataFrame:
    """Fig. D6's attention of every head at a reading: the last prompt token's (``position`` 0,
    reading "last token"), or the mean over the answer positions weighted by their rows (each
    tens key by the rows where it exists)."""
    if reading == READINGS["last"]:
        return attention[attention["position"] == 0].drop(columns="position").reset_index(drop=True)
    cols = [c for c in attention.columns if c.startswith("attn_")]
    weight = {c: attention[f"n_rows_tens_{c[5]}"] if c.endswith("_tens") else attention["n_rows"] for c in cols}
    sums = attention[["layer", "head"]].assign(**{c: attention[c].fillna(0) * weight[c] for c in cols})
    sums = sums.assign(**{f"w_{c}": weight[c] for c in cols}).groupby(["layer", "head"], as_index=False).sum()
    out = sums[["layer", "head"]].copy()
    for c in cols:
        out[c] = sums[c] / sums[f"w_{c}"].where(sums[f"w_{c}"] > 0)
    return out


def head_summary(
    raw: Mapping[str, pd.DataFrame],
    categories: pd.DataFrame,
    attention: pd.DataFrame,
    resampling: Resampling,
    threshold: float,
) -> dict[str, pd.DataFrame]:
    """Every table of the heads stage from the model job's raw tables (``raw``: effects, fits,
    topk, mixed, paths and, where the job wrote them, screen and pairs).  Each table has a part per
    reading of the raw tables (column ``reading``; the paper's models: the last token), in their
    order, but the first differing token's, whose effects and fits are read by stratum: ``strata``
    (:func:`strata_effects`).  ``by_length``: the heads' TE and DE by answer token count
    (:func:`helixclock.stats.lengths.by_length`)."""
    effects = raw["effects"]
    readings = [r for r in dict.fromkeys(effects["reading"]) if r != READINGS["differ"]]
    out: dict[str, list[pd.DataFrame]] = {}
    for reading in readings:

        def part(table: pd.DataFrame | None, reading=reading) -> pd.DataFrame | None:
            return None if table is None else reading_rows(table, reading)

        cats = part(categories)
        topk = topk_table(primary(part(raw["topk"])), threshold, resampling)
        paths = part(raw["paths"])
        paths = summarise(paths, resampling) if len(paths) else paths.assign(ld_mean=[])
        mixed = fraction_table(primary(part(raw["mixed"])), "m", resampling)
        mixed["threshold"] = threshold
        mixed["smallest_m"] = smallest_k(mixed, threshold, x="m")
        mixed["m_used"] = int(cats["m"].iloc[0]) if len(cats) else 0
        lengths = pair_lengths(part(raw["effects"]), raw.get("pairs"))
        tables = {
            "effects": effects_table(
                part(raw["effects"]), part(raw["fits"]), resampling, part(raw.get("screen")), reading
            ),
            "by_length": by_length(part(raw["effects"]), lengths, lambda t: te_de_table(t, resampling)),
            "topk": topk,
            "categories": cats,
            "mixed": mixed,
            "properties": cats.merge(attention_at(attention, reading), on=["layer", "head"]),
            "paths": paths,
        }
        for name, table in tables.items():
            out.setdefault(name, []).append(table.assign(reading=reading)[["reading", *table.columns]])
    tables = {name: pd.concat(parts, ignore_index=True) for name, parts in out.items()}
    tables["strata"] = strata_effects(raw["effects"], raw["fits"], resampling)
    return tables


def strata_effects(raw_effects: pd.DataFrame, raw_fits: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Every measured head's TE, DE and DE/TE by stratum (answer tokens, p*) at each reading:
    at the last token and the answer positions of the terms DE scores, at the first differing
    token of the one token p* predicts (:func:`helixclock.stats.statistics.strata_table`), with its
    helix(a,b,a+b) fit's LD of the same terms (``fit_all``) and ``fit_fraction`` = fit_all / TE.
    One-token answers: one stratum, the paper's TE and DE."""
    table = strata_table(raw_effects, resampling)
    fits = raw_fits[raw_fits["fit"] == "helix(a,b,a+b)"].drop(columns="fit")
    fits = strata_summary(fits, strata_masks(raw_effects), resampling)
    keys = ["reading", "answer_tokens", "p_star", "layer", "head"]
    if not len(table):
        return table
    table = table.merge(fits[keys + ["ld_mean"]].rename(columns={"ld_mean": "fit_all"}), on=keys, how="left")
    table["fit_fraction"] = table["fit_all"].astype(float) / table["te"].astype(float)
    table.insert(3, "name", [f"L{int(la)}H{int(h)}" for la, h in zip(table["layer"], table["head"])])
    return table


def category_table(cats: pd.DataFrame) -> pd.DataFrame:
    """tabD1: the top heads with TE, DE, c_ab, c_a+b and category."""
    cols = [
        "name",
        "layer",
        "head",
        "te",
        "de",
        "fit_all",
        "fit_ab",
        "fit_sum",
        "c_ab",
        "c_a+b",
        "category",
        "category_without_mixed",
    ]
    cols = ["reading", *cols]  # one part per reading (the paper's models: the last token)
    return cats[cols].rename(columns={v: k for k, v in FIT_KEYS.items()})

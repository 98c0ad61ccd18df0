"""Per-pair effects, their means and bootstrap intervals.

Model jobs save *raw* tables: one row per variant (label columns) and one column per pair
(``pair_0`` ... ``pair_{n-1}``) holding the metric of that pair under that variant.  Table jobs
summarise them: the mean over pairs with a percentile-bootstrap 95% interval.  Resampling
settings therefore never rerun a job that loads a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .io import to_numpy

PAIR = "pair_"
MIN_INTERVAL_PAIRS = 2  # bootstrap intervals need at least two pairs
# The fewest numeric wrong answers for which App. F's Figs. F1 and F2 make a statement: the
# chi-squared test of a 2x2 table wants expected counts of about 5 in each cell, i.e. 20 answers
# at least (the mistakes stage runs the test; the report says why a model's test did not run)
MIN_ERRORS = 20


@dataclass(frozen=True)
class Resampling:
    """How means over pairs get their intervals: ``bootstrap`` resamples, seeded."""

    bootstrap: int = 1000
    seed: int = 0
    level: float = 0.95


def raw_table(values, labels: list[dict], **extra) -> pd.DataFrame:
    """Per-pair values [n_variants, n_pairs] beside one label dict per variant."""
    values = np.asarray(to_numpy(values) if hasattr(values, "detach") else values, dtype=np.float32)
    df = pd.DataFrame(labels)
    for k, v in extra.items():
        df[k] = v
    pairs = pd.DataFrame(values, columns=[f"{PAIR}{i}" for i in range(values.shape[1])])
    return pd.concat([df.reset_index(drop=True), pairs], axis=1)


def pair_columns(raw: pd.DataFrame) -> list[str]:
    return [c for c in raw.columns if c.startswith(PAIR)]


def pair_values(raw: pd.DataFrame) -> np.ndarray:
    """[n_variants, n_pairs] float32."""
    return raw[pair_columns(raw)].to_numpy(dtype=np.float32)


def labels_of(raw: pd.DataFrame) -> pd.DataFrame:
    return raw.drop(columns=pair_columns(raw))


def bootstrap_ci(values, n_boot: int = 1000, seed: int = 0, level: float = 0.95):
    """Mean over the last axis with a percentile bootstrap interval: (mean, low, high), as
    tensors.  The resampled indices depend only on (n_boot, n_pairs, seed), so every row is
    resampled alike.  Fewer than 2 pairs give no interval (low, high NaN): resampling one
    pair returns it every time, an interval of zero width that says nothing.

    Kept rather than ``scipy.stats.bootstrap(method="percentile", vectorized=True)``, which
    gives the same kind of interval: on a Fig. 4 table of GPT-J's size (1,092 rows of 100
    pairs, 1,000 resamples) this is 7.9x faster (0.27 s against 2.1 s; benchmarks/bootstrap.py),
    its bounds within 0.4 standard errors of scipy's (resampling noise: scipy draws per row)."""
    # deferred: torch stays out of the table jobs, which import this module
    import torch

    values = torch.as_tensor(values).float()
    n = values.shape[-1]
    if n < MIN_INTERVAL_PAIRS:
        nan = torch.full(values.shape[:-1], float("nan"), device=values.device)
        return values.mean(-1), nan, nan.clone()
    g = torch.Generator(device="cpu").manual_seed(seed)
    idx = torch.randint(0, n, (n_boot, n), generator=g).to(values.device)
    boots = values[..., idx].mean(-1)  # [..., n_boot]
    alpha = (1 - level) / 2
    lo = torch.quantile(boots, alpha, dim=-1)
    hi = torch.quantile(boots, 1 - alpha, dim=-1)
    return values.mean(-1), lo, hi


def summarise(raw: pd.DataFrame, resampling: Resampling = Resampling(), prefix: str = "ld") -> pd.DataFrame:
    """Labels with ``{prefix}_mean``, ``{prefix}_low``, ``{prefix}_high`` and ``n_pairs``.

    Rows may come from runs with different numbers of pairs (missing pairs are empty), or have
    no value for some pairs (a term of an answer's hundreds digit where the answer has two
    digits): each row is summarised over its own pairs, and ``n_pairs`` says how many; a row of
    one pair has no interval (NaN low and high)."""
    values = _present_first(pair_values(raw))
    df = labels_of(raw).reset_index(drop=True)
    out = {f"{prefix}_{col}": np.full(len(df), np.nan, dtype=np.float32) for col in ("mean", "low", "high")}
    counts = (~np.isnan(values)).sum(1)
    for n in np.unique(counts):
        rows = counts == n
        if n == 0:
            continue
        stats = bootstrap_ci(values[rows, :n], resampling.bootstrap, resampling.seed, resampling.level)
        for col, x in zip(("mean", "low", "high"), stats):
            out[f"{prefix}_{col}"][rows] = to_numpy(x)
    for col, x in out.items():
        df[col] = x
    df["n_pairs"] = counts
    return df


def _present_first(values: np.ndarray) -> np.ndarray:
    """Each row's values with its missing (NaN) ones moved to the end, order kept (a row whose
    missing values are already last is unchanged)."""
    order = np.argsort(np.isnan(values), axis=1, kind="stable")
    return np.take_along_axis(values, order, axis=1)


TERM = "term"  # the label of an LD table's rows by term (answers of several tokens)


def primary(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the paper's quantity: a table whose rows come by term (answers of several
    tokens: ``ld``, the log-likelihood ratio, beside its raw-logit form and its terms by place
    value, :data:`helixclock.patching.metrics.TERMS`) cut to the ``ld`` rows, without the
    column; any other table as it is."""
    if TERM not in table:
        return table
    out = table[table[TERM] == "ld"].drop(columns=TERM).reset_index(drop=True)
    out.attrs["ld"] = "log-likelihood ratio"  # what LD is here (figures name it on their axes)
    return out


# the readings of answers of several tokens (helixclock.layout.READINGS: kept here too, so that the
# table jobs import no more than this module) and the strata of the first differing token's
LAST, ANSWER, FIRST_DIFFERENCE = "last token", "answer positions", "first differing token"
STRATA = ("answer_tokens", "p_star")
FIRST_TOKEN = ("hundreds", "tens", "units")  # the place of an answer's first token, by its length 3, 2, 1
MATCHED = "matched"  # the term of TE rows cut to the tokens DE scores (matched_terms)


def reading_rows(table: pd.DataFrame, reading: str | None) -> pd.DataFrame:
    """The rows of one reading of a table with a ``reading`` column, without it and without the
    strata columns where the reading has none (the first differing token's rows bring them into
    a table; the other readings' rows leave them empty); a table without readings as it is."""
    if reading is None or "reading" not in table:
        return table
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
    if "reading" not in raw or not (raw["reading"] == FIRST_DIFFERENCE).any():
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
    a reading is never averaged over strata.  A table of one-token answers is one stratum (one
    answer token, p* the last token) at the last token, its TE and DE the paper's."""
    if "reading" not in raw:  # one-token answers: the paper's TE and DE, one stratum
        out = _te_and_de(primary(raw), resampling)
        return out.assign(reading=LAST, answer_tokens=1, p_star=0)[["reading", *STRATA, *out.columns]]
    masks = strata_masks(raw)
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
    if "reading" not in raw:
        out = summarise(primary(raw), resampling)
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


def smallest_k(curve: pd.DataFrame, threshold: float, x: str = "k", by: str = "fraction", default=None):
    """The smallest ``x`` whose ``by`` column reaches ``threshold``; when none does, ``default``
    (the top-k tables: None, the largest ``x``, i.e. every component; the paper comparison:
    NaN, "not reached")."""
    hit = curve.loc[curve[by] >= threshold, x]
    if len(hit):
        return int(hit.min())
    return int(curve[x].max()) if default is None else default


def topk_table(raw: pd.DataFrame, threshold: float, resampling: Resampling = Resampling()) -> pd.DataFrame:
    """A top-k curve (Figs. D3, D8) with both normalisations and the smallest k reaching
    ``threshold`` under each: ``smallest_k`` by the authors' (the largest effect over k) and
    ``smallest_k_all`` by patching every component."""
    topk = fraction_table(raw, "k", resampling)
    topk["threshold"] = threshold
    topk["smallest_k"] = smallest_k(topk, threshold, by="fraction_of_max")
    topk["smallest_k_all"] = smallest_k(topk, threshold)
    return topk


def fraction_table(raw: pd.DataFrame, key: str, resampling: Resampling = Resampling()) -> pd.DataFrame:
    """A sweep (k components, or m mixed heads) as a fraction of its reference row (``key`` = -1,
    all components patched with their clean values): means, intervals, ``all_effect``,
    ``fraction`` = mean LD / mean LD of the reference, and ``fraction_of_max`` = mean LD / its
    largest value over the sweep (the authors' normalisation of the top-k curves)."""
    summary = summarise(raw, resampling)
    ref = summary[summary[key] == -1]
    df = summary[summary[key] != -1].reset_index(drop=True)
    full = float(ref["ld_mean"].iloc[0])
    peak = float(df["ld_mean"].max())
    df["all_effect"] = full
    df["fraction"] = df["ld_mean"] / full if full != 0 else np.nan
    df["max_effect"] = peak
    df["fraction_of_max"] = df["ld_mean"] / peak if peak != 0 else np.nan
    return df


def te_de_table(raw: pd.DataFrame, resampling: Resampling = Resampling()) -> pd.DataFrame:
    """TE and DE side by side (te, te_low, te_high, de, de_low, de_high) from a raw table with an
    ``effect`` column (te or de), one row per component (of LD itself where the raw table has
    its terms, :func:`primary`)."""
    summary = summarise(primary(raw), resampling)
    keys = [c for c in summary.columns if c not in ("effect", "ld_mean", "ld_low", "ld_high", "n_pairs")]
    te = summary[summary["effect"] == "te"].reset_index(drop=True)
    de = summary[summary["effect"] == "de"].reset_index(drop=True)
    out = te[keys + ["n_pairs"]].copy()
    for name, part in (("te", te), ("de", de)):
        out[name], out[f"{name}_low"], out[f"{name}_high"] = part["ld_mean"], part["ld_low"], part["ld_high"]
    out = out[keys + ["te", "te_low", "te_high", "n_pairs", "de", "de_low", "de_high"]]
    if TERM in raw:  # say which term it is, so that a figure reading it names LD as the table does
        out.insert(0, TERM, "ld")
    return out


def cumulative_shares(values) -> tuple[np.ndarray, np.ndarray]:
    """Values sorted largest first (ties in input order) and the running sum of the sorted values
    as a share of their *signed* total: (order [n], shares [n]; NaN shares if the total is not
    positive).  With negative values the running share overshoots 1 and comes back to 1 at the
    end."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(-v, kind="stable")
    total = v.sum()
    shares = np.cumsum(v[order]) / total if total > 0 else np.full(len(v), np.nan)
    return order, shares


def share_set(values, share: float) -> np.ndarray:
    """The neurons "for ``share`` of the total" (the paper's "the k = 693 highest DE neurons
    required to achieve 80% of the total direct effect", App. D.2 and F): the smallest set of
    the largest values whose sum reaches ``share`` of the signed total of all values, as a
    boolean mask; all of them where the total is not positive or is never reached.  The one
    definition behind figD11's counts, figF4's neuron set and paper_comparison."""
    v = np.asarray(values, dtype=np.float64)
    order, shares = cumulative_shares(v)
    hit = np.flatnonzero(shares >= share - 1e-12)
    k = int(hit[0]) + 1 if len(hit) else len(v)
    mask = np.zeros(len(v), bool)
    mask[order[:k]] = True
    return mask


def positions_of(values, wanted) -> list[int]:
    """The first position in ``values`` of each item of ``wanted`` that occurs there, in the
    order of ``wanted`` (e.g. the rows of the neuron stage's files holding Fig. 8's ranks)."""
    values = np.asarray(values)
    return [int(np.flatnonzero(values == w)[0]) for w in wanted if (values == w).any()]

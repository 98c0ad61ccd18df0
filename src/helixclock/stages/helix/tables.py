"""The helix stage's tables (pandas and scipy): summaries with intervals, the best period subsets
of Fig. 4, and Table 1."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ...fitting.planes import additive, circle, nonadditive, principal_cosines, tens_permuted_circle
from ...prompts.layout import STRATA
from ...prompts.tasks import TASKS
from ...stats.inference import resample, standard_error, t_interval
from ...stats.lengths import STANDARD, by_length, mix, pair_lengths, standardised
from ...stats.statistics import Resampling, labels_of, primary, summarise

FIT_NAMES = {"layer": "Full", "pca": "PCA", "helix": "Helix", "circle": "Circle", "poly": "Poly"}
# numbers of several tokens: the references beside them, the layer patch of all of a's tokens and the
# clean LD, the clean run's own (a reference, not a bound: helixclock.causal.experiments.clean_table)
REFERENCE_NAMES = {"layer_span": "Full (a span)", "clean": "Clean"}


def best_subsets(mean_ld: Mapping[tuple[str, tuple[int, ...]], float]) -> dict[tuple[str, int], tuple[int, ...]]:
    """For each (kind, k), the period subset with the largest mean LD over layers.

    ``mean_ld`` maps (kind, periods) to the mean over layers of the mean LD.  Every
    candidate is compared (the authors' code never updated its running best).
    """
    best: dict[tuple[str, int], tuple[tuple[int, ...], float]] = {}
    for (kind, periods), value in mean_ld.items():
        key = (kind, len(periods))
        if key not in best or value > best[key][1]:
            best[key] = (periods, value)
    return {key: periods for key, (periods, _) in best.items()}


def authors_subsets(periods: Sequence[int], k: int) -> tuple[int, ...]:
    """The subset the authors' ``get_best`` returned for k: its running best was never
    updated, so it is the last combination of k periods in order ([100], [10, 100],
    [5, 10, 100], [2, 5, 10, 100] for the paper's periods)."""
    return list(itertools.combinations(periods, k))[-1]


def best_subset_table(sweep: pd.DataFrame, compat: str = "corrected") -> pd.DataFrame:
    """For helix and circle and each k: the subset of periods with the largest mean LD over
    layers (every subset compared), the authors' choice, and in ``periods`` the one Fig. 4
    draws (the best, or the authors' with ``compat="authors"``)."""
    fits = sweep[sweep["method"].isin(["helix", "circle"])]
    means = fits.groupby(["method", "periods"])["ld_mean"].mean()
    table = {(m, tuple(int(t) for t in p.split(","))): v for (m, p), v in means.items()}
    periods = sorted({t for _, per in table for t in per})
    rows = []
    for (m, k), per in sorted(best_subsets(table).items()):
        theirs = authors_subsets(periods, k)
        used = theirs if compat == "authors" else per
        rows.append(
            {
                "method": m,
                "k": k,
                "periods": ",".join(map(str, used)),
                "mean_ld_over_layers": table[(m, used)],
                "best_periods": ",".join(map(str, per)),
                "best_mean_ld": table[(m, per)],
                "authors_periods": ",".join(map(str, theirs)),
                "authors_mean_ld": table[(m, theirs)],
                "compat": compat,
            }
        )
    return pd.DataFrame(rows)


def helix_summary(
    raw: Mapping[str, pd.DataFrame], resampling: Resampling, compat: str = "corrected"
) -> dict[str, pd.DataFrame]:
    """sweep, best, controls, ablation, nested (the causal nested T = 100 test, :func:`nested_summary`),
    strata (which digits of a change) and by_length (answer token count,
    :func:`helixclock.stats.lengths.by_length`) of the helix stage, from its raw tables."""
    out = {name: summarise(raw[name], resampling) for name in ("sweep", "controls", "ablation")}
    out["best"] = best_subset_table(primary(out["sweep"]), compat)
    out["strata"] = strata_table(raw["sweep"], raw["pairs"], resampling)
    lengths = pair_lengths(raw["sweep"], raw["pairs"])
    out["by_length"] = by_length(raw["sweep"], lengths, lambda t: summarise(t, resampling))
    out["nested"] = nested_summary(raw["nested"], resampling)
    return out


def strata_table(sweep: pd.DataFrame, pairs: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """Fig. 4's sweep summarised within each stratum of its pairs (which digits of a the
    corruption changes: ``pairs.stratum``), with intervals and ``n_pairs``: rows of the sweep
    per stratum, column ``stratum`` first (docs/several-tokens.md, "Numbers of several tokens")."""
    labels = labels_of(sweep)
    if "draw" in pairs:  # the measuring pairs (the raw tables' columns), not the selection draw's
        pairs = pairs[pairs["draw"] == "measure"]  # helixclock.causal.pairs.MEASURE
    out = []
    for stratum, group in pairs.groupby("stratum", sort=True):
        part = pd.concat([labels, sweep[list(group["pair"])]], axis=1)
        table = summarise(part, resampling)
        table.insert(0, "stratum", stratum)
        out.append(table)
    return pd.concat(out, ignore_index=True)


def other_tasks_fit_table(curves: pd.DataFrame) -> pd.DataFrame:
    """tab01: max over layers of mean LD, per task (the paper's order and names) and method."""
    best = curves.groupby(["task", "method"])["ld_mean"].max().unstack("method")
    names = {**FIT_NAMES, **{k: v for k, v in REFERENCE_NAMES.items() if k in best.columns}}
    best = best.rename(columns=names)[list(names.values())]
    best = best.loc[[t for t in TASKS if t in best.index]]
    best.index = [TASKS[t].label for t in best.index]
    return best.reset_index(names="task")


def tab_other_tasks(raw: pd.DataFrame, resampling: Resampling) -> dict[str, pd.DataFrame]:
    """Rule tab_other_tasks: Fig. C7's curves (means with bootstrap intervals per task, fit and
    layer) and Table 1 (their maximum over layers, :func:`other_tasks_fit_table`); answers of
    several tokens add to Table 1 each task's mix of answer lengths and its length-standardised
    maxima (:func:`standardised_fit_table`), what a comparison across models reads."""
    curves = summarise(raw, resampling)
    table = other_tasks_fit_table(primary(curves))
    if "term" in raw:
        table = table.merge(standardised_fit_table(raw), on="task", how="left")
    return {"curves": curves, "table": table}


STANDARDISED = " (length-standardised)"  # Table 1's columns of length-standardised maxima


def standardised_fit_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per task of a raw table of answers of several tokens (Table 1's, column task): the mix of
    its pairs' answer lengths (``answer lengths``) and Table 1's maxima over layers of the
    length-standardised mean LD (:func:`helixclock.stats.lengths.standardised`: each length's mean,
    weighted by the standard mix), in columns "<fit> (length-standardised)"."""
    rows = []
    for _, part in raw.groupby("task", sort=False):
        cols = [c for c in part.columns if c.startswith("pair_") and part[c].notna().any()]  # the task's pairs
        part = pd.concat([labels_of(part), part[cols]], axis=1)
        lengths = pair_lengths(part, None)
        ld = primary(part)
        values = ld[cols].to_numpy(dtype=np.float64)
        means = {int(n): values[:, lengths == n].mean(axis=1) for n in np.unique(lengths) if int(n) in STANDARD}
        best = other_tasks_fit_table(labels_of(ld).assign(ld_mean=standardised(means))).set_index("task")
        best.columns = [f"{c}{STANDARDISED}" for c in best.columns]
        rows.append(best.reset_index().assign(**{"answer lengths": mix(lengths)}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["task"])


# the causal nested T = 100 test (helixclock.stages.helix.nested): the three fits' names, and the
# numbers whose planes the table's principal angles are read over, per token (the paper's operands)
NESTED_BASES = ("digits", "digits + T=100", "digits + placebo")
NESTED_NUMBERS = {"a": np.arange(100), "last": np.arange(199), "p*": np.arange(199)}


def _nested_angles(token: str, by: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, str]:
    """The principal cosines of the T = 100 plane to the digits' span and of its non-additive part
    to the placebo's, over the token's numbers, and the placebo's permutation (spaced digits)."""
    sigma = str(by["sigma"].iloc[0])  # the permutation's images of the tens digits 0..9, spaced
    numbers = NESTED_NUMBERS[token]
    T100, placebo = circle(numbers), tens_permuted_circle(numbers, [int(s) for s in sigma.split()])
    base = additive(numbers)[:, 1:]
    digits = principal_cosines(T100 - T100.mean(0), base - base.mean(0))
    return digits, principal_cosines(nonadditive(T100, numbers), nonadditive(placebo, numbers)), sigma


def nested_summary(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """The causal nested T = 100 test by token and layer (:mod:`.nested`, docs/findings.md, "The
    causal nested T = 100 test"), at the first differing token (token ``p*``) by stratum too
    (columns ``answer_tokens``, ``p_star``; empty on the other tokens' rows), from its raw table:
    the mean LD of each fit (``ld_digits``, ``ld_t100``, ``ld_placebo``, with their 95%
    intervals), the paired increments ``increment`` = LD(digits + T=100) - LD(digits) and
    ``placebo_gap`` = LD(digits + T=100) - LD(digits + placebo) with their t intervals on the pair
    bootstrap's standard error (C - 1 df, :mod:`helixclock.stats.inference`; every quantity
    resampled with the same weights), each one's one-sided p that it is above 0 (``p_digits``,
    ``p_placebo``), and ``p`` = the larger of the two: the intersection-union test of "above
    both", which the findings job adjusts over the layers (Holm). ``rank_*``: each fit's rank;
    ``unspanned_pairs``: the most pairs, over the three designs, whose clean value the design
    cannot reach from the other values (its held-out fit extrapolates there:
    :func:`helixclock.stages.helix.nested.unspanned`); ``angle_digits_1/2``: the principal angles
    (degrees) between the T = 100 plane and the digits' span over the token's numbers (0..99 for
    a, 0..198 for a+b, at the last token and at p* alike); ``angle_placebo_1/2``: between the
    non-additive parts of the T = 100 and placebo planes (:mod:`helixclock.fitting.planes`);
    ``ld``: what LD is (the log-likelihood ratio of answers of several tokens, else the paper's
    logit difference)."""
    ld = primary(raw)
    pairs = [c for c in ld.columns if c.startswith("pair_")]
    rows, angles = [], {}  # the principal angles, once a token
    strata = [c for c in STRATA if c in ld]  # the reading at p*: a summary per stratum, never pooled
    for key, part in ld.groupby(["token", "variable", "layer", *strata], sort=False, dropna=False):
        token, variable, layer = key[:3]
        by = part.set_index("basis")
        x = {name: by.loc[name, pairs].to_numpy(np.float64) for name in NESTED_BASES}
        values = np.stack(
            [*x.values(), x[NESTED_BASES[1]] - x[NESTED_BASES[0]], x[NESTED_BASES[1]] - x[NESTED_BASES[2]]]
        )
        r = resample(values, None, resampling.bootstrap, resampling.seed)
        se = standard_error(r.boot, r.n_clusters)
        df = r.n_clusters - 1
        low, high = t_interval(r.estimate, se, df, 1 - resampling.level)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_one = stats.t.sf(r.estimate / se, df) if df >= 1 else np.full(len(values), np.nan)
        p_one = np.where(se == 0, np.where(r.estimate > 0, 0.0, 1.0), p_one)  # no spread: the sign decides
        if token not in angles:
            angles[token] = _nested_angles(token, by)
        digits, rival, sigma = angles[token]
        row = {"token": token, "variable": variable, "layer": int(layer), **dict(zip(strata, key[3:]))}
        row.update(n_pairs=int(r.n_pairs[-1]), df=df)
        row["ld"] = "log-likelihood ratio" if "term" in raw else "logit difference"
        for i, name in enumerate(("ld_digits", "ld_t100", "ld_placebo", "increment", "placebo_gap")):
            row[name] = r.estimate[i]
            row[f"{name}_low" if i < 3 else ("low" if i == 3 else "placebo_low")] = low[i]
            row[f"{name}_high" if i < 3 else ("high" if i == 3 else "placebo_high")] = high[i]
        row.update(se=se[3], placebo_se=se[4], p_digits=p_one[3], p_placebo=p_one[4])
        row["p"] = max(p_one[3], p_one[4]) if np.isfinite(p_one[3:]).all() else np.nan
        row.update({f"rank_{k}": int(by.loc[n, "rank"]) for k, n in zip(("digits", "t100", "placebo"), NESTED_BASES)})
        # pairs whose clean value some design cannot reach from the other values (extrapolated)
        row["unspanned_pairs"] = int(by["unspanned"].max()) if "unspanned" in by else np.nan
        row["sigma"] = sigma
        for i in range(2):
            row[f"angle_digits_{i + 1}"] = float(np.degrees(np.arccos(digits[i])))
            row[f"angle_placebo_{i + 1}"] = float(np.degrees(np.arccos(rival[i])))
        rows.append(row)
    return pd.DataFrame(rows)

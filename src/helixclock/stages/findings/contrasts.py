"""Each declared finding computed from the saved tables (docs/findings.md, "Findings"): its rows, its
choice (on the job's selection draw, else cross-fitted; on the same pairs under ``compat:
authors``), its per-pair values, its estimate, standard error and 95% interval, before multiplicity (:mod:`.verdicts`).

Per-pair values are aligned by pair column (``pair_i`` of one model job is one pair in every table
of that job), a difference is taken pair by pair over the pairs both quantities have, and the
pairs are resampled one by one (:meth:`Tables.clusters`: the pair is the unit the design samples).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...stats.crossfit import choose, cross_fit, fold_bound, folds
from ...stats.inference import (
    per_pair_sd,
    ratio_of_means,
    resample,
    singletons,
    standard_error,
    t_interval,
)
from ...stats.statistics import PAIR, TERM, Resampling
from ...stats.strata import MATCHED, by_stratum, strata_masks
from .registry import RESERVED, TABLES
from .tested import stage_test

# how the run chose the objects of an `each` list, against the pairs that measure them
SPLITS = {
    "same pairs": "the run's choice, on the same pairs",
    "separate draw": "the run's choice, on a separate draw of pairs",
    "fixed by the paper": "fixed by the paper",
}
MEASURE = "measure"  # a prompts table's draw of the measuring pairs (helixclock.causal.pairs.MEASURE; no torch here)
PAIRS = "pairs"  # what a cluster of a table of pairs is: one pair (Tables.clusters says why)


@dataclass(frozen=True)
class Values:
    """Per-pair (or per-unit) values of one finding and how to resample them."""

    values: np.ndarray  # [n] (NaN: a pair the quantity lacks)
    clusters: np.ndarray
    unit: str  # what a cluster is


def _same(a, b) -> bool:
    """A label value equals a registry value: as numbers where both read as numbers ("4.0" and 4),
    else as text."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def match(frame: pd.DataFrame, filters: Mapping, where: str) -> pd.DataFrame:
    """The rows of ``frame`` whose label columns equal ``filters`` (a column the table lacks is
    an error naming the columns it has)."""
    mask = np.ones(len(frame), bool)
    for col, value in filters.items():
        if col not in frame:
            labels = [c for c in frame.columns if not c.startswith(PAIR)]
            raise KeyError(f"{where}: no column {col!r}; the table has {', '.join(labels)}")
        mask &= np.array([_same(v, value) for v in frame[col]], bool)
    return frame[mask]


def prepared(frame: pd.DataFrame, finding: Mapping) -> pd.DataFrame:
    """A table cut to the finding's reading and term where it has those columns: the last-token
    stages' tables have a reading (one, the last token, for a one-token model), the stages read
    at one place (the helix at a's token, the numbers' structure) none; a term only where LD is
    the log-likelihood ratio of answers of several tokens.  Term ``matched`` (a raw table of
    pairs by term): the terms the reading's DE scores, by stratum (answer tokens, p*: the strata
    of the table's rows at the first differing token), :func:`helixclock.stats.strata.by_stratum`."""
    if finding["term"] == MATCHED and TERM in frame and "reading" in frame:
        return by_stratum(frame, finding["reading"], strata_masks(frame)).reset_index(drop=True)
    if "reading" in frame:
        frame = frame[frame["reading"] == finding["reading"]].drop(columns="reading")
    if TERM in frame:
        frame = frame[frame[TERM] == finding["term"]].drop(columns=TERM)
    return frame.reset_index(drop=True)


def filters(spec: Mapping, fill: Mapping) -> dict:
    """A row spec's label filters, ``$column`` values filled from ``fill`` (the ``each`` row)."""
    out = {}
    for k, v in spec.items():
        if k in RESERVED:
            continue
        out[k] = fill[v[1:]] if isinstance(v, str) and v.startswith("$") else v
    return out


def expand(finding: Mapping, frames: Mapping[str, pd.DataFrame]) -> list[dict]:
    """One concrete finding per row of its ``each`` list (id suffixed, ``$column`` filled into its
    rows and claim; ``fill`` holds the values; ``each.names``: columns of one value per row that
    fill the claim only, not the id), or the finding itself."""
    if "each" not in finding:
        return [{**finding, "fill": {}}]
    each = finding["each"]
    listed = {**finding, "reading": each.get("reading", finding["reading"])}  # the reading of the list
    table = prepared(frames[each["table"]], listed)
    table = match(table, each.get("where", {}), f"{finding['id']}: each")
    for col, values in each.get("exclude", {}).items():
        table = table[[not any(_same(v, x) for x in values) for v in table[col]]]
    names = each.get("names", [])
    missing = [c for c in each["columns"] + names if c not in table]
    if missing:  # e.g. a table an older helixclock wrote: its job's code changed, not its inputs
        raise ValueError(
            f"{finding['id']}: table {each['table']} has no column {', '.join(missing)}; "
            f"rerun the job that writes it (snakemake --forcerun <its rule>)"
        )
    rows = table[each["columns"] + names].drop_duplicates().to_dict("records")
    if len(rows) != len(table[each["columns"]].drop_duplicates()):
        raise ValueError(f"{finding['id']}: each.names {names} take several values for one row of {each['columns']}")
    if each.get("by"):  # each row once per value of these columns of the finding's own table (its strata)
        own = prepared(frames[finding["table"]], finding)
        values = own[each["by"]].dropna().drop_duplicates().sort_values(each["by"]).to_dict("records")
        rows = [{**row, **value} for row in rows for value in values]
    out = []
    for row in rows:
        fill = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in row.items()}
        suffix = ",".join(f"{k}={v}" for k, v in fill.items() if k not in names)
        claim = finding["claim"]
        for k, v in fill.items():
            claim = claim.replace(f"${k}", str(v))
        out.append({**finding, "id": f"{finding['id']}[{suffix}]", "claim": claim, "fill": fill})
    return out


class Tables:
    """The saved tables of one model, by registry name, with each job's clusters."""

    def __init__(self, frames: Mapping[str, pd.DataFrame], prompts: Mapping[str, pd.DataFrame | None]):
        self.frames = dict(frames)
        self.prompts = dict(prompts)

    def pair_columns(self, name: str) -> list[str]:
        return [c for c in self.frames[name].columns if c.startswith(PAIR)]

    def clusters(self, name: str) -> tuple[np.ndarray, str]:
        """The cluster of each pair column of table ``name`` and what a cluster is: each pair its
        own (:data:`PAIRS`).  The pair is the unit the design samples
        (:func:`helixclock.prompts.sampling.pair_indices`): clean prompts are drawn without
        replacement and each corrupted partner independently given its clean prompt, over a
        deterministic model, so the pairs are exchangeable (their covariance is at most 0), and
        a prompt two pairs share by chance makes them no more alike than any two pairs.  The
        interval is for the mean of f(x, c) over the clean prompts x and their possible partners
        c; resampling pairs with no finite-population correction makes it conservative, not too
        narrow (tests/unit/test_inference.py).  Where the job records its prompts (its measuring
        draw), every pair column must be one of them."""
        cols = self.pair_columns(name)
        prompts = self.prompts.get(name)
        if prompts is not None:
            if "draw" in prompts:  # the raw tables' pair columns are the measuring draw's
                prompts = prompts[prompts["draw"] == MEASURE]
            missing = [c for c in cols if c not in set(prompts["pair"])]
            if missing:
                raise ValueError(f"table {name}: pair column(s) {', '.join(missing[:3])} not in its prompts table")
        return singletons(len(cols)), PAIRS

    def recorded_split(self, name: str) -> str | None:
        """How the job of table ``name`` chose what it ran, as its prompts table records it
        (column split: "separate draw" or "same pairs"); None where it records none."""
        prompts = self.prompts.get(name)
        if prompts is None or "split" not in prompts or not len(prompts):
            return None
        return str(prompts["split"].iloc[0])


def side(tables: Tables, finding: Mapping, key: str) -> tuple[pd.DataFrame, str]:
    """The rows of side ``key`` (x or y) and their table's name."""
    spec = finding[key]
    name = spec.get("table", finding["table"])
    frame = prepared(tables.frames[name], finding)
    return match(frame, filters(spec, finding["fill"]), f"{finding['id']}: {key}"), name


def pair_values(rows: pd.DataFrame, spec: Mapping, where: str) -> np.ndarray:
    """[n] per-pair values of one row, or of the rows summed pair by pair (``combine: sum``; a
    pair missing from any row is missing from the sum)."""
    cols = [c for c in rows.columns if c.startswith(PAIR)]
    values = rows[cols].to_numpy(np.float64)
    if spec.get("combine") == "sum":
        if len(values) == 0:
            raise ValueError(f"{where}: no rows to sum")
        return values.sum(0)
    if len(values) != 1:
        raise ValueError(f"{where}: {len(values)} rows match where one should (say which, or combine: sum)")
    return values[0]


def unit_values(tables: Tables, finding: Mapping, key: str) -> np.ndarray:
    """[n units] column ``column`` of the rows of side ``key`` of a table of units."""
    rows, _ = side(tables, finding, key)
    return rows[finding[key]["column"]].to_numpy(np.float64)


def choose_values(tables: Tables, finding: Mapping, compat: str, resampling: Resampling) -> dict:
    """A mean or difference at an object chosen from the tables (``select``): candidates are the
    values of ``select.over`` both sides have.  Where the finding's job recorded a selection draw
    (its table's :attr:`~.registry.Table.selection`, with rows), the object is chosen there and
    measured on all measuring pairs, an ordinary mean with its own SE on C - 1 df (exact: the
    draws share no prompt, :func:`helixclock.causal.pairs.ranking_draw`); where it did not, cross-
    fitted (:func:`helixclock.stats.crossfit.cross_fit`) with :func:`fold_bound`'s conservative
    SE; under ``compat: authors`` chosen and measured on all pairs (the paper's)."""
    sel = finding["select"]
    over = sel["over"]
    x, name = side(tables, finding, "x")
    y = side(tables, finding, "y")[0] if "y" in finding else None
    cands = sorted(set(x[over]) & (set(y[over]) if y is not None else set(x[over])), key=float)
    if not cands:
        raise ValueError(f"{finding['id']}: no {over} that both sides have")

    def at(rows, spec, v, key):
        return pair_values(match(rows, {over: v}, finding["id"]), spec, f"{finding['id']}: {key} at {over} {v}")

    X = np.stack([at(x, finding["x"], v, "x") for v in cands])
    Y = np.stack([at(y, finding["y"], v, "y") for v in cands]) if y is not None else None
    d = X - Y if Y is not None else X
    by = sel["by"]
    spec = finding[by] if by in ("x", "y") else by  # the rows whose mean the choice maximises
    clusters, unit = tables.clusters(name)
    fmt = lambda k: f"{over} {_number(cands[int(k)])}"  # noqa: E731
    draw = selection_draw(tables, finding)
    if compat != "authors" and draw is not None:
        rows = match(draw, filters(spec, finding["fill"]), f"{finding['id']}: selection draw")
        k = int(choose(np.stack([at(rows, spec, v, "selection draw") for v in cands]), sel["rule"]))
        n_draw = len([c for c in draw.columns if c.startswith(PAIR)])
        out = mean_of(Values(d[k], clusters, unit), resampling)
        chosen_on = f"{fmt(k)}, on the job's selection draw of {n_draw} pairs"
        return {**out, "selection": chosen_on, "split": "separate draw"}
    if by in ("x", "y"):
        crit = X if by == "x" else Y
    else:
        frame = prepared(tables.frames[by.get("table", finding["table"])], finding)
        rows = match(frame, filters(by, finding["fill"]), "by")
        crit = np.stack([at(rows, by, v, "by") for v in cands])
    if compat == "authors":
        chosen = cross_fit(d, crit, None, sel["rule"])
        out = mean_of(Values(chosen.values, clusters, unit), resampling)
        return {**out, "selection": f"{fmt(chosen.choice[0])}, on all pairs", "split": "same pairs (compat: authors)"}
    fold = folds(clusters, resampling.seed)
    chosen = cross_fit(d, crit, fold, sel["rule"])
    bound = fold_bound(chosen.values, fold, clusters, resampling.bootstrap, resampling.seed)
    low, high = t_interval(bound.estimate, bound.se, bound.df)
    return {
        "estimate": float(bound.estimate),
        "se": float(bound.se),
        "df": bound.df,
        "low": float(low),
        "high": float(high),
        "n_pairs": int(bound.n_pairs),
        "n_clusters": bound.n_clusters,
        "clusters": unit,
        "sd_diff": per_pair_sd(chosen.values, clusters),
        "selection": f"{fmt(chosen.choice[0])} (fold 1) | {fmt(chosen.choice[1])} (fold 2)",
        "split": CROSS_FITTED,
    }


CROSS_FITTED = "cross-fitted (conservative bound)"  # crossfit.fold_bound: its SE bounds the true one


def selection_draw(tables: Tables, finding: Mapping) -> pd.DataFrame | None:
    """The finding's job's selection draw, cut to the finding's reading and term, where the job
    recorded one (its table's :attr:`~.registry.Table.selection` in ``tables`` with pair
    columns); else None."""
    name = TABLES[finding["table"]].selection
    frame = tables.frames.get(name) if name else None
    if frame is None or not len(frame) or not any(str(c).startswith(PAIR) for c in frame.columns):
        return None
    return prepared(frame, finding)


def _number(v):
    f = float(v)
    return int(f) if f.is_integer() else f


def mean_of(v: Values, resampling: Resampling) -> dict:
    """Estimate, standard error (cluster bootstrap), t interval of the mean of ``v``."""
    r = resample(v.values[None], v.clusters, resampling.bootstrap, resampling.seed)
    se = standard_error(r.boot, r.n_clusters)
    df = max(r.n_clusters - 1, 1)
    low, high = t_interval(r.estimate, se, df)
    return {
        "estimate": float(r.estimate[0]),
        "se": float(se[0]),
        "df": df,
        "low": float(low[0]),
        "high": float(high[0]),
        "n_pairs": int(r.n_pairs[0]),
        "n_clusters": r.n_clusters,
        "clusters": v.unit,
        "sd_diff": per_pair_sd(v.values, v.clusters),
    }


def ratio_of(num: np.ndarray, den: np.ndarray, clusters, unit: str, resampling: Resampling) -> dict:
    """mean(num) / mean(den) over the pairs both have: Fieller's 95% interval, "not defined"
    where the denominator's interval includes 0 (its estimate and interval in den_*)."""
    both = ~np.isnan(num) & ~np.isnan(den)
    x = np.where(both, np.stack([num, den]), np.nan)
    r = resample(x, clusters, resampling.bootstrap, resampling.seed)
    ratio = ratio_of_means(r)
    se = standard_error(r.boot, r.n_clusters)
    den_low, den_high = t_interval(r.estimate[1], se[1], max(r.n_clusters - 1, 1))
    return {
        "estimate": float(ratio.estimate),
        "low": float(ratio.low),
        "high": float(ratio.high),
        "defined": bool(ratio.defined),
        "n_pairs": int(both.sum()),
        "n_clusters": r.n_clusters,
        "clusters": unit,
        "den_estimate": float(r.estimate[1]),
        "den_low": float(den_low),
        "den_high": float(den_high),
    }


def category_of(tables: Tables, finding: Mapping, compat: str, resampling: Resampling) -> dict:
    """A head's category by the paper's rule (section 5.2: c_ab = (1 - DE/TE) helix(a,b) /
    helix(a,b,a+b), c_a+b = (DE/TE) helix(a+b) / helix(a,b,a+b), a,b where c_ab >= c_a+b, no
    clipping), tested as the rule states it.  With TE and helix(a,b,a+b) above 0,

        c_a+b - c_ab = g / (TE helix(a,b,a+b)),   g = DE helix(a+b) - (TE - DE) helix(a,b),

    so the category is the sign of g, a function of four means (a+b where g > 0).  g = 0 is tested
    two-sided on all measuring pairs (:func:`category_test`); a rejection confirms the rule's
    category with directional error at most alpha / 2, so no cross-fit is needed and the row's
    estimate, g signed by its category, cannot read "reversed".  A head is categorised only where
    the intervals of both TE and helix(a,b,a+b) lie above 0 (else "no category tested": the
    ratios of the rule are not defined).  Testing each pair's DE - TE/2 instead (what this row did
    before) tests DE/TE > 1/2, the rule's threshold only where helix(a+b) = helix(a,b)."""
    head = filters(finding["x"], finding["fill"])
    effects = match(prepared(tables.frames["head_effects"], finding), head, finding["id"])
    fits = match(prepared(tables.frames["head_fits"], finding), head, finding["id"])

    def row(frame, col, value):
        return pair_values(match(frame, {col: value}, finding["id"]), {}, f"{finding['id']}: {value}")

    te, de = row(effects, "effect", "te"), row(effects, "effect", "de")
    fit = {k: row(fits, "fit", k) for k in ("helix(a,b,a+b)", "helix(a+b)", "helix(a,b)")}
    clusters, unit = tables.clusters("head_effects")
    te_mean = mean_of(Values(te, clusters, unit), resampling)
    fit_mean = mean_of(Values(fit["helix(a,b,a+b)"], clusters, unit), resampling)
    base = {"den_estimate": te_mean["estimate"], "den_low": te_mean["low"], "den_high": te_mean["high"]}
    counts = {k: te_mean[k] for k in ("n_pairs", "n_clusters", "clusters")}
    for label, m in (("TE", te_mean), ("helix(a,b,a+b)", fit_mean)):
        if not m["low"] > 0:
            interval = f"95% interval [{m['low']:.3g}, {m['high']:.3g}]"
            note = f"no category tested: the head's {label} is not shown above 0 ({interval})"
            return {**base, **counts, "defined": False, "note": note, "split": CATEGORY_SPLIT}
    out = category_test(te, de, fit["helix(a+b)"], fit["helix(a,b)"], clusters, resampling)
    name = "a+b" if out.pop("sign") > 0 else "a,b"
    authors = " (compat: authors, the same rule)" if compat == "authors" else ""
    return {**base, **out, "clusters": unit, "defined": True, "selection": name + authors, "split": CATEGORY_SPLIT}


CATEGORY_SPLIT = "same pairs (two-sided test of the rule's sign)"


def category_test(te, de, sum_fit, ab_fit, clusters, resampling: Resampling) -> dict:
    """The test of a head's category (:func:`category_of`): g = mean(DE) mean(helix(a+b)) -
    (mean(TE) - mean(DE)) mean(helix(a,b)) over the pairs that have all four, its standard error
    from a joint resample of the four means with shared weights (g on each resample, times
    sqrt(C / (C - 1))), t on C - 1 degrees of freedom.  Not the mean of per-pair products: g is
    a function of the means, as the rule is.  Returns the estimate |g| (g signed by its
    category, ``sign``), its standard error and t interval, df, pairs and clusters."""
    x = np.stack([np.asarray(v, np.float64) for v in (te, de, sum_fit, ab_fit)])
    both = ~np.isnan(x).any(0)
    r = resample(np.where(both, x, np.nan), clusters, resampling.bootstrap, resampling.seed)

    def g(m):
        return m[..., 1] * m[..., 2] - (m[..., 0] - m[..., 1]) * m[..., 3]

    estimate = float(g(r.estimate))
    sign = 1 if estimate > 0 else -1
    se = standard_error(g(r.boot)[:, None], r.n_clusters)
    df = max(r.n_clusters - 1, 1)
    low, high = t_interval(sign * estimate, se, df)
    return {
        "sign": sign,
        "estimate": sign * estimate,
        "se": float(se[0]),
        "df": df,
        "low": float(low[0]),
        "high": float(high[0]),
        "n_pairs": int(both.sum()),
        "n_clusters": r.n_clusters,
        "sd_diff": float(se[0]) * np.sqrt(max(r.n_clusters, 1)),
    }


def each_split(tables: Tables, finding: Mapping) -> str:
    """How the run chose the objects of a finding's ``each`` list against the pairs that measure
    them: as the list's job recorded it (its prompts table's split, e.g. "same pairs" under
    ``compat: authors``) where it did, else as the registry declares (``each.split``); "fixed"
    for a finding whose objects the run did not choose."""
    each = finding.get("each", {})
    if "chosen_by" not in each:
        return "fixed"
    return SPLITS[tables.recorded_split(each["table"]) or each.get("split", "same pairs")]


def compute(finding: Mapping, tables: Tables, compat: str, resampling: Resampling) -> dict:
    """One concrete finding's numbers before multiplicity (keys of :data:`helixclock.stages.
    findings.verdicts.COLUMNS`)."""
    q = finding["quantity"]
    if q == "category":
        return category_of(tables, finding, compat, resampling)
    if "select" in finding:
        return choose_values(tables, finding, compat, resampling)
    kind = TABLES[finding["table"]].kind
    if kind == "tested":
        rows, _ = side(tables, finding, "x")
        return {**stage_test(rows, finding), "split": each_split(tables, finding)}
    if kind == "units":
        x = unit_values(tables, finding, "x")
        y = unit_values(tables, finding, "y") if "y" in finding else None
        clusters, unit = singletons(len(x)), "units"
    else:
        rows, name = side(tables, finding, "x")
        x = pair_values(rows, finding["x"], f"{finding['id']}: x")
        y = pair_values(side(tables, finding, "y")[0], finding["y"], f"{finding['id']}: y") if "y" in finding else None
        clusters, unit = tables.clusters(name)
    split = each_split(tables, finding)
    if q == "ratio":
        return {**ratio_of(x, y, clusters, unit, resampling), "split": split}
    if q == "share_below":
        both = ~np.isnan(x) & ~np.isnan(y)
        values = np.where(both, (x < y).astype(np.float64), np.nan)
    else:
        values = x - y if y is not None else x
    out = mean_of(Values(values, clusters, unit), resampling)
    if q == "share_below":
        out["low"], out["high"] = max(out["low"], 0.0), min(out["high"], 1.0)
    return {**out, "split": split}

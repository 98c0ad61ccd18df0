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

from ..project.io import to_numpy

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


def positive_shares(values) -> tuple[np.ndarray, np.ndarray]:
    """Values sorted largest first (ties in input order) and the running share of their
    *positive* total: each value's positive part summed so far over the sum of all positive
    parts (order [n], shares [n]; NaN shares if no value is positive).  A negative value adds
    nothing, so the share rises to 1 at the last positive value and never passes it (Fig. D11's
    running share; :func:`cumulative_shares` is the signed one)."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(-v, kind="stable")
    positive = np.clip(v[order], 0, None)
    total = positive.sum()
    shares = np.cumsum(positive) / total if total > 0 else np.full(len(v), np.nan)
    return order, np.minimum(shares, 1.0)


def share_set(values, share: float) -> np.ndarray:
    """The neurons "for ``share`` of the total" (the paper's "the k = 693 highest DE neurons
    required to achieve 80% of the total direct effect", App. D.2 and F): the smallest set of
    the largest values whose sum reaches ``share`` of the signed total of all values, as a
    boolean mask.  Where the signed total is not positive the set is not defined: no unit (the
    paper comparison's count is then "not defined", and :func:`unit_set` names the set it uses
    instead).  The one definition behind figD11's counts, figF4's neuron set and paper_comparison."""
    v = np.asarray(values, dtype=np.float64)
    mask = np.zeros(len(v), bool)
    if not v.sum() > 0:
        return mask
    order, shares = cumulative_shares(v)
    hit = np.flatnonzero(shares >= share - 1e-12)  # a share above 1 is never reached: every unit
    mask[order[: int(hit[0]) + 1 if len(hit) else len(v)]] = True
    return mask


DE_SET = "DE set"  # the paper's: the largest DEs reaching a share of their signed total
ABS_DE_SET = "|DE| set"  # where that total is not positive: the largest |DE| reaching a share of the total |DE|


@dataclass(frozen=True)
class UnitSet:
    """A set of top units (``mask``) and its ``name``: :data:`DE_SET` or :data:`ABS_DE_SET`."""

    mask: np.ndarray
    name: str


def unit_set(values, share: float) -> UnitSet:
    """The units Fig. F4 reads: the paper's DE set (:func:`share_set`) where the signed total of
    the DEs is positive (always, for the paper's top neurons); otherwise the paper's set is not
    defined (with a negative total, "all units" would be a set of every unit, chosen by
    nothing), and the set is the smallest one of the largest |DE| whose sum reaches ``share`` of
    the total |DE|, named :data:`ABS_DE_SET` wherever it is used (no unit where every DE is 0)."""
    v = np.asarray(values, dtype=np.float64)
    if v.sum() > 0:
        return UnitSet(share_set(v, share), DE_SET)
    return UnitSet(share_set(np.abs(v), share), ABS_DE_SET)


def positions_of(values, wanted) -> list[int]:
    """The first position in ``values`` of each item of ``wanted`` that occurs there, in the
    order of ``wanted`` (e.g. the rows of the neuron stage's files holding Fig. 8's ranks)."""
    values = np.asarray(values)
    return [int(np.flatnonzero(values == w)[0]) for w in wanted if (values == w).any()]

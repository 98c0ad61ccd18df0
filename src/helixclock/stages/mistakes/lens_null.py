"""A base rate for Fig. F4 of answers of several tokens: how often would the digit logit lens
show the predicted period by chance?

App. F counts the top-DE neurons whose logit lens has the period of their largest a+b fit term.
Over the ten digit tokens that count needs a null: the period-10 bin is the lowest frequency and
takes any smooth or monotone preference among the digits (the unembedding's own digit geometry),
and most predictions are period 10.  helixclock's null (docs/several-tokens.md, "Numbers of several tokens"):

* **Matches against a base rate.**  For each unit i of the set F4 reads (the paper's DE set, or
  the |DE| set where the top units' DEs sum to 0 or less: ``unit_set``,
  :func:`helixclock.stats.statistics.unit_set`) with a predicted period P_i
  (:func:`.logit_lens.predicted_digit_period`), q_i = the share of the *other* units of its layer
  and place whose lens, computed the same way, shows P_i.  The lens does not depend on the place
  (it is a weight's write), so the other units are the other neurons of the layer, when the
  grids job saved every neuron's lens (``layer_lens``); otherwise the other top units of the
  same layer and place (``null_population`` says which).  The matches M are compared with their
  expectation E = sum q_i, and p = P(M >= m) under the Poisson-binomial of the q_i, exact by
  convolution (:func:`poisson_binomial_sf`).  The digits are never permuted: that would destroy
  the unembedding's digit geometry, the likely source of the period-10 bias.
* **A continuous statistic.**  The power share of the predicted frequency (the share of the
  lens's variance over the digits at frequency 10 / P_i, by Parseval: :func:`power_shares`),
  beside the argmax; its mean over the set against the same null (each unit replaced by a
  random other unit of its layer and place, ``draws`` times, seeded): ``p_power``.

The lens is each unit's output column through the norms applied to that column alone (Gemma's
post-MLP norm and the final norm: its gain over its RMS) and the unembedding; the norms'
linearisation at the actual activation (which also projects out the activation's own direction)
is not computed: :data:`LENS` states it in the table.  numpy/pandas only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...stats.statistics import DE_SET

N_DIGITS = 10
DRAWS = 10_000
LENS = (
    "each unit's output column through the norms applied to the column alone (the post-MLP norm where the "
    "family has one, then the final norm: gain x column / its RMS) and the unembedding; not linearised at "
    "the actual activation (that would also project out the activation's own direction)"
)
NULL_COLUMNS = (
    "place", "unit_set", "n_units", "matches", "expected", "p_matches", "power_share", "null_power_share", "p_power",
    "null_population", "n_null_min", "draws", "lens",
)  # fmt: skip


def poisson_binomial_pmf(q) -> np.ndarray:
    """P(M = m), m = 0..n, for M the sum of independent Bernoulli(q_i): the convolution of their
    pmfs [1 - q_i, q_i]."""
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 1 or np.any((q < 0) | (q > 1)) or np.any(~np.isfinite(q)):
        raise ValueError(f"probabilities {q.tolist()}: each must be a number in [0, 1]")
    pmf = np.ones(1)
    for p in q:
        pmf = np.convolve(pmf, [1 - p, p])
    return pmf


def poisson_binomial_sf(m: int, q) -> float:
    """P(M >= m) under the Poisson-binomial of ``q`` (1 for m <= 0, 0 above n)."""
    pmf = poisson_binomial_pmf(q)
    return float(min(1.0, pmf[max(int(m), 0) :].sum()))


def power_shares(lens: np.ndarray) -> np.ndarray:
    """[n, 6]: the share of each lens's variance over the ten digits (its first ten columns) at
    frequency f = 0..5 (f = 0 is 0: the mean is removed), by Parseval: 2 |F_f|^2 for f = 1..4 and
    |F_5|^2 (the Nyquist bin, its own mirror) over the sum of |F_k|^2, k = 1..9.  NaN for a flat lens."""
    F = np.abs(np.fft.fft(np.asarray(lens, np.float64)[:, :N_DIGITS], axis=1)) ** 2
    power = np.concatenate([np.zeros((len(F), 1)), 2 * F[:, 1:5], F[:, 5:6]], axis=1)
    total = F[:, 1:].sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, power / np.where(total > 0, total, 1), np.nan)


def _frequency(period) -> np.ndarray:
    """The frequency over ten digits of a period 10 / f (NaN stays NaN, as -1)."""
    p = np.asarray(period, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(p), np.rint(N_DIGITS / p), -1).astype(np.int64)


def digit_lens_period(lens: np.ndarray) -> np.ndarray:
    """The strongest period of each lens over the ten digit tokens (its first ten columns): 10 / f
    for the largest Fourier magnitude at f = 1..5 (10, 5, 3.33, 2.5, 2; DC dropped)."""
    spectrum = np.abs(np.fft.rfft(np.asarray(lens, np.float64)[:, :N_DIGITS], axis=1))[:, 1:]
    return N_DIGITS / (1 + spectrum.argmax(1))


def lens_null(
    periods: pd.DataFrame,
    lens: np.ndarray,
    units: pd.DataFrame,
    layer_lens: np.ndarray | None = None,
    draws: int = DRAWS,
    seed: int = 0,
    unit_set: str = DE_SET,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The null of Fig. F4 for answers of several tokens.

    ``periods``: the F4 table (:func:`.logit_lens.digit_lens_tables`: place, layer, neuron,
    predicted_period, lens_period, matches); ``units`` (place, layer, neuron) and ``lens``
    [n_units, 10 or 11]: every top unit, row i of each the same unit; ``layer_lens``
    [layers, d_mlp, 10 or 11] or None: every neuron's lens at each layer (the grids job's).

    Returns the F4 table with per-unit columns ``power_share``, ``q``, ``null_power_share``,
    ``power_rank``, ``n_null`` (NaN where nothing is predicted or the population is empty) and
    the summary, one row per place and one for "all": :data:`NULL_COLUMNS` - ``unit_set`` (the
    name of the set of units F4 reads, :func:`helixclock.stats.statistics.unit_set`), ``n_units`` (with a
    prediction), ``matches`` M, ``expected`` E = sum q_i, ``p_matches`` = P(M >= m), the mean
    ``power_share`` and its ``null_power_share``, ``p_power`` (Monte Carlo, ``draws`` draws:
    (1 + #{null mean >= observed}) / (1 + draws)), ``null_population``, ``n_null_min`` (the
    smallest population), ``draws`` and ``lens`` (:data:`LENS`)."""
    if draws < 1:
        raise ValueError(f"draws {draws}: allowed 1 or more")
    lens = np.asarray(lens, np.float64)
    if layer_lens is not None:
        layer_lens = np.asarray(layer_lens)
        need = (int(units["layer"].max()) + 1 if len(units) else 0, int(units["neuron"].max()) + 1 if len(units) else 0)
        if (
            layer_lens.ndim != 3
            or layer_lens.shape[0] < need[0]
            or layer_lens.shape[1] < need[1]
            or (layer_lens.shape[2] != lens.shape[1])
        ):
            raise ValueError(
                f"layer_lens of shape {layer_lens.shape}: expected [layers >= {need[0]}, d_mlp >= {need[1]}, "
                f"{lens.shape[1]} tokens] (every neuron's lens at every layer, over the units' lens tokens)"
            )
    if len(units) != len(lens):
        raise ValueError(f"{len(lens)} lens rows but {len(units)} units; row i of each must be the same unit")
    keys = list(zip(units["place"], units["layer"], units["neuron"]))
    own = periods.reset_index(drop=True).copy()
    row_of = {k: i for i, k in enumerate(keys)}
    missing = [k for k in zip(own["place"], own["layer"], own["neuron"]) if k not in row_of]
    if missing:
        raise ValueError(f"F4 units {missing[:3]} are not among the top units")
    idx = np.array([row_of[k] for k in zip(own["place"], own["layer"], own["neuron"])], dtype=np.int64)
    freq = _frequency(own["predicted_period"])
    shares_own = power_shares(lens[idx]) if len(idx) else np.zeros((0, 6))
    own["power_share"] = np.where(freq > 0, shares_own[np.arange(len(idx)), np.maximum(freq, 0)], np.nan)
    pops = _populations(own, units, lens, layer_lens)
    cols = {"q": [], "null_power_share": [], "power_rank": [], "n_null": []}
    null_shares = []
    for i, pop in enumerate(pops):
        f = freq[i]
        if f <= 0 or len(pop) == 0:
            for c in cols:
                cols[c].append(np.nan if c != "n_null" else len(pop))
            null_shares.append(np.zeros(0))
            continue
        period = digit_lens_period(pop)
        share = power_shares(pop)[:, f]
        cols["q"].append(float(np.mean(np.isclose(period, N_DIGITS / f))))
        cols["null_power_share"].append(float(np.nanmean(share)))
        cols["power_rank"].append(float(np.mean(share >= own.loc[i, "power_share"])))
        cols["n_null"].append(len(pop))
        null_shares.append(share)
    for c, v in cols.items():
        own[c] = v
    own["n_null"] = own["n_null"].astype(np.int64)
    population = "all neurons of the layer" if layer_lens is not None else "other top units of the layer and place"
    rng = np.random.default_rng(seed)
    rows = []
    for place in [*dict.fromkeys(own["place"]), "all"]:
        sel = np.flatnonzero((own["place"] == place).to_numpy() if place != "all" else np.ones(len(own), bool))
        sel = sel[own["q"].notna().to_numpy()[sel]]
        rows.append(_summary(place, own.iloc[sel], [null_shares[i] for i in sel], rng, draws, population, unit_set))
    return own, pd.DataFrame(rows, columns=list(NULL_COLUMNS))


def _populations(own: pd.DataFrame, units: pd.DataFrame, lens: np.ndarray, layer_lens) -> list[np.ndarray]:
    """The lens rows [k, 10 or 11] of each F4 unit's null: the other neurons of its layer
    (``layer_lens``), or the other top units of its layer and place."""
    out = []
    for place, layer, neuron in zip(own["place"], own["layer"], own["neuron"]):
        if layer_lens is not None:
            layer_rows = np.asarray(layer_lens[int(layer)], np.float64)
            out.append(np.delete(layer_rows, int(neuron), axis=0))
        else:
            same = (units["place"] == place) & (units["layer"] == layer) & (units["neuron"] != neuron)
            out.append(lens[same.to_numpy()])
    return out


def _summary(place, part: pd.DataFrame, shares, rng, draws: int, population: str, unit_set: str) -> dict:
    n = len(part)
    m = int(part["matches"].sum())
    observed = float(part["power_share"].mean()) if n else np.nan
    if n:
        picks = np.stack([s[rng.integers(0, len(s), size=draws)] for s in shares])  # [n, draws]
        p_power = (1 + int((np.nanmean(picks, 0) >= observed - 1e-12).sum())) / (1 + draws)
    return {
        "place": place,
        "unit_set": unit_set,
        "n_units": n,
        "matches": m,
        "expected": float(part["q"].sum()) if n else np.nan,
        "p_matches": poisson_binomial_sf(m, part["q"].to_numpy()) if n else np.nan,
        "power_share": observed,
        "null_power_share": float(part["null_power_share"].mean()) if n else np.nan,
        "p_power": p_power if n else np.nan,
        "null_population": population,
        "n_null_min": int(part["n_null"].min()) if n else 0,
        "draws": draws,
        "lens": LENS,
    }

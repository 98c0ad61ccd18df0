"""App. F, Figs. F3 and F4: the neuron logit lens.

The neurons with the largest direct effect boost and suppress answer tokens periodically
(their logit lens, F3), often with the period they read from the a+b helix (F4; helixclock
also counts harmonics T/k).

Neuron logit lens: lens[n] = W_U . W_out[:, n] over the answer tokens (no final norm, no
unembedding bias: the authors skip the norm; the bias would add one fixed pattern to every
neuron), scaled by the neuron's post-activation.  Periods come from
:func:`helixclock.fitting.fourier.dominant_periods` (DC dropped), as in :mod:`.wrong_answers`.

numpy/pandas only (no torch), vectorised over neurons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...fitting.fourier import dominant_periods
from ...prompts.layout import whole_numbers
from ...stats.statistics import unit_set
from .lens_null import NULL_COLUMNS, digit_lens_period, lens_null
from .wrong_answers import NEAR, PERIODS, near

# ---------------------------------------------------------------- F3, F4: neuron logit lens

NEURON_COLUMNS = ("place", "layer", "neuron", "de", "max_post", "max_a", "max_b", "top_variable", "top_period")


def neuron_label(layer, neuron) -> str:
    return f"L{int(layer)}N{int(neuron)}"


def _check_neurons(neurons: pd.DataFrame, lens: np.ndarray, need) -> None:
    missing = [c for c in need if c not in neurons.columns]
    if missing:
        raise KeyError(f"neuron table lacks columns {missing}; needs {list(need)}")
    if len(neurons) != len(lens):
        raise ValueError(
            f"{len(lens)} logit-lens rows but {len(neurons)} neurons; row i of each must be the same neuron"
        )


def lens_at_max(lens: np.ndarray, max_post: np.ndarray) -> np.ndarray:
    """What each neuron writes to the answer logits at its most-activating prompt:
    post-activation x (W_U . W_out[:, n]), [n_neurons, 199]."""
    return np.asarray(lens, np.float64) * np.asarray(max_post, np.float64)[:, None]


def logit_lens_table(neurons: pd.DataFrame, lens: np.ndarray, rows=None) -> pd.DataFrame:
    """Fig. F3: the logit lens of some neurons at their most-activating prompt.

    neurons: one row per neuron, row i <-> lens[i]; columns place, layer, neuron, max_post (the
    post-activation at its most-activating prompt), max_a, max_b (that prompt).
    lens: [n_neurons, 199] = W_U . W_out[:, n] over the answer tokens 0..198.
    rows: positions in ``neurons`` to keep (default the first four).
    Long format: label (L{layer}N{neuron}), place, layer, neuron, max_a, max_b, answer, token, logit.
    """
    _check_neurons(neurons, lens, ("place", "layer", "neuron", "max_post", "max_a", "max_b"))
    rows = np.arange(min(4, len(neurons))) if rows is None else np.asarray(rows)
    sub = neurons.iloc[rows]
    L = lens_at_max(np.asarray(lens)[rows], sub["max_post"].to_numpy())
    m = L.shape[1]
    rep = lambda col: np.repeat(sub[col].to_numpy(), m)  # noqa: E731
    return pd.DataFrame(
        {
            "label": np.repeat([neuron_label(l, n) for l, n in zip(sub["layer"], sub["neuron"])], m),
            "place": rep("place"),
            "layer": rep("layer"),
            "neuron": rep("neuron"),
            "max_a": rep("max_a"),
            "max_b": rep("max_b"),
            "answer": rep("max_a") + rep("max_b"),
            "token": np.tile(np.arange(m), len(sub)),
            "logit": L.ravel(),
        }
    )


HARMONICS = 4  # figF4: a lens period T / k with k = 1..HARMONICS counts as a harmonic match


def harmonic_order(lens_period, fitted_period, harmonics: int = HARMONICS, tol: float = NEAR) -> np.ndarray:
    """The smallest k in 1..``harmonics`` with the lens period within ``tol`` of T / k (T the
    fitted period), else 0.  k = 1 is the strict match; a period-5 neuron whose lens shows 2.5
    has k = 2 (on integer tokens a cosine of period T is also periodic with every multiple of
    T, and its readout may put its power in a harmonic)."""
    p = np.asarray(lens_period, dtype=np.float64)
    T = np.broadcast_to(np.asarray(fitted_period, dtype=np.float64), p.shape)
    out = np.zeros(p.shape, dtype=np.int64)
    for k in range(harmonics, 0, -1):
        out = np.where(near(p, T / k, tol), k, out)
    return out


def logit_lens_periods(
    neurons: pd.DataFrame, lens: np.ndarray, fraction: float = 0.8, periods=PERIODS, harmonics: int = HARMONICS
) -> pd.DataFrame:
    """Fig. F4: the neurons of the ``fraction`` DE set (:func:`helixclock.stats.statistics.share_set`)
    whose preactivation fit's largest term is an a+b term c_{T,a+b} with T in ``periods`` (App.
    F: "a neuron whose preactivation fit's largest term is c_{T_i,a+b}"), and the top Fourier
    period of their logit lens (DC dropped).

    neurons: row i <-> lens[i]; columns place, layer, neuron, de (direct effect), top_variable and
    top_period (variable and period of the largest-amplitude Fourier term of the neuron's Eq. 5
    fit).  Columns: place, layer, neuron, de, fitted_period (that T), lens_period, lens_frequency,
    matches (lens period within 5% of T), harmonic (:func:`harmonic_order`: k with the lens
    period within 5% of T / k, 0 if none) and matches_harmonic (harmonic > 0).
    """
    _check_neurons(neurons, lens, ("place", "layer", "neuron", "de", "top_variable", "top_period"))
    units = unit_set(neurons["de"].to_numpy(), fraction)
    keep = units.mask & (neurons["top_variable"] == "a+b").to_numpy() & neurons["top_period"].isin(periods).to_numpy()
    top = dominant_periods(np.asarray(lens, np.float64)[keep])
    sub = neurons.loc[keep, ["place", "layer", "neuron", "de", "top_period"]]
    sub = sub.rename(columns={"top_period": "fitted_period"})
    sub = sub.reset_index(drop=True)
    sub["unit_set"] = units.name
    sub["lens_period"], sub["lens_frequency"] = top["period"], top["frequency"]
    fitted = sub["fitted_period"].to_numpy(np.float64)
    sub["matches"] = near(sub["lens_period"], fitted)
    sub["harmonic"] = harmonic_order(sub["lens_period"].to_numpy(), fitted, harmonics)
    sub["matches_harmonic"] = sub["harmonic"] > 0
    return sub


def match_shares(periods_table: pd.DataFrame) -> dict[str, float]:
    """Fig. F4's summary: n neurons, and the shares whose lens period matches the fitted period
    strictly and up to a harmonic (NaN without neurons)."""
    n = len(periods_table)
    return {
        "n": n,
        "strict": float(periods_table["matches"].mean()) if n else np.nan,
        "harmonic": float(periods_table["matches_harmonic"].mean()) if n else np.nan,
    }


def neuron_lens_tables(
    neurons: pd.DataFrame,
    lens: np.ndarray,
    rows=None,
    fraction: float = 0.8,
    periods=PERIODS,
    harmonics: int = HARMONICS,
) -> dict[str, pd.DataFrame]:
    """The neuron tables of App. F: logit_lens (F3, neurons ``rows``, e.g. Fig. 8's four) and
    logit_lens_periods (F4, the ``fraction`` DE set).  Columns needed in ``neurons``:
    :data:`NEURON_COLUMNS`; row i of ``neurons`` is row i of ``lens``."""
    return {
        "logit_lens": logit_lens_table(neurons, lens, rows),
        "logit_lens_periods": logit_lens_periods(neurons, lens, fraction, periods, harmonics),
    }


def neuron_logit_lens(
    neurons: pd.DataFrame, grids: Mapping[str, np.ndarray], figure_ranks: Sequence[int], periods=PERIODS
) -> dict[str, pd.DataFrame]:
    """Rule neuron_logit_lens: the App. F tables of the top units (``neurons``, by place and then
    attribution rank as the rows of ``grids``: the neuron stage's grids.h5, with ``place``,
    ``rank``, ``lens`` over ``lens_tokens``), Fig. F3 showing the units of Fig. 8's
    ``figure_ranks`` of every place.  By what the units' lens reads
    (:func:`helixclock.prompts.layout.whole_numbers`; :func:`helixclock.stages.neurons.places.place_lens`):
    at the whole number (one-token numbers) the paper's, :func:`neuron_lens_tables` over the 199
    answer tokens, whose ``logit_lens_null`` has no rows (F4 keeps its definition); at the
    digits' places :func:`digit_lens_tables`, F4 with its base rate (``logit_lens_null``; the
    grids' ``layer_lens``, every neuron's lens)."""
    tokens = [t.decode() if isinstance(t, bytes) else str(t) for t in grids["lens_tokens"]]
    units = [p.decode() if isinstance(p, bytes) else str(p) for p in grids["place"]]
    if list(zip(units, grids["layer"], grids["neuron"])) != list(
        zip(neurons["place"], neurons["layer"], neurons["neuron"])
    ):
        raise ValueError("the neuron table's rows are not the grids' units (place, layer, neuron) in order")
    places = neurons["place"].to_numpy()
    at = {p: np.flatnonzero(places == p) for p in dict.fromkeys(places)}
    rows = [int(idx[r]) for idx in at.values() for r in figure_ranks if r < len(idx)]
    if whole_numbers(places):
        return {
            **neuron_lens_tables(neurons, grids["lens"], rows, periods=periods),
            "logit_lens_null": pd.DataFrame(columns=list(NULL_COLUMNS)),  # the digit lens's null only
        }
    every = grids["layer_lens"]  # every neuron's lens: F4's base rate
    return digit_lens_tables(neurons, grids["lens"], tokens, rows, periods=periods, layer_lens=every)


# ------------------------------------------- F3, F4 for answers of several tokens: the digit lens
def predicted_digit_period(place, fitted_period) -> np.ndarray:
    """What a unit's fitted a+b period predicts for its lens over the digit tokens, by its place:
    at the units place a period T of a+b that divides 10 (2, 5, 10) is a period T of the units
    digit, so the unit writes the digits with period T; at the tens place T = 100 is period 10 of
    the tens digit (floor((a+b) / 10) mod 10 runs through 0..9 as a+b runs through a period).
    Anything else predicts nothing (NaN): the units digit does not fix a+b mod 100, the tens digit
    does not fix a+b mod 10, and the hundreds digit is 0 or 1."""
    place = np.asarray(place)
    T = np.asarray(fitted_period, dtype=np.float64)
    units = (place == "units") & np.isin(T, (2, 5, 10))
    tens = (place == "tens") & (T == 100)
    return np.where(units, T, np.where(tens, 10.0, np.nan))


def digit_lens_tables(
    neurons: pd.DataFrame,
    lens: np.ndarray,
    tokens: Sequence[str],
    rows=None,
    fraction: float = 0.8,
    periods=PERIODS,
    layer_lens: np.ndarray | None = None,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """Figs. F3 and F4 for answers of several tokens, from the units' digit logit lens (their write
    through the final norm and unembedding over the digit tokens 0..9 and the token that ends an
    answer, ``tokens``; row i of ``neurons`` is row i of ``lens``):

    * logit_lens (F3): the units ``rows`` (e.g. Fig. 8's), scaled by their largest
      post-activation; label, place, layer, neuron, max_a, max_b, token, logit.
    * logit_lens_periods (F4): the units of the ``fraction`` DE set whose fit's largest term is
      an a+b term of a period in ``periods``: place, fitted_period, lens_period (over the digits),
      predicted_period (:func:`predicted_digit_period`) and matches (lens = predicted; False where
      nothing is predicted); with its base rate (:func:`.lens_null.lens_null`: power_share, q,
      null_power_share, power_rank, n_null).
    * logit_lens_null: matches against the base rate, per place and over all
      (:data:`.lens_null.NULL_COLUMNS`); the null of each unit is the other neurons of its layer
      (``layer_lens`` [layers, d_mlp, tokens], every neuron's lens), or without it the other top
      units of its layer and place."""
    _check_neurons(neurons, lens, ("place", "layer", "neuron", "de", "max_post", "max_a", "max_b"))
    rows = np.arange(min(4, len(neurons))) if rows is None else np.asarray(rows)
    sub = neurons.iloc[rows]
    L = lens_at_max(np.asarray(lens)[rows], sub["max_post"].to_numpy())
    m = L.shape[1]
    rep = lambda col: np.repeat(sub[col].to_numpy(), m)  # noqa: E731
    cols = ("layer", "neuron", "place")
    table = pd.DataFrame(
        {
            "label": np.repeat([f"{neuron_label(la, n)} ({p})" for la, n, p in zip(*(sub[c] for c in cols))], m),
            "place": rep("place"),
            "layer": rep("layer"),
            "neuron": rep("neuron"),
            "max_a": rep("max_a"),
            "max_b": rep("max_b"),
            "token": np.tile(list(tokens), len(sub)),
            "logit": L.ravel(),
        }
    )
    units = unit_set(neurons["de"].to_numpy(), fraction)
    keep = units.mask & (neurons["top_variable"] == "a+b").to_numpy() & neurons["top_period"].isin(periods).to_numpy()
    per = neurons.loc[keep, ["place", "layer", "neuron", "de", "top_period"]].rename(
        columns={"top_period": "fitted_period"}
    )
    per = per.reset_index(drop=True)
    per["unit_set"] = units.name
    per["lens_period"] = digit_lens_period(np.asarray(lens)[keep])
    per["predicted_period"] = predicted_digit_period(per["place"], per["fitted_period"])
    per["matches"] = near(per["lens_period"], per["predicted_period"]) & per["predicted_period"].notna()
    per["matches_harmonic"] = per["matches"]  # over ten digits a harmonic T/k is another prediction: none counted
    per, null = lens_null(per, lens, neurons[["place", "layer", "neuron"]], layer_lens, seed=seed, unit_set=units.name)
    return {"logit_lens": table, "logit_lens_periods": per, "logit_lens_null": null}

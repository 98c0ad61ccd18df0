"""The neuron stage's tables (pandas only): figD9's ablation curve, the top neurons with their
TE, DE and fits (tabD2), the cumulative DE of figD11 and fig09's fit evaluation."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...prompts.layout import PLACE_ORDER, READINGS
from ...stats.statistics import Resampling, pair_values, positions_of, positive_shares, summarise

DE_SHARES = (0.7, 0.8, 0.9, 0.95)


def ablation_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """figD9: per k and reading (frozen / live kept neurons), accuracy (share of prompts still
    answered) and mean LD with intervals."""
    keys = ["ranking", "k", "fraction_kept", "reading"]
    acc = summarise(raw[raw["measure"] == "correct"], resampling, prefix="accuracy").drop(columns="measure")
    ld = summarise(raw[raw["measure"] == "ld"], resampling).drop(columns=["measure", "n_pairs"])
    return acc.merge(ld, on=keys).rename(columns={"n_pairs": "n_prompts"})


def top_neuron_table(
    attribution: pd.DataFrame, raw_de: pd.DataFrame, fits: pd.DataFrame, circuit_layers, resampling: Resampling
) -> pd.DataFrame:
    """One row per top unit (place, then rank order): te (the signed mean attribution), effect (its size
    the neurons are ranked by), de with its interval (signed mean over pairs), de_effect (the
    same size of the per-pair DEs: mean |DE| under the default ranking), de_over_te =
    de_effect / effect (the share of the neuron's effect that is direct, in the ranking's
    terms: a ratio of signed means divides by ~0 for a neuron whose effects cancel over pairs),
    whether its layer is a circuit MLP, and its fit (nrmse, a+b fraction, leading terms,
    dominant periods)."""
    de = summarise(raw_de, resampling, prefix="de").rename(columns={"de_mean": "de"})
    ranking = str(attribution["ranking"].iloc[0]) if len(attribution) else "signed"
    per_pair = pair_values(raw_de).astype(np.float64)
    with np.errstate(invalid="ignore"):
        sizes = {
            "mean_abs": np.nanmean(np.abs(per_pair), 1),
            "abs_mean": np.abs(np.nanmean(per_pair, 1)),
            "signed": np.nanmean(per_pair, 1),
        }[ranking]
    de["de_effect"] = sizes
    keys = ["place", "rank", "layer", "neuron"]
    top = attribution.merge(de, on=keys).rename(columns={"attribution": "te"})
    top["de_over_te"] = top["de_effect"] / top["effect"]
    top["in_circuit"] = top["layer"].isin(list(circuit_layers))
    out = top.merge(fits.drop(columns=["rank"], errors="ignore"), on=["place", "layer", "neuron"], how="left")
    # by place (the whole number; or units, tens, hundreds), then rank, as the grids' rows are
    out["_place"] = out["place"].map({p: i for i, p in enumerate(PLACE_ORDER)})
    return out.sort_values(["_place", "rank"]).drop(columns="_place").reset_index(drop=True)


def cumulative_de(neurons: pd.DataFrame) -> pd.DataFrame:
    """figD11: top neurons sorted by DE, the running share of their positive DE (a neuron of
    negative DE adds nothing: the share never passes 1, :func:`helixclock.stats.statistics.positive_shares`;
    NaN where no DE is positive) and where it first reaches each of DE_SHARES (``reaches``: on
    the row of the smallest count).  Fig. F4's set and paper_comparison's count are
    :func:`helixclock.stats.statistics.share_set`'s, of the signed total: the same counts where no DE is
    negative (the paper's top neurons)."""
    order, shares = positive_shares(neurons["de"].to_numpy())
    df = neurons.iloc[order].reset_index(drop=True)
    df["count"] = np.arange(1, len(df) + 1)
    df["cumulative_share"] = shares
    df["reaches"] = ""
    for share in DE_SHARES:
        hit = np.flatnonzero(df["cumulative_share"].to_numpy() >= share - 1e-12)
        if len(hit):
            df.loc[hit[0], "reaches"] = ",".join(x for x in (df.loc[hit[0], "reaches"], f"{share:.0%}") if x)
    extra = ["n_pairs"] if "n_pairs" in df else []  # the pairs behind each DE
    return df[["count", "rank", "layer", "neuron", "de", "cumulative_share", "reaches", "in_circuit", *extra]]


def fit_eval_table(raw: pd.DataFrame, resampling: Resampling) -> pd.DataFrame:
    """fig09: accuracy per k with actual and with fitted values, their ratio, and what was
    fitted (``quantity``)."""
    acc = summarise(raw[raw["measure"] == "correct"], resampling, prefix="accuracy")
    wide = acc.pivot_table(index="k", columns="preactivation", values="accuracy_mean").reset_index()
    wide.columns.name = None
    wide = wide.rename(columns={"actual": "actual_accuracy", "fitted": "fitted_accuracy"})
    wide["fitted_over_actual"] = wide["fitted_accuracy"] / wide["actual_accuracy"]
    wide["n_prompts"] = acc.groupby("k")["n_pairs"].min().reindex(wide["k"]).to_numpy()
    wide["quantity"] = raw["quantity"].iloc[0]
    return wide


def top_neurons_paper_table(neurons: pd.DataFrame) -> pd.DataFrame:
    """tabD2 (helixclock's table of the top neurons; the paper has none): rank, layer, neuron,
    TE (signed mean attribution), the ranked effect size, DE (signed mean) and its effect size,
    DE/TE of the effect sizes, and the Eq. 5 fit of N
    (NRMSE, leading terms, a+b fraction), the fit's columns naming what N is (``quantity``:
    the preactivation, or in a gated MLP act(gate)·up or the gate's preactivation); units of
    several places also their place (one place, the whole number of one-token numbers: no
    column, as the paper's neurons) and, at the digits' places, the digit basis's NRMSE beside
    Eq. 5's."""
    what = str(neurons["quantity"].iloc[0]) if "quantity" in neurons and len(neurons) else "preactivation"
    if neurons["place"].nunique() <= 1:
        neurons = neurons.drop(columns="place")
    cols = {
        "place": "place",
        "rank": "rank",
        "layer": "layer",
        "neuron": "neuron",
        "te": "TE",
        "effect": "effect (ranked)",
        "de": "DE",
        "de_effect": "DE effect",
        "de_over_te": "DE/TE (effects)",
        "nrmse": f"NRMSE of the {what} fit",
        "top_terms": f"top fitted terms of the {what}",
        "ab_fraction": "a+b fraction",
        "nrmse_digits": f"NRMSE of the {what} digit-basis fit",
        "better": "better basis",
    }
    return neurons[[c for c in cols if c in neurons]].rename(columns=cols)


def figure_grids(grids: dict, fitted: np.ndarray, table: pd.DataFrame, ranks, rows=None) -> pd.DataFrame:
    """fig08's data: the actual and fitted N(a, b) of the neurons at the given attribution ranks
    (those that are top neurons; or of the grids' ``rows``), long: layer, neuron, a, b, actual,
    fitted."""
    rows = (positions_of(grids["rank"], ranks) or [0]) if rows is None else list(rows)
    n_a, n_b = grids["pre"].shape[1:]
    a, b = np.meshgrid(np.arange(n_a), np.arange(n_b), indexing="ij")
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "layer": int(table["layer"].iloc[i]),
                    "neuron": int(table["neuron"].iloc[i]),
                    "a": a.ravel(),
                    "b": b.ravel(),
                    "actual": grids["pre"][i].ravel(),
                    "fitted": fitted[i].ravel(),
                }
            )
            for i in rows
        ],
        ignore_index=True,
    )


def circuit_layers(stages: pd.DataFrame) -> list[int]:
    """The circuit MLPs' layers (Fig. 7's ``mlp_stages``) where the units are read: the MLP stage's
    rows at the answer positions where it reads them (numbers of several tokens), else its rows
    at the last token (one-token numbers: their one answer position)."""
    at_answer = stages["reading"] == READINGS["answer"]
    return [int(x) for x in stages.loc[at_answer if at_answer.any() else slice(None), "layer"]]


def neuron_summary(
    raw: dict[str, pd.DataFrame], fits: pd.DataFrame, circuit_layers, resampling: Resampling
) -> dict[str, pd.DataFrame]:
    """Rule neuron_summary: the top neurons (Table D2's rows, ``neurons``), Fig. D9's curve
    (``ablation``), Fig. D11's cumulative DE and Fig. 9's table (``fit_eval``), from the model
    jobs' raw tables (attribution, direct_effects, ablation, fit_eval), the Eq. 5 fits' table and
    the circuit MLPs' layers (Fig. 7)."""
    neurons = top_neuron_table(raw["attribution"], raw["direct_effects"], fits, list(circuit_layers), resampling)
    return {
        "neurons": neurons,
        "ablation": ablation_table(raw["ablation"], resampling),
        "cumulative_de": cumulative_de(neurons),
        "fit_eval": fit_eval_table(raw["fit_eval"], resampling),
    }

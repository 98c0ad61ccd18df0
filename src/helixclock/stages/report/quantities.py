"""The quantity registry of the paper comparison: how the run's value of each number the
paper publishes (sections 3-5, appendices A and C-F; ``config/paper_values.yaml``) is found.

:data:`REGISTRY` maps each quantity id to the output tables it is read from
(:data:`TABLE_FILES`, paths with ``{model}``) and the function that extracts the run's value
from them (:class:`Quantity`); :func:`stage_boundary` is Fig. 7's first read-out circuit MLP.

Imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...outputs import COMPARED_TABLES
from ...statistics import share_set, smallest_k
from ...tasks import N_ANSWERS, TASKS

# Where each table lives (relative to the project folder; one place for every output path:
# helixclock.outputs)
TABLE_FILES = {key: path for key, (path, _) in COMPARED_TABLES.items()}

Tables = Mapping[str, "pd.DataFrame | dict"]


@dataclass(frozen=True)
class Quantity:
    """How the run's value of one quantity is found: the tables it needs (keys of
    :data:`TABLE_FILES`) and ``extract(tables, model) -> float`` (NaN where the run has no
    such value, e.g. k = 20 for a model with fewer heads)."""

    tables: tuple[str, ...]
    extract: Callable[[Tables, str], float]


# ---------------------------------------------------------------- small readers


def _at(df: pd.DataFrame, key: str, value, col: str) -> float:
    """``col`` of the first row where ``key == value`` (NaN if none)."""
    if key not in df.columns or col not in df.columns:
        raise KeyError(f"table lacks column {key!r} or {col!r}; it has {list(df.columns)}")
    rows = df.loc[df[key] == value, col]
    return float(rows.iloc[0]) if len(rows) else np.nan


def _first(df: pd.DataFrame, col: str) -> float:
    if col not in df.columns:
        raise KeyError(f"table lacks column {col!r}; it has {list(df.columns)}")
    return float(df[col].iloc[0]) if len(df) else np.nan


def _k_for(topk: pd.DataFrame, threshold: float) -> float:
    """The smallest k of a top-k curve reaching ``threshold`` in the authors' normalisation (by
    the largest effect over k); NaN when none does."""
    return smallest_k(topk, threshold, by="fraction_of_max", default=np.nan)


def stage_boundary(stages: pd.DataFrame) -> float:
    """The first read-out circuit MLP (Fig. 7): the layer b that best splits the circuit MLPs
    into builders before b (helix(a+b)/TE > DE/TE) and readers from b on (DE/TE >=
    helix(a+b)/TE), counting agreeing MLPs; ties go to the earliest b.  ``mlp_stages.csv``:
    layer, helix_sum_over_te, de_over_te."""
    st = stages.sort_values("layer")
    layers = st["layer"].to_numpy()
    if not len(layers):
        return np.nan
    build = (st["helix_sum_over_te"] > st["de_over_te"]).to_numpy()
    candidates = np.append(layers, layers[-1] + 1)
    score = [np.sum(build & (layers < b)) + np.sum(~build & (layers >= b)) for b in candidates]
    return float(candidates[int(np.argmax(score))])


def _category(t: Tables, category: str, what: str) -> float:
    cats = t["heads_categories"]
    layers = cats.loc[cats["category"] == category, "layer"]
    if what == "count":
        return float(len(layers))
    return float(getattr(layers, what)()) if len(layers) else np.nan


def _circuit_share(t: Tables, model: str) -> float:
    """Share of the top neurons (``neurons``: layer) in the circuit MLPs (mlp_stages' layers)."""
    return float(t["neurons"]["layer"].isin(t["mlp_stages"]["layer"]).mean())


def _de80(t: Tables) -> np.ndarray:
    """The top neurons holding 80% of the total DE (one definition: helixclock.statistics.share_set)."""
    return share_set(t["neurons"]["de"].to_numpy(), 0.8)


def _late_share(t: Tables, model: str) -> float:
    """Share of the 80% DE neurons (``neurons``: layer, de) in layers >= the run's stage boundary."""
    b = stage_boundary(t["mlp_stages"])
    layers = t["neurons"]["layer"].to_numpy()[_de80(t)]
    return float((layers >= b).mean()) if len(layers) and np.isfinite(b) else np.nan


def _accuracy_at_fraction(t: Tables, model: str, fraction: float = 0.01, reading: str = "frozen") -> float:
    """Accuracy at ``fraction`` of the neurons kept (``neuron_ablation``: fraction_kept,
    accuracy_mean, reading), interpolated linearly in log(fraction_kept), under one reading of
    "kept" (frozen at the unablated values, or live; a table without readings is frozen)."""
    df = t["neuron_ablation"]
    if "reading" in df.columns:
        df = df[df["reading"] == reading]
    elif reading != "frozen":
        return np.nan
    df = df.sort_values("fraction_kept")
    x, y = np.log(df["fraction_kept"].to_numpy(float)), df["accuracy_mean"].to_numpy(float)
    if not len(x) or not (x[0] <= np.log(fraction) <= x[-1]):
        return np.nan
    return float(np.interp(np.log(fraction), x, y))


def _line(t: Tables, reading: str, col: str, alpha: int | None = None) -> float:
    """``col`` of App. E's table under one reading of "a line fitted to the numbers"
    (``linear_addition``: alpha, reading, ...); at ``alpha`` or the first row.  A table
    without readings is the line through the points."""
    df = t["linear_addition"]
    if "reading" in df.columns:
        df = df[df["reading"] == reading]
    elif reading != "points":
        return np.nan
    return _at(df, "alpha", alpha, col) if alpha is not None else _first(df, col)


def _fit_recovery(t: Tables, model: str) -> float:
    """Mean over k of fitted / actual accuracy (``neuron_fit_eval``: k, actual_accuracy,
    fitted_accuracy; k with actual accuracy 0 skipped)."""
    df = t["neuron_fit_eval"]
    ok = df["actual_accuracy"] > 0
    return float((df.loc[ok, "fitted_accuracy"] / df.loc[ok, "actual_accuracy"]).mean()) if ok.any() else np.nan


def _logit_top_period(t: Tables, model: str) -> float:
    """The most common top period of the detrended final logits (period 199 / k of the
    modal frequency k; k = 20 is 9.95, the paper's "10")."""
    k = t["logit_line_fourier"]["top_frequency"].mode()
    return float(N_ANSWERS / k.min()) if len(k) else np.nan


# ---------------------------------------------------------------- the registry

TAB01_COLUMNS = {"full": "Full", "pca": "PCA", "helix": "Helix", "circle": "Circle", "poly": "Poly"}


def _registry() -> dict[str, Quantity]:
    reg: dict[str, Quantity] = {
        "add_accuracy": Quantity(("tabA1",), lambda t, m: _at(t["tabA1"], "model", m, "accuracy")),
        "n_heads_total": Quantity(("card",), lambda t, m: float(t["card"]["n_layers"] * t["card"]["n_heads"])),
        "heads_k_for_80pct": Quantity(("heads_topk",), lambda t, m: _k_for(t["heads_topk"], 0.8)),
        "heads_fraction_k20": Quantity(("heads_topk",), lambda t, m: _at(t["heads_topk"], "k", 20, "fraction_of_max")),
        "mixed_fraction_m4": Quantity(("heads_mixed",), lambda t, m: _at(t["heads_mixed"], "m", 4, "fraction")),
        "mixed_fraction_m0": Quantity(("heads_mixed",), lambda t, m: _at(t["heads_mixed"], "m", 0, "fraction")),
        "mlp_k_for_95pct": Quantity(("mlp_topk",), lambda t, m: _k_for(t["mlp_topk"], 0.95)),
        "mlp_circuit_first_layer": Quantity(("mlp_stages",), lambda t, m: float(t["mlp_stages"]["layer"].min())),
        "mlp_circuit_last_layer": Quantity(("mlp_stages",), lambda t, m: float(t["mlp_stages"]["layer"].max())),
        "mlp_stage_boundary": Quantity(("mlp_stages",), lambda t, m: stage_boundary(t["mlp_stages"])),
        "n_top_neurons": Quantity(("neurons",), lambda t, m: float(len(t["neurons"]))),
        "neuron_accuracy_at_1pct": Quantity(("neuron_ablation",), _accuracy_at_fraction),
        "neuron_accuracy_at_1pct_live": Quantity(
            ("neuron_ablation",), lambda t, m: _accuracy_at_fraction(t, m, reading="live")
        ),
        "top_neurons_in_circuit_share": Quantity(("neurons", "mlp_stages"), _circuit_share),
        "n_neurons_de80": Quantity(("neurons",), lambda t, m: float(_de80(t).sum())),
        "de80_late_share": Quantity(("neurons", "mlp_stages"), _late_share),
        "neuron_fit_recovery": Quantity(("neuron_fit_eval",), _fit_recovery),
        "model_accuracy_alpha100": Quantity(
            ("linear_addition",), lambda t, m: _line(t, "points", "model_accuracy", 100)
        ),
    }
    for reading in ("points", "regression", "regression_heldout"):  # App. E's readings of "a line"
        suffix = "" if reading == "points" else f"_{reading}"
        reg[f"line_r2{suffix}"] = Quantity(("linear_addition",), lambda t, m, r=reading: _line(t, r, "line_r2"))
        reg[f"linear_accuracy_alpha100{suffix}"] = Quantity(
            ("linear_addition",), lambda t, m, r=reading: _line(t, r, "linear_accuracy", 100)
        )
    reg |= {
        "carry_test_p": Quantity(("carry_test",), lambda t, m: _at(t["carry_test"], "split", ">= 10 (carry)", "p")),
        "carry_test_p_authors": Quantity(
            ("carry_test",), lambda t, m: _at(t["carry_test"], "split", "> 10 (authors' code)", "p")
        ),
        "logit_top_period": Quantity(("logit_line_fourier",), _logit_top_period),
        "logit_slope_negative_share": Quantity(
            ("logit_line_fourier",), lambda t, m: float((t["logit_line_fourier"]["slope"] < 0).mean())
        ),
    }
    for col in ("wrong_share", "numeric_share_of_wrong", "minus10_share", "plus10_share", "top2_cumulative_share"):
        reg[col] = Quantity(("error_summary",), lambda t, m, c=col: _first(t["error_summary"], c))
    for name, task in TASKS.items():
        if name != "add":
            reg[f"{name}_accuracy"] = Quantity(
                ("tabC1",), lambda t, m, lb=task.label: _at(t["tabC1"], "task", lb, "accuracy")
            )
        for key, col in TAB01_COLUMNS.items():
            reg[f"tab01_{name}_{key}"] = Quantity(
                ("tab01",), lambda t, m, lb=task.label, c=col: _at(t["tab01"], "task", lb, c)
            )
    for cat, key in (("a,b", "ab"), ("a+b", "sum"), ("mixed", "mixed")):
        reg[f"n_{key}_heads"] = Quantity(("heads_categories",), lambda t, m, c=cat: _category(t, c, "count"))
        reg[f"{key}_heads_layer_min"] = Quantity(("heads_categories",), lambda t, m, c=cat: _category(t, c, "min"))
        reg[f"{key}_heads_layer_max"] = Quantity(("heads_categories",), lambda t, m, c=cat: _category(t, c, "max"))
    return reg


REGISTRY: dict[str, Quantity] = _registry()

"""A planted results folder: every table the report's paper comparison reads
(helixclock.stages.report.quantities: TABLE_FILES and REGISTRY), written with known answers, and
the value of each quantity they give.  One function a kind of table, each returning the
quantities its tables give; :func:`synthetic_results` writes them all."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from helixclock.jobs.preconditions import LEFT_OUT_COLUMNS
from helixclock.stages.report.quantities import TABLE_FILES

LAST = "last token"  # the one reading of the last-token stages' tables of a one-token model
TASK_LABELS = ["a+b", "a-23", "a//5", "a*1.5", "a mod 2", "x-a=0, x="]  # Table 1's rows


def write_table(root: Path, key: str, model: str, obj) -> None:
    """``obj`` (a table, or a dict: JSON) where the registry reads table ``key`` of ``model``."""
    path = root / TABLE_FILES[key].format(model=model)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(obj, dict):
        path.write_text(json.dumps(obj))
    else:
        obj.to_csv(path, index=False)


def model_card(root: Path, model: str) -> dict:
    """The model card: 28 layers of 16 heads."""
    write_table(root, "card", model, {"n_layers": 28, "n_heads": 16})
    return {"n_heads_total": 448}


def task_tables(root: Path, model: str, scale: float = 1.0) -> dict:
    """Table 1 (``scale`` multiplies its Full a+b), its left-out tasks (none: every task ran) and
    Table C1's accuracy of the other tasks."""
    write_table(
        root,
        "tab01",
        model,
        pd.DataFrame({"task": TASK_LABELS, "Full": scale * 8.0, "PCA": 6.0, "Helix": 7.0, "Circle": 6.5, "Poly": 3.0}),
    )
    write_table(root, "tab01_left_out", model, pd.DataFrame(columns=LEFT_OUT_COLUMNS))  # every task ran
    write_table(
        root,
        "tabC1",
        model,
        pd.DataFrame(
            {"task": TASK_LABELS[1:], "domain": "", "prompt": "", "n": 100, "accuracy": [0.9, 0.95, 0.8, 0.9, 0.96]}
        ),
    )
    return {"tab01_add_full": 8.0 * scale, "tab01_mod2_poly": 3.0, "div5_accuracy": 0.95}


def head_tables(root: Path, model: str) -> dict:
    """The heads' top-k curve (80% at k = 20), the mixed heads' curve and the 20 heads'
    categories (11 a,b heads in layers 9-18, 5 a+b heads in 19-26, 4 mixed in 15-18)."""
    k = np.arange(1, 26)
    write_table(
        root, "heads_topk", model, pd.DataFrame({"reading": LAST, "k": k, "fraction_of_max": k / 25, "smallest_k": 20})
    )
    write_table(
        root,
        "heads_mixed",
        model,
        pd.DataFrame({"reading": LAST, "m": np.arange(21), "fraction": 0.7 + 0.01 * np.arange(21)}),
    )
    cats = ["a,b"] * 11 + ["a+b"] * 5 + ["mixed"] * 4
    layers = [9, 10, 11, 12, 13, 14, 9, 10, 12, 16, 18, 19, 24, 25, 26, 26, 15, 16, 17, 18]
    write_table(
        root, "heads_categories", model, pd.DataFrame({"reading": LAST, "layer": layers, "head": 0, "category": cats})
    )
    return {
        "heads_k_for_80pct": 20,
        "heads_fraction_k20": 0.8,
        "mixed_fraction_m4": 0.74,
        "mixed_fraction_m0": 0.7,
        "n_ab_heads": 11,
        "n_sum_heads": 5,
        "n_mixed_heads": 4,
        "ab_heads_layer_min": 9,
        "ab_heads_layer_max": 18,
        "sum_heads_layer_min": 19,
        "sum_heads_layer_max": 26,
        "mixed_heads_layer_min": 15,
        "mixed_heads_layer_max": 18,
    }


def mlp_tables(root: Path, model: str) -> dict:
    """The MLPs' top-k curve over 28 layers (95% at k = 5) and the stages of the circuit's 11
    MLPs (layers 14-27, builders before 19)."""
    k = np.arange(1, 29)
    write_table(root, "mlp_topk", model, pd.DataFrame({"reading": LAST, "k": k, "fraction_of_max": 1 - 0.5**k}))
    circuit = [14, 16, 17, 18, 19, 20, 21, 22, 23, 26, 27]
    build = np.array([l < 19 or l == 21 for l in circuit])  # MLP21 looks like a builder: still 19
    write_table(
        root,
        "mlp_stages",
        model,
        pd.DataFrame(
            {
                "reading": LAST,
                "layer": circuit,
                "helix_sum_over_te": np.where(build, 0.8, 0.2),
                "de_over_te": np.where(build, 0.1, 0.6),
            }
        ),
    )
    return {"mlp_k_for_95pct": 5, "mlp_circuit_first_layer": 14, "mlp_circuit_last_layer": 27, "mlp_stage_boundary": 19}


def neuron_tables(root: Path, model: str) -> dict:
    """The top neurons, the accuracy as neurons are ablated (frozen and live readings) and the
    fitted neurons' accuracy."""
    # 10 top neurons: 7 in circuit MLPs; DE 5, 3, 1, 1, 0 ... -> the 80% set is the first two
    write_table(
        root,
        "neurons",
        model,
        pd.DataFrame(
            {
                "layer": [20, 22, 14, 5, 16, 3, 27, 26, 2, 17],
                "neuron": np.arange(10),
                "de": [5, 3, 1, 1, 0, 0, 0, 0, 0, 0],
            }
        ),
    )
    fractions = [0.001, 0.005, 0.02, 1.0]
    write_table(
        root,
        "neuron_ablation",
        model,
        pd.DataFrame(
            {
                "fraction_kept": fractions * 2,
                "reading": ["frozen"] * 4 + ["live"] * 4,
                "accuracy_mean": [0.2, 0.4, 0.6, 1.0, 0.0, 0.1, 0.2, 1.0],
            }
        ),
    )
    write_table(
        root,
        "neuron_fit_eval",
        model,
        pd.DataFrame({"k": [1, 10, 100], "actual_accuracy": [0.0, 0.5, 0.8], "fitted_accuracy": [0.0, 0.25, 0.6]}),
    )
    return {
        "n_top_neurons": 10,
        "top_neurons_in_circuit_share": 0.7,
        "n_neurons_de80": 2,
        "de80_late_share": 1.0,
        "neuron_accuracy_at_1pct": 0.5,
        "neuron_accuracy_at_1pct_live": 0.15,
        "neuron_fit_recovery": 0.625,
    }


def linear_addition_table(root: Path, model: str) -> dict:
    """Linear addition by its three readings (points, regression, held-out regression) at two alphas."""
    write_table(
        root,
        "linear_addition",
        model,
        pd.DataFrame(
            {
                "alpha": [50, 100] * 3,
                "reading": np.repeat(["points", "regression", "regression_heldout"], 2),
                "linear_accuracy": [0.3, 0.1, 0.5, 0.25, 0.2, 0.05],
                "model_accuracy": [0.9, 0.85] * 3,
                "n_problems": [1, 2] * 3,
                "line_r2": np.repeat([0.08, 0.998, 0.9], 2),
            }
        ),
    )
    return {
        "line_r2": 0.08,
        "line_r2_regression": 0.998,
        "line_r2_regression_heldout": 0.9,
        "linear_accuracy_alpha100": 0.1,
        "linear_accuracy_alpha100_regression": 0.25,
        "linear_accuracy_alpha100_regression_heldout": 0.05,
        "model_accuracy_alpha100": 0.85,
    }


def mistake_tables(root: Path, model: str) -> dict:
    """The model's mistakes: the error summary and the carry test by both splits."""
    summary = {
        "wrong_share": 0.2,
        "numeric_share_of_wrong": 0.6,
        "minus10_share": 0.4,
        "plus10_share": 0.3,
        "top2_cumulative_share": 0.7,
    }
    write_table(root, "error_summary", model, pd.DataFrame([summary]))
    write_table(
        root, "carry_test", model, pd.DataFrame({"split": [">= 10 (carry)", "> 10 (authors' code)"], "p": [0.3, 0.01]})
    )
    return {"wrong_share": 0.2, "carry_test_p": 0.3, "carry_test_p_authors": 0.01}


def logit_lines_table(root: Path, model: str) -> dict:
    """The logit lines' Fourier reading: 3 of 4 slopes negative, the modal top frequency 20 (period 199 / 20)."""
    write_table(
        root, "logit_line_fourier", model, pd.DataFrame({"slope": [-1, -2, 3, -1], "top_frequency": [20, 20, 2, 1]})
    )
    return {"logit_top_period": 9.95, "logit_slope_negative_share": 0.75}


def accuracy_across_models(root: Path, model: str) -> dict:
    """Table A1, the addition accuracy of gptj, pythia and toy-gptj (one table for every model):
    its value depends on the model, so the tests check it themselves."""
    tab = pd.DataFrame(
        {
            "model": ["gptj", "pythia", "toy-gptj"],
            "task": "a+b",
            "prompt": "",
            "n": 10_000,
            "accuracy": [0.7245, 0.772, 0.5],
        }
    )
    write_table(root, "tabA1", model, tab)
    return {}


def synthetic_results(root: Path, model: str, scale: float = 1.0) -> dict:
    """Every table the registry reads for ``model``, with known answers (``scale`` multiplies
    Table 1's Full a+b); returns the expected value of each quantity."""
    return {
        **model_card(root, model),
        **task_tables(root, model, scale),
        **head_tables(root, model),
        **mlp_tables(root, model),
        **neuron_tables(root, model),
        **linear_addition_table(root, model),
        **mistake_tables(root, model),
        **logit_lines_table(root, model),
        **accuracy_across_models(root, model),
    }

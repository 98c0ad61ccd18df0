"""The results API's example (docs/examples/results_tour.py) on the tiny run of the main job:
it reads every model's accuracy, Table 1, Fig. 4's sweep, the findings and a layer of the cache
by the pipeline's names, and its numbers are those of the run's own tables."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from helpers.paths import REPO


def test_the_results_tour_runs_on_the_main_jobs_outputs(tiny_run, capsys):
    work, _ = tiny_run
    spec = importlib.util.spec_from_file_location("results_tour", REPO / "docs" / "examples" / "results_tour.py")
    tour = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tour)
    summary = tour.tour(str(work))
    assert sorted(summary) == ["toy-digits", "toy-gptj"]
    printed = capsys.readouterr().out
    for model, got in summary.items():
        accuracy = pd.read_csv(work / f"results/{model}/accuracy/add.csv")["correct"].mean()
        assert got["accuracy"] == pytest.approx(accuracy)
        sweep = pd.read_csv(work / f"results/{model}/helix/sweep.csv")
        helix = sweep[sweep["method"] == "helix"]
        assert got["best_layer"] == int(helix.loc[helix["ld_mean"].idxmax(), "layer"])
        findings = pd.read_csv(work / f"results/{model}/findings/contrasts.csv")
        assert got["verdicts"] == findings["verdict"].value_counts().to_dict()
        assert 0 < got["r2"] <= 1 and np.isfinite(got["r2"])
        assert f"== {model}: a+b accuracy" in printed

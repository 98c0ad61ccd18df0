"""The whole DAG on the tiny config (tests/configs/tiny.yaml), end to end on the CPU."""

import json
import time

import h5py
import pandas as pd
import pytest
from dag import planned_jobs, snakemake

MODELS = ("toy-gptj", "toy-llama")


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("dag")
    t0 = time.time()
    snakemake(work, "--cores", "2")
    return work, time.time() - t0


def test_every_output_is_made(tiny_run):
    work, seconds = tiny_run
    for m in MODELS:
        for rel in ("model.json", "accuracy/add.csv", "accuracy/mod2.csv", "cache/residuals.h5",
                    "figures/figA1_accuracy_heatmap.pdf", "figures/figA1_accuracy_heatmap.png",
                    "tables/tabC1_other_tasks_accuracy.csv", "tables/tabC1_other_tasks_accuracy.md"):
            assert (work / "results" / m / rel).stat().st_size > 0, (m, rel)
        assert (work / "logs" / m / "accuracy.log").exists()
        assert (work / "logs" / m / "accuracy.benchmark.tsv").exists()
    tab = pd.read_csv(work / "results/all/tables/tabA1_prompts_accuracy.csv")
    assert list(tab.columns) == ["model", "task", "prompt", "n", "accuracy"]
    assert list(tab["model"]) == list(MODELS) and (tab["n"] == 10000).all()
    assert tab["prompt"].iloc[0] == "Output ONLY a number.\n{a}+{b}="


def test_tables_are_consistent(tiny_run):
    work, _ = tiny_run
    for m in MODELS:
        card = json.loads((work / f"results/{m}/model.json").read_text())
        acc = pd.read_csv(work / f"results/{m}/accuracy/add.csv")
        assert len(acc) == 10000 and set(acc.columns) >= {"a", "b", "correct", "answer_logit", "rank"}
        assert ((acc["rank"] == 0) == acc["correct"]).all()
        tabc1 = pd.read_csv(work / f"results/{m}/tables/tabC1_other_tasks_accuracy.csv")
        assert list(tabc1["task"]) == ["a-23", "a//5", "a*1.5", "a mod 2", "x-a=0, x="]
        assert list(tabc1["n"]) == [77, 100, 50, 100, 100]
        mod2 = pd.read_csv(work / f"results/{m}/accuracy/mod2.csv")
        assert tabc1.loc[tabc1.task == "a mod 2", "accuracy"].item() == pytest.approx(mod2["correct"].mean())
        with h5py.File(work / f"results/{m}/cache/residuals.h5") as f:
            n_correct = int(acc["correct"].sum())
            assert f["a"].shape == (n_correct, card["n_layers"] + 1, card["d_model"])
            assert f["numbers"].shape == (121, card["n_layers"] + 1, card["d_model"])
            assert f.attrs["position_a"] == card["positions"]["add"]["a"]


def test_asking_for_one_figure_reruns_only_its_plotting_job(tiny_run):
    work, _ = tiny_run
    fig = work / "results/toy-gptj/figures/figA1_accuracy_heatmap.pdf"
    other = work / "results/toy-gptj/cache/residuals.h5"
    before = other.stat().st_mtime
    fig.unlink()
    target = "results/toy-gptj/figures/figA1_accuracy_heatmap.pdf"
    assert planned_jobs(work, target) == {"fig_accuracy_heatmap": 1}
    snakemake(work, "--cores", "1", target)
    assert fig.exists() and other.stat().st_mtime == before
    assert planned_jobs(work) == {}  # nothing else is out of date

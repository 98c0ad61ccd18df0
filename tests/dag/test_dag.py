"""The whole DAG on the tiny config (tests/configs/tiny.yaml), end to end on the CPU."""

import json
import re
import shutil
import subprocess
import sys
from datetime import datetime

import h5py
import pandas as pd
import pytest
import yaml
from helpers.dag import MODEL_RULES, TINY, changed_config, job_counts, planned_jobs, planned_jobs_cli, snakemake
from helpers.paths import REPO

from helixclock.project import outputs

MODELS = ("toy-gptj", "toy-digits")  # the tiny run's (tests/configs/tiny.yaml)


def test_every_output_is_made(tiny_run):
    work, seconds = tiny_run
    for m in MODELS:
        for rel in (
            "model.json",
            "accuracy/add.csv",
            "accuracy/mod2.csv",
            "cache/residuals.h5",
            "figures/figA1_accuracy_heatmap.pdf",
            "figures/figA1_accuracy_heatmap.png",
            "tables/tabC1_other_tasks_accuracy.csv",
            "tables/tabC1_other_tasks_accuracy.md",
        ):
            assert (work / "results" / m / rel).stat().st_size > 0, (m, rel)
        # a staged job's log and benchmark are named by its params hash (docs/running.md, "When a run fails")
        (log,) = (work / "logs" / m).glob("accuracy-*.log")
        assert re.fullmatch(r"accuracy-[0-9a-f]{10}\.log", log.name) and "loaded " + m in log.read_text()
        assert log.with_suffix(".benchmark.tsv").exists()
        assert not list((work / outputs.STAGING).rglob("*.*")), "a finished run leaves files in staging"
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
        # correct means no token scores higher (the first answer token's, for numbers of several tokens);
        # in bfloat16 an incorrect top token may tie the answer
        assert (acc.loc[acc["correct"], "rank"] == 0).all()
        if card["number_tokens"] == "one":  # one token: the top token is the whole answer
            assert ((acc["rank"] == 0) & ~acc["correct"]).mean() < 0.01
        tabc1 = pd.read_csv(work / f"results/{m}/tables/tabC1_other_tasks_accuracy.csv")
        assert list(tabc1["task"]) == ["a-23", "a//5", "a*1.5", "a mod 2", "x-a=0, x="]
        assert list(tabc1["n"]) == [77, 100, 50, 100, 100]
        mod2 = pd.read_csv(work / f"results/{m}/accuracy/mod2.csv")
        assert tabc1.loc[tabc1.task == "a mod 2", "accuracy"].item() == pytest.approx(mod2["correct"].mean())
        if card["number_tokens"] == "several":
            continue  # its cache, by token span: tests/dag/test_dag_several.py
        with h5py.File(work / f"results/{m}/cache/residuals.h5") as f:
            n_correct = int(acc["correct"].sum())
            assert f["a"].shape == (n_correct, card["n_layers"] + 1, card["d_model"])
            assert f["numbers"].shape == (121, card["n_layers"] + 1, card["d_model"])
            assert f.attrs["position_a"] == card["positions"]["add"]["a"]
            # the tiny registry loads toy-gptj in bfloat16, as the registry loads Llama on a GPU
            assert f.attrs["model_dtype"] == "torch.bfloat16" and f["a"].dtype == "float32"


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


def _job_spans(work):
    """(rule, model, GPU slot, start, end) of every job that claimed a slot, from its log."""
    spans = []
    for log in (work / "logs").glob("*/*.log"):
        text = log.read_text(errors="replace")
        slot = re.search(r"device slot: GPU (\S+)", text)
        if not slot:
            continue
        stamp = re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)", text, re.M)
        start = datetime.strptime(stamp[0], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        spans.append((log.stem, log.parent.name, slot.group(1), start, log.stat().st_mtime))
    return spans


def test_concurrent_model_jobs_get_different_gpu_slots(tiny_run):
    work, _ = tiny_run
    spans = _job_spans(work)
    assert {s[2] for s in spans} == {"0", "1"}
    # the jobs that claimed a slot are those of the rules that load a model (helpers.dag.MODEL_RULES),
    # answer_scores only for toy-digits, whose numbers take several tokens (Figs. F5, F6 of one-token
    # models read the accuracy sweep's logits)
    for model in MODELS:
        several = {"answer_scores"} if model == "toy-digits" else set()
        claimed = {s[0].rsplit("-", 1)[0] for s in spans if s[1] == model}
        assert claimed == MODEL_RULES - {"answer_scores"} | several, model
    overlapping = [(a, b) for i, a in enumerate(spans) for b in spans[i + 1 :] if a[3] < b[4] and b[3] < a[4]]
    assert overlapping, "no two model jobs ran at the same time"
    assert all(a[2] != b[2] for a, b in overlapping), overlapping


def test_a_changed_setting_reruns_only_the_jobs_that_read_it(tiny_run, tmp_path):
    """Rules carry only the config keys they read: a new MLP threshold replans the MLP table
    and what reads its circuit MLPs, and a new bootstrap count the summaries, never a job that
    loads a model."""
    work, _ = tiny_run
    assert planned_jobs(work) == {}
    mlp_config = changed_config(tmp_path, clock={"mlp_threshold": 0.5})
    mlp = planned_jobs(work, configfile=mlp_config)
    assert mlp == planned_jobs_cli(work, configfile=mlp_config)  # the API's dry run is the command line's
    print("\nclock.mlp_threshold=0.5 plans", mlp)
    assert {"mlp_summary", "fig_mlp_topk", "fig_mlp_stages"} <= set(mlp)
    assert not set(mlp) & MODEL_RULES
    assert not {"helix_summary", "head_summary", "last_token_summary"} & set(mlp)
    boot = planned_jobs(work, configfile=changed_config(tmp_path, helix={"bootstrap": 123}))
    print("helix.bootstrap=123 plans", boot)
    assert {"helix_summary", "head_summary", "mlp_summary", "last_token_summary"} <= set(boot)
    assert not set(boot) & MODEL_RULES


def test_a_models_own_layer_reruns_only_its_readers_of_that_layer(tiny_run, tmp_path):
    """Registry keys structure.layer and helix.figure_layer override the config's for one model:
    its jobs that read the layer (Figs. 2, B1-B4, App. E, Figs. 3, C1-C3) plan again, for that
    model alone, and no job that loads a model."""
    work, _ = tiny_run
    registry = yaml.safe_load((TINY.parent / "models.yaml").read_text())
    registry["toy-digits"]["structure"] = {"layer": 2}
    registry["toy-digits"]["helix"] = {"figure_layer": 2}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry))
    config = yaml.safe_load(TINY.read_text()) | {"registry": str(tmp_path / "models.yaml")}
    (tmp_path / "own_layer.yaml").write_text(yaml.safe_dump(config))
    planned = planned_jobs(work, configfile=tmp_path / "own_layer.yaml")
    print("toy-digits at layer 2 plans", planned)
    assert planned["number_structure"] == planned["linear_addition"] == planned["helix_figure_tables"] == 1
    assert planned["fig_distance_similarity"] == 1
    assert not set(planned) & MODEL_RULES


# what a project folder holds beside its results: the checkout (the tiny run's config included;
# its git metadata and lock files are what the run's provenance record names)
WORKFLOW = (
    "Snakefile",
    "workflow",
    "config",
    "scripts",
    "src",
    "envs",
    "profiles",
    "tests/configs",
    "requirements",
    ".git",
)


def test_a_finished_project_copied_to_another_folder_plans_nothing(tiny_run, tmp_path):
    """Every path Snakemake records is relative to the project folder (docs/outputs.md, "Outputs"), so a
    finished project copied elsewhere, .snakemake/ included and timestamps kept, plans no job.
    The copy holds the workflow too and runs as a user runs it: from its own folder, with its
    own Snakefile and a relative --configfile; the workflow and the results both move, and with
    the checkout its commit and lock files, so rule provenance's record stands.  (The run made
    no use of committed toys, resources/toys, so the copy holds none either.)"""
    work, _ = tiny_run
    project = tmp_path / "elsewhere" / "project"
    shutil.copytree(work, project, symlinks=True)
    for part in WORKFLOW:
        if (REPO / part).is_dir():
            shutil.copytree(REPO / part, project / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / part, project / part)
    cmd = [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--configfile", "tests/configs/tiny.yaml"]
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert job_counts(out) == {} and "Nothing to be done" in out, out[-4000:]

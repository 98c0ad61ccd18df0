"""The paper's models on a real cluster through Snakemake's command line (docs/gpus-and-clusters.md):
a GPT-J-6B-shaped model's dry run under the Slurm profile, a hub model fetched once on the submit
host and then run offline, and cross-model results that accumulate over commands."""

import json
import os
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.cluster import (
    GPTJ_PARAMETERS,
    ONE_TOKEN_MODEL_JOBS,
    PROFILE,
    dry_run_jobs,
    gptj_shaped_model,
    local_rules,
)
from helpers.dag import changed_config, job_counts, planned_jobs, snakemake
from helpers.paths import REPO
from safetensors.torch import load_file

from helixclock.jobs import placement
from helixclock.project import outputs
from helixclock.project.outputs import MODEL_JOBS


@pytest.fixture(scope="module")
def gptj_shaped(tmp_path_factory):
    """A model of GPT-J-6B's shape without its weights (helpers.cluster.gptj_shaped_model)."""
    return gptj_shaped_model(tmp_path_factory.mktemp("gptj-shape"))


def test_every_model_job_of_a_gptj_shaped_model_gets_a_gpu_and_its_weights(gptj_shaped, tmp_path):
    """A dry run under the Slurm profile: each job that loads GPT-J-6B asks for one GPU, host
    memory above its weights (bfloat16) and the CUDA context and GPU memory above its weights, no
    other job asks for a GPU, and every job sent to the cluster declares its memory and runtime;
    plots and tables stay on the submit host."""
    proc = snakemake(tmp_path, "-n", "--workflow-profile", str(PROFILE), configfile=gptj_shaped / "config.yaml")
    jobs = dry_run_jobs(proc.stdout + proc.stderr, local_rules(tmp_path, gptj_shaped / "config.yaml"))
    assert len(jobs) == sum(
        job_counts(
            snakemake(tmp_path, "-n", "--quiet", "rules", configfile=gptj_shaped / "config.yaml").stdout
        ).values()
    )
    weights_mb = GPTJ_PARAMETERS * 2 / 1e6
    assert {rule for rule, _, res in jobs if res.get("gpu") == "1"} == ONE_TOKEN_MODEL_JOBS
    for rule, local, res in jobs:
        if rule in MODEL_JOBS:
            assert not local and int(res["mem_mb"]) > weights_mb + placement.HOST_GPU_MB, (rule, res)
            assert int(res["gpu_mem_mb"]) > weights_mb, (rule, res)
        else:
            assert "gpu" not in res, (rule, res)  # no job outside MODEL_JOBS claims a GPU
        if not local:
            assert int(res["mem_mb"]) >= placement.MIN_MEM_MB and int(res["runtime"]) >= placement.MIN_MINUTES, rule
    submitted = ONE_TOKEN_MODEL_JOBS | {"model_card", "neuron_fits", "neuron_bases"} | set(placement.CACHE_DATASETS)
    assert {rule for rule, local, _ in jobs if not local} == submitted


# the jobs of the cross-model outputs (results/all), all local
CROSS_MODEL_RULES = {"tab_prompts_accuracy", "provenance", "paper_comparison", "cross_model_figures", "all"}
HUB = "helixclock-tests/toy-gptj"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_a_hub_model_is_fetched_once_on_the_submit_host_and_then_runs_offline(tmp_path):
    """A hub model (a committed toy's files planted in a Hugging Face cache as a snapshot of a
    pinned commit; no network): the first plan starts with download_model, a local job that,
    the run started offline, checks the cache; its record and the model card name the revision
    and the commit; afterwards a dry run plans no job that reaches the hub, and every job that
    loads the model reads download_model's record."""
    cache = tmp_path / "hub"
    snapshot = cache / f"models--{HUB.replace('/', '--')}" / "snapshots" / COMMIT
    shutil.copytree(REPO / outputs.COMMITTED_TOYS / "toy-gptj", snapshot)
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    entry = {k: v for k, v in registry["toy-gptj"].items() if k != "toy"}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"hub-toy": {**entry, "source": HUB, "revision": COMMIT}}))
    config = changed_config(tmp_path, "hub.yaml", models=["hub-toy"])
    config.write_text(yaml.safe_dump(yaml.safe_load(config.read_text()) | {"registry": str(tmp_path / "models.yaml")}))
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    env.pop("HELIXCLOCK_HUB_OFFLINE", None)
    work = tmp_path / "work"

    def plan():
        return job_counts(snakemake(work, "-n", "--quiet", "rules", configfile=config, env=env).stdout)

    first = plan()
    assert first["download_model"] == 1 and first["model_card"] == 1
    t0 = time.time()
    proc = snakemake(work, "--cores", "1", outputs.CARD.format(model="hub-toy"), configfile=config, env=env)
    assert re.search(r"^localrule download_model:", proc.stdout + proc.stderr, re.M)  # on the submit host
    record = json.loads((work / outputs.DOWNLOAD.format(model="hub-toy")).read_text())
    assert (record["source"], record["revision"], record["commit"]) == (HUB, COMMIT, COMMIT)
    assert {"config.json", "tokenizer.json", "model.safetensors"} <= set(record["files"])
    card = json.loads((work / outputs.CARD.format(model="hub-toy")).read_text())
    assert (card["source"], card["revision"], card["commit"]) == (HUB, COMMIT, COMMIT)
    weights = load_file(snapshot / "model.safetensors")
    tied = 1 if json.loads((snapshot / "config.json").read_text()).get("tie_word_embeddings") else 0
    embedding = weights["transformer.wte.weight"].numel()
    assert card["parameters"] == sum(w.numel() for w in weights.values()) - tied * embedding * (
        "lm_head.weight" in weights
    )
    log = (work / outputs.log("download_model", "hub-toy")).read_text()
    assert "the cache alone" in log
    print(f"\ndownload_model and the model card from the planted cache: {time.time() - t0:.0f} s")
    after = plan()
    assert "download_model" not in after and "model_card" not in after
    assert ONE_TOKEN_MODEL_JOBS <= set(after)  # every model job still to run, all offline
    rules = _rules_reading(work, config, env, outputs.DOWNLOAD.format(model="hub-toy"))
    assert ONE_TOKEN_MODEL_JOBS | {"other_tasks_left_out"} <= rules


def _rules_reading(work: Path, config: Path, env: dict, path: str) -> set[str]:
    """The rules of the planned jobs whose inputs include ``path`` (a dry run's job list)."""
    proc = snakemake(work, "-n", configfile=config, env=env)
    blocks = re.split(r"\n(?=(?:local)?rule \w+:\n)", proc.stdout + proc.stderr)
    return {
        re.match(r"(?:local)?rule (\w+):", b).group(1)
        for b in blocks
        if re.match(r"(?:local)?rule \w+:", b) and re.search(rf"^\s+input: .*{re.escape(path)}", b, re.M)
    }


def test_cross_model_results_accumulate_over_commands(tiny_run, tmp_path):
    """results/all compares every model with finished results, not only the command's: after the
    run of both toys, a command for one of them plans no job of either model, only the cross-model
    jobs (local: their inputs, the command's models' files, changed); run, they still compare both,
    the other model's files read as they stand, and the other toy's command next ends the same."""
    work, _ = tiny_run
    project = tmp_path / "project"
    shutil.copytree(work, project, symlinks=True)
    both = ["toy-gptj", "toy-digits"]
    for model, other in (("toy-gptj", "toy-digits"), ("toy-digits", "toy-gptj")):
        config = changed_config(tmp_path, f"{model}.yaml", models=[model])
        assert set(planned_jobs(project, configfile=config)) <= CROSS_MODEL_RULES, model
        files = {p: p.stat().st_mtime_ns for p in (project / "results" / other).rglob("*") if p.is_file()}
        snakemake(project, "--cores", "2", configfile=config)
        assert list(pd.read_csv(project / "results/all/tables/tabA1_prompts_accuracy.csv")["model"]) == both
        assert sorted(pd.read_csv(project / "results/all/tables/paper_comparison.csv")["model"].unique()) == sorted(
            both
        )
        record = json.loads((project / outputs.RECORD).read_text())
        assert sorted(record["models"]) == sorted(record["weights"]) == sorted(both)
        assert {p: p.stat().st_mtime_ns for p in files} == files, f"{other}'s results touched by {model}'s command"
        assert planned_jobs(project, configfile=config) == {}

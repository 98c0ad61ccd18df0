"""The tiny DAG sent to a real (single-node, localhost) Slurm through profiles/slurm."""

import json
import re
import time

import pandas as pd
import pytest
import torch
from helpers.dag import snakemake
from helpers.paths import REPO
from helpers.slurm_cluster import LocalSlurm, ensure_installed
from safetensors.torch import load_file

from helixclock.jobs import placement
from helixclock.project import outputs
from helixclock.prompts.tasks import TASKS

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm")
    with open(root / "install.log", "w") as log:
        installed = ensure_installed(log)
    slurm = LocalSlurm(root)
    try:
        slurm.start()
        yield slurm, installed
    finally:
        slurm.stop()


# Two model jobs prove the executor path: the toy's training and its accuracy job, which reads
# the weights the first one published, both through sbatch to the GPU partition the profile's
# partitions.yaml names (the local cluster declares it, its GPUs backed by /dev/null), each
# taking its GPU from Slurm with the memory and runtime its rule declares; the model card
# between them goes through sbatch to the CPU partition, the table after them (a local rule)
# does not.  (Every model job of the DAG runs in the local run; the executor does not look
# inside a job.)
MODEL = "toy-gptj"
TARGET = outputs.table("tabC1_other_tasks_accuracy", MODEL)[0]
SUBMITTED = {"train_toy", "model_card", "accuracy"}  # the jobs of TARGET that are not local rules
TABLES = sorted([outputs.accuracy(t, MODEL) for t in TASKS] + [TARGET])  # every table they make


@pytest.fixture(scope="session")
def slurm_run(cluster, tmp_path_factory):
    """TARGET made through sbatch in a folder of its own: the folder, the console, the seconds,
    the submissions it made.  Session-scoped, and asked for before ``tiny_run`` by the test, so
    it runs while the local run is still going (conftest.py puts this test first among those
    that read the whole-DAG runs)."""
    slurm, _ = cluster
    work = tmp_path_factory.mktemp("slurm-run")
    before = slurm.submissions()
    t0 = time.time()
    proc = snakemake(
        work,
        TARGET,
        "--workflow-profile",
        str(REPO / "profiles" / "slurm"),
        "--slurm-no-account",
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--seconds-between-status-checks",
        "2",
        "--max-threads",
        "1",
        "--config",
        f'models=["{MODEL}"]',
        "device=auto",  # the profile's device cuda lifted: this cluster's GPUs are /dev/null, torch a CPU build
        env=slurm.env,
        timeout=1200,
    )
    out = proc.stdout + proc.stderr
    jobs = {rule: slurm.job(jobid) for jobid, rule in re.findall(r"SLURM jobid (\d+) \(log: .*?/rule_(\w+)/", out)}
    return work, out, time.time() - t0, slurm.submissions() - before, jobs


def test_tiny_dag_through_slurm_equals_the_local_run(slurm_run, tiny_run):
    work, out, seconds, submissions, jobs = slurm_run
    local, _ = tiny_run
    submitted = out.count("has been submitted with SLURM jobid")
    # every job that is not a local rule went through sbatch; the publish jobs and the table did not
    assert submitted == len(SUBMITTED) and submissions == submitted
    assert set(re.findall(r"^rule (\w+):", out, re.M)) == SUBMITTED  # local rules print as "localrule"
    # the plugin placed them by partitions.yaml: the model jobs on the GPU partition with one GPU,
    # the card on the CPU partition without; each with its rule's memory and runtime (a toy's: the floors)
    assert set(jobs) == SUBMITTED
    for rule, job in jobs.items():
        gpu = rule in outputs.MODEL_JOBS
        assert job["Partition"] == ("gpu" if gpu else "cpu"), (rule, job)
        assert ("gpu:1" in job.get("TresPerJob", "")) == gpu, (rule, job)  # sbatch --gpus=1: "gres:gpu:1"
        floor = placement.MIN_MODEL_MB if gpu else placement.MIN_MEM_MB  # a toy's model jobs hold less than the floor
        assert job["MinMemoryNode"] == f"{floor}M" and job["TimeLimit"] == "00:30:00", (rule, job)
    gpu_logs = [p for p in (work / "logs" / MODEL).glob("*.log") if "Slurm job" in p.read_text()]
    assert sorted(p.name.rsplit("-", 1)[0] for p in gpu_logs) == ["accuracy", "train_toy"]  # GPUs from Slurm
    tables = sorted(str(p.relative_to(work)) for p in (work / "results" / MODEL).rglob("*.csv"))
    assert tables == TABLES
    for rel in tables:
        pd.testing.assert_frame_equal(
            pd.read_csv(work / rel), pd.read_csv(local / rel), check_exact=False, rtol=1e-5, atol=1e-6, obj=str(rel)
        )
    m = MODEL
    a = load_file(local / f"resources/models/{m}/model.safetensors")
    b = load_file(work / f"resources/models/{m}/model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    acc = lambda root: json.loads((root / f"resources/models/{m}/training.json").read_text())["accuracy"]  # noqa: E731
    assert acc(local) == acc(work)
    print(f"\nSlurm: {submitted} jobs through sbatch, {seconds:.0f} s")

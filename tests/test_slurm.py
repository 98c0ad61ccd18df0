"""The tiny DAG sent to a real (single-node, localhost) Slurm through profiles/slurm."""

import json
import time

import pandas as pd
import pytest
import torch
from helpers.dag import snakemake
from helpers.paths import REPO
from helpers.slurm_cluster import LocalSlurm, ensure_installed
from safetensors.torch import load_file

pytestmark = [pytest.mark.slow, pytest.mark.slurm]


@pytest.fixture(scope="module")
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


# every model job of the DAG and the tables behind the figures (the plotting jobs, all local
# rules, are left to the local run)
TARGETS = [
    f"results/toy-gptj/{rel}"
    for rel in (
        "tables/fourier_peaks.csv",
        "helix/projection.csv",
        "helix/sweep.csv",
        "tables/tab01_other_tasks.csv",
        "last_token/fits.csv",
        "tables/tabD1_head_categories.csv",
        "mlps/mlp_stages.csv",
        "tables/tabD2_top_neurons.csv",
        "errors/carry_test.csv",
        "errors/linear_addition.csv",
    )
]


def test_tiny_dag_through_slurm_equals_the_local_run(cluster, tiny_run, tmp_path):
    slurm, _ = cluster
    local, _ = tiny_run
    before = slurm.submissions()
    t0 = time.time()
    proc = snakemake(
        tmp_path,
        *TARGETS,
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
        'models=["toy-gptj"]',
        env=slurm.env,
        timeout=1200,
    )
    seconds = time.time() - t0
    out = proc.stdout + proc.stderr
    submitted = out.count("has been submitted with SLURM jobid")
    # every job that runs a model went through sbatch; plots and tables are local rules
    assert submitted >= 10 and slurm.submissions() - before == submitted
    gpu_logs = [p for p in (tmp_path / "logs" / "toy-gptj").glob("*.log") if "Slurm job" in p.read_text()]
    assert len(gpu_logs) >= 10  # model jobs got their GPU from Slurm
    m = "toy-gptj"
    tables = sorted(p.relative_to(tmp_path) for p in (tmp_path / "results" / m).rglob("*.csv"))
    assert len(tables) >= 40
    for rel in tables:
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / rel), pd.read_csv(local / rel), check_exact=False, rtol=1e-5, atol=1e-6, obj=str(rel)
        )
    a = load_file(local / f"resources/models/{m}/model.safetensors")
    b = load_file(tmp_path / f"resources/models/{m}/model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    acc = lambda root: json.loads((root / f"resources/models/{m}/training.json").read_text())["accuracy"]  # noqa: E731
    assert acc(local) == acc(tmp_path)
    print(f"\nSlurm: {submitted} jobs through sbatch, {seconds:.0f} s")

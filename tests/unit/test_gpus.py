"""GPU slots (simulated devices) and out-of-memory retries, on the CPU."""

import logging
import os
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest
import torch
import yaml
from helpers.paths import REPO
from helpers.prompts import GPTJ_PROMPTS

from helixclock.environment import gpus

CLAIM = textwrap.dedent("""
    import os, sys, time
    from helixclock.environment.gpus import claim_gpu
    slot = claim_gpu(timeout=30, poll=0.1)
    print(slot, os.environ.get("CUDA_VISIBLE_DEVICES"), time.time(), flush=True)
    time.sleep(float(sys.argv[1]))
    print("done", time.time(), flush=True)
""")


def run_claims(tmp_path, n, hold, devices="2"):
    env = {**os.environ, "HELIXCLOCK_GPUS": devices, "HELIXCLOCK_GPU_LOCKS": str(tmp_path / "locks")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    procs = [
        subprocess.Popen([sys.executable, "-c", CLAIM, str(hold)], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    outs = [p.communicate(timeout=60)[0].split() for p in procs]
    return [(o[0], o[1], float(o[2]), float(o[4])) for o in outs]


def test_two_concurrent_jobs_get_two_devices(tmp_path):
    got = run_claims(tmp_path, 2, hold=1.5)
    assert sorted(g[0] for g in got) == ["0", "1"]
    assert all(slot == visible for slot, visible, _, _ in got)
    (_, _, s0, e0), (_, _, s1, e1) = got
    assert s0 < e1 and s1 < e0  # they really ran at the same time


def test_a_third_job_waits_for_a_free_slot(tmp_path):
    got = sorted(run_claims(tmp_path, 3, hold=1.0), key=lambda g: g[2])
    first_end = min(g[3] for g in got[:2])
    assert got[2][2] >= first_end - 0.05  # claimed only after one of the first two ended
    assert got[2][0] in {"0", "1"}


def test_a_crashed_job_releases_its_slot(tmp_path):
    env = {**os.environ, "HELIXCLOCK_GPUS": "1", "HELIXCLOCK_GPU_LOCKS": str(tmp_path / "locks")}
    holder = subprocess.Popen([sys.executable, "-c", CLAIM, "60"], env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().split()[0] == "0"
    holder.kill()  # no cleanup code runs
    holder.wait()
    got = run_claims(tmp_path, 1, hold=0.1, devices="1")
    assert got[0][0] == "0"


def test_no_gpu_means_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("HELIXCLOCK_GPUS", "0")
    monkeypatch.setattr(gpus, "_held", {})
    assert gpus.available_devices() == []
    assert gpus.claim_gpu() is None


def test_inside_slurm_the_assigned_gpu_is_used_without_a_lock(monkeypatch, tmp_path):
    monkeypatch.delenv("HELIXCLOCK_GPUS", raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # every job on the node may see "its" GPU as 0
    monkeypatch.setenv("HELIXCLOCK_GPU_LOCKS", str(tmp_path))
    monkeypatch.setattr(gpus, "_held", {})
    assert gpus.claim_gpu() == "0" and gpus.claim_gpu() == "0"
    assert not list(tmp_path.iterdir())  # no lock taken


def test_four_gpus_of_one_slurm_allocation_go_to_four_jobs(tmp_path):
    """``sbatch --gpus=4 --wrap 'snakemake --resources gpu=4'``: every job sees
    CUDA_VISIBLE_DEVICES=0,1,2,3 inside the allocation; four jobs at once get four devices, each
    narrowed to its own (the wrong method, the first visible device for each job, puts all four on 0)."""
    env = {**os.environ, "SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    env["HELIXCLOCK_GPU_LOCKS"] = str(tmp_path / "locks")
    env.pop("HELIXCLOCK_GPUS", None)
    procs = [
        subprocess.Popen([sys.executable, "-c", CLAIM, "1.5"], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    got = [p.communicate(timeout=60)[0].split() for p in procs]
    assert sorted(g[0] for g in got) == ["0", "1", "2", "3"]
    assert all(g[0] == g[1] for g in got)  # each job sees only its own device


def test_visible_devices_restrict_the_slots(monkeypatch, tmp_path):
    monkeypatch.delenv("HELIXCLOCK_GPUS", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    monkeypatch.setenv("HELIXCLOCK_GPU_LOCKS", str(tmp_path))
    monkeypatch.setattr(gpus, "_held", {})
    assert gpus.available_devices() == ["3", "5"]
    assert gpus.claim_gpu() == "3" and os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    for handle in gpus._held.values():  # a job's slot is released by the kernel when it ends
        handle.close()


def test_out_of_memory_halves_the_batch_and_gives_the_same_table(tiny_gptj, caplog):
    from helixclock.patching import PatchingEngine
    from helixclock.prompts.tasks import TASKS
    from helixclock.stages.accuracy.sweep import task_accuracy

    full, _ = task_accuracy(tiny_gptj, TASKS["sub23"], GPTJ_PROMPTS["sub23"], PatchingEngine(tiny_gptj, batch_size=64))
    engine = PatchingEngine(tiny_gptj, batch_size=64)
    real = engine.trace
    seen = []

    def small_memory(ids, *args, **kwargs):  # a device that fits 20 prompts at a time
        seen.append(ids.shape[0])
        if ids.shape[0] > 20:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(ids, *args, **kwargs)

    engine.trace = small_memory
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        retried, _ = task_accuracy(tiny_gptj, TASKS["sub23"], GPTJ_PROMPTS["sub23"], engine)
    pd.testing.assert_frame_equal(retried, full)
    assert seen[:3] == [64, 32, 16] and max(seen[3:]) <= 16
    assert "retrying with batch size 32" in caplog.text and "retrying with batch size 16" in caplog.text
    assert engine.batches.batch_size == 16  # later calls keep the smaller batch


class FakeJob:
    """What pipeline.start reads of Snakemake's ``snakemake`` object in a model job's script."""

    def __init__(self, tmp_path, device, gpu=1):
        self.log = [str(tmp_path / "job.log")]
        self.rule, self.threads = "helix_patching", 1
        self.wildcards = {"model": "gptj"}
        self.resources = {"gpu": gpu}
        self.params = type("Params", (), {"device": device})()


def test_a_gpu_job_without_cuda_stops_at_once_naming_the_torch_build(monkeypatch, tmp_path):
    """Config key device cuda (the Slurm profile's) on this machine's CPU build of torch: the job
    stops in pipeline.start, before anything is loaded, and its one line names the build; the
    embedded default (device auto) and a job that declares no GPU go on, on the CPU."""
    from helixclock.jobs import pipeline

    monkeypatch.setenv("HELIXCLOCK_GPUS", "0")
    monkeypatch.setattr(gpus, "_held", {})
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    assert not torch.cuda.is_available()
    t0 = time.perf_counter()
    with pytest.raises(gpus.NoCudaError) as err:
        pipeline.start(FakeJob(tmp_path, "cuda"))
    assert time.perf_counter() - t0 < 5
    message = str(err.value)
    assert f"torch {torch.__version__}" in message and "a CPU build, without CUDA" in message
    assert "helix_patching of gptj" in message and "'cuda'" in message
    pipeline.start(FakeJob(tmp_path, "auto"))  # the embedded default falls back to the CPU
    pipeline.start(FakeJob(tmp_path, "cuda", gpu=0))  # a table job never needs CUDA


def test_the_slurm_profile_asks_model_jobs_for_cuda():
    """The profile's configfiles set config key device to cuda (whatever --config adds), and it
    keeps going past one model's failure, with a bounded number of local cores."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    [site] = profile["configfiles"]
    assert yaml.safe_load((REPO / site).read_text())["device"] == "cuda"
    assert profile["keep-going"] is True and 1 <= profile["local-cores"] <= 8

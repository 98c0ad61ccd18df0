"""A job that fails, is refused or is killed never invalidates finished work (docs/running.md, "When a
run fails"): on a copy of the finished tiny run, each failing command leaves every output as it
was, and the original command afterwards plans no job."""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers.dag import changed_config, planned_jobs, snakemake, snakemake_command

from helixclock.project.outputs import STAGING


@pytest.fixture(scope="module")
def finished(tiny_run, tmp_path_factory):
    """A copy of the finished tiny run (mtimes and Snakemake's records kept), for commands that
    fail on purpose."""
    work = tmp_path_factory.mktemp("failures") / "run"
    shutil.copytree(tiny_run[0], work, symlinks=True)
    assert planned_jobs(work) == {}
    return work


def outputs(work: Path) -> dict[str, float]:
    """Every published output and its modification time."""
    return {
        str(p.relative_to(work)): p.stat().st_mtime_ns
        for top in ("results", "resources")
        for p in (work / top).rglob("*")
        if p.is_file()
    }


def assert_nothing_lost(work: Path, before: dict[str, float]) -> None:
    assert outputs(work) == before
    assert planned_jobs(work) == {}, "the original command plans jobs after a failed run"


def test_a_model_job_on_a_missing_gpu_changes_nothing(finished, tmp_path):
    """device: cuda passes the DAG (a login node need not have the GPU its jobs get) but this
    machine has none: every model job stops as it starts, and nothing it would have replaced
    is touched."""
    before = outputs(finished)
    proc = snakemake(finished, "--cores", "2", configfile=changed_config(tmp_path, device="cuda"), check=False)
    assert proc.returncode != 0
    logs = [p.read_text() for p in (finished / "logs").glob("*/accuracy-*.log")]
    found = "config key device is 'cuda', but torch"  # helixclock.environment.gpus.require_cuda, before the model loads
    assert any(found in text and "finds no CUDA device" in text for text in logs)
    assert_nothing_lost(finished, before)


def test_a_refused_model_job_changes_nothing(finished, tmp_path):
    """minimum.correct_prompts beyond what the accuracy table gives (known only once the model
    has answered): the residual cache refuses before it loads the model, with the model, the
    rule, the minimum and the count found.  (A large minimum.pairs would not do: a stage runs
    with min(n_pairs, minimum.pairs) pairs, so it only lowers the bar.)"""
    before = outputs(finished)
    config = changed_config(tmp_path, minimum={"correct_prompts": 10**6})
    proc = snakemake(finished, "--cores", "2", configfile=config, check=False)
    assert proc.returncode != 0
    assert re.search(
        r"helixclock: toy-(gptj|digits): (residual_cache|neuron_fit_eval) needs at least 1000000 "
        r"correct a\+b prompts .*found \d+",
        proc.stdout + proc.stderr,
    )
    assert_nothing_lost(finished, before)


def wait_for_line(logs: Path, pattern: str, proc: subprocess.Popen, timeout: float = 120) -> re.Match:
    """The first match of ``pattern`` in a log under ``logs`` written by the running ``proc``."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        for log in logs.glob("*/*.log"):
            if log.stat().st_mtime >= t0 - 1 and (found := re.search(pattern, log.read_text(errors="replace"), re.S)):
                return found
        assert proc.poll() is None, "snakemake ended before the job got there"
        time.sleep(0.2)
    raise AssertionError(f"no log matched {pattern!r} within {timeout} s")


def test_a_model_job_killed_after_loading_its_model_changes_nothing(finished, tmp_path):
    """A new batch size reruns every model job; the first one is killed (SIGKILL, as the
    kernel's out-of-memory killer does) once it has loaded its model."""
    before = outputs(finished)
    config = changed_config(tmp_path, batch_size=64)
    cmd = snakemake_command(finished, "--cores", "1", configfile=config)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job = wait_for_line(finished / "logs", r"process (\d+)\n.*loaded toy-", proc)
    os.kill(int(job.group(1)), signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Error in rule" in out
    assert_nothing_lost(finished, before)


def test_a_hard_killed_run_unlocked_and_rerun_rebuilds_the_same_cache(finished, tmp_path):
    """kill -9 of the whole run while the residual cache is written; Snakemake's lock stays and
    the published cache is untouched.  --unlock, then the same command rebuilds a cache equal to
    the uninterrupted run's (rerun-incomplete redoes the killed job).  Or, to keep what is
    published: --cleanup-metadata of the killed job's staged output and removing it leave a run
    that plans nothing (docs/running.md, "When a run fails")."""
    cache = finished / "results/toy-gptj/cache/residuals.h5"
    stamp = cache.stat().st_mtime_ns
    with h5py.File(cache) as f:
        reference = {k: f[k][()] for k in f}
    command = ["results/toy-gptj/cache/residuals.h5", "--forcerun", "residual_cache", "--cores", "1"]
    cmd = snakemake_command(finished, *command)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_for_line(finished / "logs", r"rule residual_cache.*loaded toy-gptj", proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    locked = snakemake(finished, *command, check=False)
    assert locked.returncode != 0 and "Directory cannot be locked" in locked.stdout + locked.stderr
    snakemake(finished, "--unlock")
    assert cache.stat().st_mtime_ns == stamp  # the killed job's output never left staging

    kept = tmp_path / "kept"  # the other way out: keep what is published
    shutil.copytree(finished, kept, symlinks=True)
    # the killed job's declared output (it may not exist yet: the job writes residuals.h5.tmp first)
    staged = [
        f"{d.relative_to(kept)}/results/toy-gptj/cache/residuals.h5"
        for d in (kept / STAGING / "residual_cache").iterdir()
    ]
    assert len(staged) == 1, staged
    snakemake(kept, "--cleanup-metadata", *staged)
    shutil.rmtree(kept / STAGING / "residual_cache")
    assert planned_jobs(kept) == {}

    snakemake(finished, *command)
    with h5py.File(cache) as f:
        assert set(f) == set(reference)
        for key, values in reference.items():
            np.testing.assert_array_equal(f[key][()], values, err_msg=key)

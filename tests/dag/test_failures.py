"""A job that fails, is refused or is killed never invalidates finished work (docs/running.md, "When a
run fails"): on a copy of the finished tiny run, each failing command leaves every output as it
was, and the original command afterwards plans no job.

The four failing commands are Snakemake processes, each on a copy of its own: they run side by
side (:func:`scenarios`, one thread each: the run is over and both cores are free), and each test
then checks what its command left (the dry runs through Snakemake's API change the working
directory, so they stay in the test's own thread)."""

import os
import re
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers.dag import changed_config, planned_jobs, snakemake, snakemake_command

from helixclock.project.outputs import STAGING


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


# -- the failing commands, each on its own copy of the finished run ----------------------------------
def missing_gpu(work: Path, configs: Path) -> dict:
    """device: cuda on a machine without one."""
    before = outputs(work)
    proc = snakemake(work, "--cores", "2", configfile=changed_config(configs, device="cuda"), check=False)
    return {"before": before, "proc": proc}


def refused(work: Path, configs: Path) -> dict:
    """minimum.correct_prompts beyond what the accuracy table gives."""
    before = outputs(work)
    config = changed_config(configs, minimum={"correct_prompts": 10**6})
    return {"before": before, "proc": snakemake(work, "--cores", "2", configfile=config, check=False)}


def killed_after_loading(work: Path, configs: Path) -> dict:
    """A new batch size reruns every model job; the first is killed once it has loaded its model."""
    before = outputs(work)
    cmd = snakemake_command(work, "--cores", "1", configfile=changed_config(configs, batch_size=64))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job = wait_for_line(work / "logs", r"process (\d+)\n.*loaded toy-", proc)
    os.kill(int(job.group(1)), signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    return {"before": before, "returncode": proc.returncode, "out": out}


CACHE = "results/toy-gptj/cache/residuals.h5"
REBUILD = [CACHE, "--forcerun", "residual_cache", "--cores", "1"]


def hard_killed(work: Path, configs: Path) -> dict:
    """kill -9 of the whole run while the cache is written; the locked rerun; --unlock; a copy kept
    with the killed job's metadata cleaned; then the same command again."""
    cache = work / CACHE
    stamp = cache.stat().st_mtime_ns
    with h5py.File(cache) as f:
        reference = {k: f[k][()] for k in f}
    proc = subprocess.Popen(
        snakemake_command(work, *REBUILD), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    wait_for_line(work / "logs", r"rule residual_cache.*loaded toy-gptj", proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    locked = snakemake(work, *REBUILD, check=False)
    snakemake(work, "--unlock")
    record = {"reference": reference, "locked": locked, "stamp_kept": cache.stat().st_mtime_ns == stamp}

    kept = configs / "kept"  # the other way out: keep what is published
    shutil.copytree(work, kept, symlinks=True)
    # the killed job's declared output (it may not exist yet: the job writes residuals.h5.tmp first)
    staged = [f"{d.relative_to(kept)}/{CACHE}" for d in (kept / STAGING / "residual_cache").iterdir()]
    if len(staged) == 1:
        snakemake(kept, "--cleanup-metadata", *staged)
        shutil.rmtree(kept / STAGING / "residual_cache")
    snakemake(work, *REBUILD)
    with h5py.File(cache) as f:
        rebuilt = {k: f[k][()] for k in f}
    return {**record, "staged": staged, "kept": kept, "rebuilt": rebuilt}


SCENARIOS = {f.__name__: f for f in (missing_gpu, refused, killed_after_loading, hard_killed)}


@pytest.fixture(scope="module")
def scenarios(tiny_run, tmp_path_factory):
    """Each failing command run on a copy of the finished tiny run (mtimes and Snakemake's records
    kept), side by side: name -> (its folder, what it left)."""
    copies = {}
    for name in SCENARIOS:
        root = tmp_path_factory.mktemp(f"failures-{name}")
        shutil.copytree(tiny_run[0], root / "run", symlinks=True)
        copies[name] = root
    assert planned_jobs(copies["missing_gpu"] / "run") == {}  # a finished run: nothing to do before the failures
    with ThreadPoolExecutor(len(SCENARIOS)) as pool:
        futures = {name: pool.submit(f, copies[name] / "run", copies[name]) for name, f in SCENARIOS.items()}
        return {name: (copies[name] / "run", future.result()) for name, future in futures.items()}


def test_a_model_job_on_a_missing_gpu_changes_nothing(scenarios):
    """device: cuda passes the DAG (a login node need not have the GPU its jobs get) but this
    machine has none: every model job stops as it starts, and nothing it would have replaced
    is touched."""
    work, got = scenarios["missing_gpu"]
    assert got["proc"].returncode != 0
    logs = [p.read_text() for p in (work / "logs").glob("*/accuracy-*.log")]
    found = "config key device is 'cuda', but torch"  # helixclock.environment.gpus.require_cuda, before the model loads
    assert any(found in text and "finds no CUDA device" in text for text in logs)
    assert_nothing_lost(work, got["before"])


def test_a_refused_model_job_changes_nothing(scenarios):
    """minimum.correct_prompts beyond what the accuracy table gives (known only once the model
    has answered): the residual cache refuses before it loads the model, with the model, the
    rule, the minimum and the count found.  (A large minimum.pairs would not do: a stage runs
    with min(n_pairs, minimum.pairs) pairs, so it only lowers the bar.)"""
    work, got = scenarios["refused"]
    proc = got["proc"]
    assert proc.returncode != 0
    assert re.search(
        r"helixclock: toy-(gptj|digits): (residual_cache|neuron_fit_eval) needs at least 1000000 "
        r"correct a\+b prompts .*found \d+",
        proc.stdout + proc.stderr,
    )
    assert_nothing_lost(work, got["before"])


def test_a_model_job_killed_after_loading_its_model_changes_nothing(scenarios):
    """A new batch size reruns every model job; the first one is killed (SIGKILL, as the
    kernel's out-of-memory killer does) once it has loaded its model."""
    work, got = scenarios["killed_after_loading"]
    assert got["returncode"] != 0 and "Error in rule" in got["out"]
    assert_nothing_lost(work, got["before"])


def test_a_hard_killed_run_unlocked_and_rerun_rebuilds_the_same_cache(scenarios):
    """kill -9 of the whole run while the residual cache is written; Snakemake's lock stays and
    the published cache is untouched.  --unlock, then the same command rebuilds a cache equal to
    the uninterrupted run's (rerun-incomplete redoes the killed job).  Or, to keep what is
    published: --cleanup-metadata of the killed job's staged output and removing it leave a run
    that plans nothing (docs/running.md, "When a run fails")."""
    _, got = scenarios["hard_killed"]
    locked = got["locked"]
    assert locked.returncode != 0 and "Directory cannot be locked" in locked.stdout + locked.stderr
    assert got["stamp_kept"]  # the killed job's output never left staging
    assert len(got["staged"]) == 1, got["staged"]
    assert planned_jobs(got["kept"]) == {}
    assert set(got["rebuilt"]) == set(got["reference"])
    for key, values in got["reference"].items():
        np.testing.assert_array_equal(got["rebuilt"][key], values, err_msg=key)

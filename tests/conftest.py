"""Shared fixtures of both rooms, tests/unit and tests/dag: tiny random-weight models of every
supported family (no network), and the whole-DAG run (the tiny run: a one-token toy and toy-digits),
started in the background when some test of the session reads them (tests/dag; `pytest tests/unit`
starts none)."""

from __future__ import annotations

import os

import pytest
import torch
from helpers.dag import TINY, BackgroundRun
from helpers.families import ALL, tiny_hf_model
from helpers.paths import REPO
from helpers.prompts import GPTJ_PROMPTS

# One thread for torch in the test process: the whole-DAG run (below) take the other core from
# the session's start, and an op split over two threads then waits for a core a run holds
# (measured on 2 cores beside the runs: 300 epochs of the paper's SGD fit of 12 neurons took
# 9-12 s with two threads and 0.2-0.35 s with one). Jobs the tests start set their own threads.
torch.set_num_threads(1)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FAMILIES = ("gptj", "neox", "llama")  # the engine's tests run on these (tests/helpers/families.py has all)


@pytest.fixture(scope="session")
def repo():
    """The repository root (config, registry, committed toys), whatever the working directory."""
    return REPO


@pytest.fixture(scope="session")
def tokenizer():
    from helixclock.toy import build_tokenizer

    return build_tokenizer(GPTJ_PROMPTS, 399, bos=False)


@pytest.fixture(scope="session")
def bos_tokenizer():
    from helixclock.toy import build_tokenizer

    return build_tokenizer(GPTJ_PROMPTS, 399, bos=True)


@pytest.fixture(scope="session", params=FAMILIES)
def tiny_model(request, tokenizer):
    """A LoadedModel (nnsight-wrapped) of each family with random weights."""
    from helixclock.models import wrap_model

    hf = tiny_hf_model(request.param, len(tokenizer))
    return wrap_model(hf, tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session", params=ALL)
def family_model(request, tokenizer):
    """A LoadedModel of every supported family (tests/helpers/families.py) with random weights."""
    from helixclock.models import wrap_model

    hf = tiny_hf_model(request.param, len(tokenizer))
    return wrap_model(hf, tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session")
def tiny_gptj(tokenizer):
    from helixclock.models import wrap_model

    return wrap_model(tiny_hf_model("gptj", len(tokenizer)), tokenizer, name="tiny-gptj")


def tiny_run_start(tmp_path_factory) -> BackgroundRun:
    """The tiny DAG on the CPU with two simulated GPU slots, so model jobs run two at a time: a toy
    whose numbers are one token (toy-gptj) and one whose numbers take several (toy-digits, of
    Llama's family), in one Snakemake run."""
    work = tmp_path_factory.mktemp("dag")
    env = {**os.environ, "HELIXCLOCK_GPUS": "2", "HELIXCLOCK_GPU_LOCKS": str(work / "gpu-locks")}
    return BackgroundRun(work, "--cores", "2", "--max-threads", "1", "--resources", "gpu=2", env=env)


# The whole-DAG run starts in the background as the session's first test starts, and the tests
# that read it run last: the run's jobs, each a new interpreter, take at a low priority (their
# autogroup's too: helpers/dag.py) the core that the unit tests (on one torch thread) leave idle,
# instead of following them.
DAG_RUNS = {"tiny_run": tiny_run_start}


def pytest_collection_modifyitems(items):
    """The tests that read a whole-DAG run go last, the Slurm test first among them: its own run
    through sbatch needs no DAG run, so it goes on while the test waits for the local run.  The
    rest keep the order of collection: tests/unit, then the tests of tests/dag that start a
    Snakemake run of their own (pyproject's testpaths)."""

    def key(item):
        reads = bool(DAG_RUNS.keys() & set(item.fixturenames))
        return reads, reads and item.get_closest_marker("slurm") is None

    items.sort(key=key)  # stable: order kept otherwise


@pytest.fixture(scope="session", autouse=True)
def dag_runs(request, tmp_path_factory):
    """The whole-DAG runs some test of the session reads, started now."""
    wanted = {name for item in request.session.items for name in item.fixturenames} & DAG_RUNS.keys()
    runs = {name: DAG_RUNS[name](tmp_path_factory) for name in sorted(wanted)}
    yield runs
    for run in runs.values():
        run.stop()


@pytest.fixture(scope="session")
def tiny_run(dag_runs):
    """The finished tiny run (tiny_run_start): its folder and the seconds it took."""
    run = dag_runs["tiny_run"]
    return run.workdir, run.finish()


@pytest.fixture(scope="session")
def digits_run(tiny_run):
    """The tiny run seen through toy-digits, its model whose numbers take several tokens: its
    folder and its config file (tests/configs/tiny.yaml)."""
    return tiny_run[0], TINY

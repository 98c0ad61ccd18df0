"""Fixtures of tests/dag: the whole-DAG run (the tiny run: a one-token toy and toy-digits), started
in the background before the session's tests when some test of the session reads it, and the
order that puts the tests reading it last.

Pytest loads this file only when it collects tests/dag, so `pytest tests/unit` starts no run.  The
run is not started by a fixture of this folder, though: an autouse fixture here would first be set
up by the first test of tests/dag, after the whole unit room, and the run (minutes on 2 cores) would
follow the unit tests instead of going on beside them.  A hook is called for every conftest that is
loaded, whichever folder a test is in.  Where pytest loads this file before collection (an initial
conftest: a session given tests/dag, a file in it, or no path at all), :func:`pytest_collection`
starts the run before collecting (about 10 s on 2 cores, every test module importing torch and
transformers, with a core to spare) and stops it after if no collected test reads it; otherwise
:func:`pytest_runtestloop` starts it before the session's first test, whichever room that test is in."""

from __future__ import annotations

import os

import pytest
from helpers.dag import TINY, BackgroundRun


def tiny_run_start(tmp_path_factory) -> BackgroundRun:
    """The tiny DAG on the CPU with two simulated GPU slots, so model jobs run two at a time: a toy
    whose numbers are one token (toy-gptj) and one whose numbers take several (toy-digits, of
    Llama's family), in one Snakemake run."""
    work = tmp_path_factory.mktemp("dag")
    env = {**os.environ, "HELIXCLOCK_GPUS": "2", "HELIXCLOCK_GPU_LOCKS": str(work / "gpu-locks")}
    return BackgroundRun(work, "--cores", "2", "--max-threads", "1", "--resources", "gpu=2", env=env)


# The whole-DAG run starts in the background before collection (or, where this file is loaded
# later, before the session's first test), and the tests that read it run last: the run's jobs,
# each a new interpreter, take at a low priority (their autogroup's too: helpers/dag.py) the core
# that the unit tests (on one torch thread) leave idle, instead of following them.
DAG_RUNS = {"tiny_run": tiny_run_start}
RUNS = pytest.StashKey[dict]()  # the runs started, by name


def pytest_collection_modifyitems(items):
    """The tests that read a whole-DAG run go last, the Slurm test first among them: its own run
    through sbatch needs no DAG run, so it goes on while the test waits for the local run.  The
    rest keep the order of collection: tests/unit, then the tests of tests/dag that start a
    Snakemake run of their own (pyproject's testpaths)."""

    def key(item):
        reads = bool(DAG_RUNS.keys() & set(item.fixturenames))
        return reads, reads and item.get_closest_marker("slurm") is None

    items.sort(key=key)  # stable: order kept otherwise


def _factory(config):
    """What the tmp_path_factory fixture returns (pytest's tmp_path plugin sets it in
    pytest_configure); a hook is given no fixture."""
    return config._tmp_path_factory


def _read(session) -> set[str]:
    """The whole-DAG runs some collected test of the session reads."""
    return {name for item in session.items for name in item.fixturenames} & DAG_RUNS.keys()


def _stop(runs: dict, names) -> None:
    for name in sorted(names):
        runs.pop(name).stop()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """Every whole-DAG run started before collection, and those no collected test reads (a -k
    or -m that leaves them out) stopped once it is over.  Not for ``--collect-only``, nor under
    pytest-xdist (each worker collects and starts what its own tests read, in
    :func:`pytest_runtestloop`)."""
    config = session.config
    option = config.option
    xdist = hasattr(config, "workerinput") or bool(getattr(option, "numprocesses", None) or getattr(option, "tx", None))
    early = not option.collectonly and not xdist
    runs = session.stash[RUNS] = {name: start(_factory(config)) for name, start in DAG_RUNS.items()} if early else {}
    result = yield  # a collection that raises leaves them to pytest_sessionfinish
    _stop(runs, runs.keys() - _read(session))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    """The whole-DAG runs some test of the session reads, started before its first test where
    :func:`pytest_collection` has not started them already, and stopped after its last (a session
    that ends early leaves no run going).  None for ``--collect-only`` or a session that
    collection errors end before any test."""
    config = session.config
    runs_tests = not config.option.collectonly and not (
        session.testsfailed and not config.option.continue_on_collection_errors
    )
    wanted = _read(session) if runs_tests else set()
    runs = session.stash.setdefault(RUNS, {})
    _stop(runs, runs.keys() - wanted)
    runs.update({name: DAG_RUNS[name](_factory(config)) for name in sorted(wanted - runs.keys())})
    try:
        return (yield)
    finally:
        _stop(runs, list(runs))


def pytest_sessionfinish(session):
    """No run left going by a session that ended before its test loop (a collection that raised)."""
    runs = session.stash.get(RUNS, {})
    _stop(runs, list(runs))


@pytest.fixture(scope="session")
def dag_runs(request):
    """The whole-DAG runs some test of the session reads, started before collection
    (:func:`pytest_collection`) or before its first test (:func:`pytest_runtestloop`)."""
    return request.session.stash[RUNS]


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

"""The results API on a project a run did not finish (docs/results-api.md, "Finished and unfinished
models"): it lists the finished models, names the unfinished ones with what they lack, the tour
(docs/examples/results_tour.py) reads the finished model and skips the other, and a mistyped id is
an error naming the nearest known ids.  Before, Results.models listed every folder with a model card,
so the tour stopped with FileNotFoundError on an interrupted run's model, and a mistyped table id
pointed at a Snakemake target no rule makes; each test below fails on that code."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from helpers.dag import workflow_api
from helpers.paths import REPO

from helixclock.project import outputs
from helixclock.project.results import FINISHED_WHEN, Results, nearest_ids, pattern

DONE, HALF = "toy-done", "toy-half"
HELIX = (2, 5, 10, 100)  # the tour's periods


def helix_values(a: np.ndarray, d: int = 6, seed: int = 0) -> np.ndarray:
    """resid_pre at the a token that is exactly a helix in a (a constant, a line, and cos/sin of each
    period mixed into ``d`` dimensions): the tour's refit has R^2 1."""
    basis = [np.ones_like(a, dtype=float), a / a.max()]
    for T in HELIX:
        basis += [np.cos(2 * np.pi * a / T), np.sin(2 * np.pi * a / T)]
    return np.stack(basis, 1) @ np.random.default_rng(seed).normal(size=(len(basis), d))


def write(root: Path, output: str, model: str, content=None) -> Path:
    """Write ``output`` (an id) of ``model`` where the registry says: a DataFrame as CSV, a dict as
    JSON, else a placeholder of the file's kind."""
    path = root / pattern(output).format(model=model)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, pd.DataFrame):
        content.to_csv(path, index=False)
    elif isinstance(content, dict):
        path.write_text(json.dumps(content))
    elif path.suffix == ".png":
        path.write_bytes(b"\x89PNG\r\n\x1a\n")
    else:
        path.write_text("placeholder\n")
    return path


def half_finished(root: Path) -> None:
    """A project an interrupted run left: toy-done finished (every output of FINISHED_WHEN, and the
    tour's tables with known numbers), toy-half with its model card and nothing else (the run
    stopped before its a+b accuracy, as `make real` interrupted in SmolLM2's jobs leaves it)."""
    for output in FINISHED_WHEN:
        write(root, output, DONE)
    write(root, "CARD", DONE, {"model": DONE, "n_layers": 2})
    write(root, "ADD_ACCURACY", DONE, pd.DataFrame({"a": [1, 2, 3, 4], "correct": [True, True, True, False]}))
    write(root, "tab01_other_tasks", DONE, pd.DataFrame({"task": ["a+b"], "Full": [3.0], "Helix": [2.4]}))
    sweep = pd.DataFrame({"layer": [0, 1, 0, 1], "method": ["helix", "helix", "pca", "pca"]})
    write(root, "HELIX_SUMMARY.sweep", DONE, sweep.assign(ld_mean=[1.5, 2.5, 3.5, 0.5]))
    findings = pd.DataFrame({"id": ["f1", "f2", "f3"], "verdict": ["holds", "holds", "not distinguished"]})
    write(root, "FINDINGS.contrasts", DONE, findings)
    a = np.arange(100)
    cache = root / pattern("CACHE").format(model=DONE)
    with h5py.File(cache, "w") as f:
        f["a"] = np.stack([helix_values(a, seed=layer) for layer in range(2)], 1).astype(np.float32)
        f["ab"] = np.stack([a, a[::-1]], 1)
    write(root, "CARD", HALF, {"model": HALF, "n_layers": 2})
    (root / "results" / "all").mkdir()  # the cross-model folder is not a model


def tour_module():
    spec = importlib.util.spec_from_file_location("results_tour", REPO / "docs" / "examples" / "results_tour.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_lists_the_finished_model_and_names_the_unfinished_one(tmp_path):
    """Old code: models was ['toy-done', 'toy-half'] (both have a model card) and there was no
    ``unfinished``."""
    half_finished(tmp_path)
    run = Results(tmp_path)
    assert run.models == [DONE] and run.unfinished == [HALF]
    assert run.lacks(DONE) == []
    lacks = run.lacks(HALF)
    assert "CARD" not in lacks and len(lacks) == len(FINISHED_WHEN) - 1 == 79
    assert lacks[:3] == ["ADD_LOGITS", "CACHE", "FINDINGS.contrasts"]
    # what an unfinished model has is read; what it lacks is an error naming both kinds of model
    assert run.card(HALF) == {"model": HALF, "n_layers": 2}
    with pytest.raises(FileNotFoundError, match=r"finished models here: toy-done; unfinished: toy-half\)"):
        run.table("ADD_ACCURACY", HALF)
    # one figure short of finished: unfinished, and lacks says which
    (tmp_path / outputs.figure("fig04_helix_patching", DONE)[1]).unlink()
    assert run.models == [] and run.unfinished == [DONE, HALF] and run.lacks(DONE) == ["fig04_helix_patching"]


def test_the_tour_reads_the_finished_model_and_skips_the_unfinished_one(tmp_path, capsys):
    """Old code: the tour stopped with FileNotFoundError on results/toy-half/accuracy/add.csv."""
    half_finished(tmp_path)
    summary = tour_module().tour(str(tmp_path))
    assert list(summary) == [DONE]
    got = summary[DONE]
    assert got["accuracy"] == 0.75 and got["best_layer"] == 1
    assert got["verdicts"] == {"holds": 2, "not distinguished": 1}
    assert got["r2"] == pytest.approx(1.0, abs=1e-6)
    printed = capsys.readouterr().out
    assert f"== {HALF}: not finished, skipped (lacks 79 of the outputs every model gets, e.g. ADD_LOGITS, CACHE, " in (
        printed
    )
    assert f"== {DONE}: a+b accuracy 75.0%" in printed and "the helix restores most at layer 1" in printed


@pytest.mark.parametrize(
    ("typed", "nearest"),
    [
        ("tab1_other_tasks", "tab01_other_tasks"),  # the example
        ("tabD1_head_category", "tabD1_head_categories"),
        ("fig04", "fig04_helix_patching"),  # the start of a figure id
        ("HELIX_SUMARY.sweep", "HELIX_SUMMARY.sweep"),
    ],
)
def test_a_mistyped_id_names_the_nearest_known_ids(tmp_path, typed, nearest):
    """Old code: an id starting with "tab" or "fig" was taken as a table or figure id, so
    run.table("tab1_other_tasks", model) raised FileNotFoundError naming
    `snakemake --cores 1 results/toy-done/tables/tab1_other_tasks.csv`, a target no rule makes."""
    half_finished(tmp_path)
    run = Results(tmp_path)
    assert nearest_ids(typed)[0] == nearest
    with pytest.raises(KeyError, match=f"did you mean {nearest}"):
        run.table(typed, DONE)


# ---------------------------------------------------------------- the ids beside the workflow's


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    """The workflow on the default config (Snakemake's API, as docs/hooks.py reads it): its rules'
    output patterns, and the outputs the default target asks of every model (PER_MODEL_OUTPUTS)."""
    with workflow_api(tmp_path_factory.mktemp("workflow"), REPO / "config" / "config.yaml") as api:
        wf = api._workflow
        made = [str(o) for rule in wf.rules for o in rule.output]
        return made, list(wf.globals["PER_MODEL_OUTPUTS"])


def test_the_table_and_figure_ids_are_those_the_rules_make(workflow):
    made, _ = workflow
    tables = {Path(p).stem for p in made if "/tables/" in p and p.endswith(".csv")}
    figures = {Path(p).stem for p in made if "/figures/" in p and p.endswith(".png")}
    assert set(outputs.TABLE_IDS) == tables and len(outputs.TABLE_IDS) == len(tables) == 11
    assert set(outputs.FIGURE_IDS) == figures and len(outputs.FIGURE_IDS) == len(figures) == 44


def test_finished_is_what_the_default_target_asks_of_every_model_and_results_all_reads(workflow):
    _, per_model = workflow
    # the CSV of each table and the PNG of each figure (not their Markdown and PDF)
    asked = {p for p in per_model if not p.endswith(".pdf") and not (p.endswith(".md") and "/tables/" in p)}
    asked -= {outputs.table("tabC1_other_tasks_accuracy")[0]}  # only with a task other than a+b
    compared = {p for p in outputs.COMPARED_TABLES.values() if "{model}" in p} | {outputs.ADD_ACCURACY}
    compared -= {outputs.table("tabC1_other_tasks_accuracy")[0]}
    assert {pattern(o) for o in FINISHED_WHEN} == asked | compared
    assert len(FINISHED_WHEN) == len(asked | compared) == 80

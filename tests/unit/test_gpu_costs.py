"""docs/gpu-costs.md follows from the plan the jobs run (benchmarks/gpu_costs.py): the committed
plan is the code's (the tiny GPT-J recounted), the GPU measurements made exactly the planned
passes and rows (the old per-job formulas did not), and the page is what its generator writes
from those inputs."""

from __future__ import annotations

import json
import sys

import pytest
from helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))  # the benchmarks' modules import each other by name

import counting  # noqa: E402
import gpu_costs  # noqa: E402
import plan  # noqa: E402

# The passes of GPT-J-6B's jobs by the per-job formulas that docs/gpu-costs.md used before it was
# counted (commit 32a8dce): a wrong method, which the measured passes reject.
FORMULA_PASSES = {
    "accuracy": 27,
    "residual_cache": 18,
    "helix_patching": 294,
    "other_tasks_patching": 174,
    "last_token_patching": 51,
    "head_patching": 764,
    "mlp_patching": 19,
    "neuron_attribution": 51,
    "neuron_grids": 21,
    "neuron_fit_eval": 58,
}


def committed_plan() -> dict:
    return json.loads(gpu_costs.PLAN.read_text())


@pytest.mark.slow  # every job of the tiny GPT-J run through the counting engine (about 10 s): in `make test`
def test_the_committed_plan_is_the_code_s():
    """Every job's library calls on the tiny GPT-J make the passes and rows the committed plan
    records; where they do not, the code has changed a job's plan, and the plan and the page
    must be regenerated (`.venv/bin/python benchmarks/gpu_costs.py --count`)."""
    cfg, entry = plan.read_config("gptj")
    got = counting.count_tiny(counting.tiny_config(cfg), entry, 128)
    got = {job: {k: int(c[k]) for k in gpu_costs.KEYS} for job, c in got.items()}
    assert got == committed_plan()["tiny"], "a job's plan changed: run benchmarks/gpu_costs.py --count"


# the jobs whose passes the narrow model does not share with the full width (what they select by
# effects, or how they chunk, differs there): the page takes measured passes for measured models
NOT_NARROW = {"head_patching", "neuron_attribution", "neuron_fit_eval"}
# the jobs whose plan the code changed after the H200 measured them (the plan recounted at 1b5c66c; counted at
# a53d556 it matched the probes but for NOT_NARROW): helix_patching runs the causal nested test (six more variants a layer),
# last_token_patching, mlp_patching and head_patching (666 -> 706 passes on GPT-J) changes made since
# (which of them was not isolated); the page lists each difference.  Where a job's code changed, "short, not over" is not tested
CHANGED_SINCE_MEASURED = {"helix_patching", "last_token_patching", "mlp_patching", "head_patching"}


def test_the_narrow_plan_is_the_measured_one_but_for_three_jobs_and_the_formulas_were_not():
    """On the H200, at GPT-J-6B's and Llama-3.1-8B's full shapes, seven of the ten jobs made exactly
    the passes and rows the narrow models count (the counting holds at full width for them); the
    other three made more (the narrow count is short, never over), and the page names them.  Four
    jobs' plans changed since that measurement (CHANGED_SINCE_MEASURED): the page names them too.  The
    old per-job formulas' passes are rejected by the same measurements on six jobs."""
    committed = committed_plan()
    probes = {name: gpu_costs.read_probe(path) for name, path in gpu_costs.PROBES.items()}
    assert len(probes["gptj"]) == 11 and len(probes["llama"]) == 10  # the model row and each job measured
    differing = {line.split()[1] for line in gpu_costs.plan_differences(committed, probes)}
    assert differing == NOT_NARROW | CHANGED_SINCE_MEASURED
    assert "gptj" in committed  # the measured model whose narrow plan is counted (Llama's: killed for memory here)
    for name, rows in probes.items():
        for job in (NOT_NARROW - CHANGED_SINCE_MEASURED) & set(rows) & set(committed.get(name, {})):
            assert rows[job]["passes"] > committed[name][job]["passes"]  # short, not over
    wrong = [job for job, n in FORMULA_PASSES.items() if n != probes["gptj"][job]["passes"]]
    assert set(wrong) == {
        "helix_patching",
        "other_tasks_patching",
        "last_token_patching",
        "head_patching",
        "mlp_patching",
        "neuron_attribution",
    }


def test_the_page_is_what_its_generator_writes():
    cfg = plan.read_config()[0]
    committed = committed_plan()
    probes = {name: gpu_costs.read_probe(path) for name, path in gpu_costs.PROBES.items()}
    costs = {name: gpu_costs.model_costs(name, cfg, committed, probes) for name in plan.SHAPES}
    counted = tuple(m for m in plan.SHAPES if m in committed)
    text = gpu_costs.page(costs, cfg, gpu_costs.plan_differences(committed, probes), committed["commit"], counted)
    assert (REPO / "docs" / "gpu-costs.md").read_text() == text
    # a number of the page, from its inputs: GPT-J-6B's helix_patching peak measured on the H200
    assert "| helix_patching | 298 |" in text and "28.7 GB" in text
    # a model neither measured nor counted is named so, not estimated
    assert costs["pythia"] is None and "Pythia-6.9B: neither measured nor counted" in text

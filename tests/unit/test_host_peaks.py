"""The memory a job asks for is the memory it uses, on the real models (issue 58; docs/memory.md):
every model job of SmolLM2-135M and Gemma-3-270M in make real (the embedded default's settings,
on this machine's CPU) declares, by the formula (helixclock.jobs.placement.model_job_mb
from what the plan sized it from), between 1.0 and 2.0 times its measured host peak, or the
1.5 GB floor where the peak is below it.  A peak its log records (ru_maxrss) is the true one; a
peak sampled by the benchmark file is a lower bound, held to the same 1.0-2.0 times.  The peaks
and the plan's inputs are the run's, written by ``python benchmarks/memory_table.py --measured``
(benchmarks/measured/host_peaks_make_real.csv, host_plan_make_real.json).

Two arms show the check bites: 32a8dce's formula (helpers.memory.old_model_job_mb) fails it, and
so does this module's own formula with the items before issue 58's host-memory items put back
(helpers.memory_before), on the jobs those under-declared."""

import csv
import json

import pytest
from helpers import memory_before
from helpers.memory import MEASURED_PEAKS, MEASURED_PLAN, declared_from_inputs, old_model_job_mb, within

from helixclock.jobs import memory, placement


def rows():
    with open(MEASURED_PEAKS) as f:
        return [{**r, "peak_mb": float(r["peak_mb"])} for r in csv.DictReader(f)]


def plan():
    return json.loads(MEASURED_PLAN.read_text())


def checked(declare) -> dict[tuple[str, str], tuple[int, float, str, bool]]:
    """(model, rule) -> (declared mem_mb, peak, source, within 1.0-2.0 x or the floor)."""
    inputs = plan()
    out = {}
    for r in rows():
        mb = declare(r["rule"], inputs[r["model"]])
        out[(r["model"], r["rule"])] = (mb, r["peak_mb"], r["source"], within(mb, r["peak_mb"]))
    return out


def test_the_measured_peaks_cover_every_model_job_of_both_real_models():
    """The committed peaks: every model job of SmolLM2 and Gemma-3 (train_toy aside: toys alone),
    from one run; the logs' true peaks where they exist."""
    got = rows()
    jobs = {(r["model"], r["rule"]) for r in got}
    model_jobs = set(placement.GPTJ_MINUTES) - {"train_toy"}
    assert {m for m, _ in jobs} == {"smollm2-135m", "gemma3-270m"}
    for model in ("smollm2-135m", "gemma3-270m"):
        assert {rule for m, rule in jobs if m == model} == model_jobs, model
    assert len({r["run_commit"] for r in got}) == 1
    true = {(r["model"], r["rule"]) for r in got if r["source"] == "log"}
    assert {("smollm2-135m", "mlp_patching"), ("gemma3-270m", "head_patching")} <= true
    assert {r["source"] for r in got} <= {"log", "sampled"}


def test_every_real_model_job_declares_one_to_two_times_its_peak():
    got = checked(declared_from_inputs)
    print("\nmodel, job, declared mem_mb, peak MB (source), ratio")
    for (model, rule), (mb, peak, source, ok) in sorted(got.items()):
        print(f"  {model:<13} {rule:<22} {mb:6d} {peak:7.0f} ({source:<7}) {mb / peak:5.2f}{'' if ok else ' x'}")
    assert all(ok for *_, ok in got.values()), sorted(k for k, v in got.items() if not v[-1])


def test_32a8dces_formula_fails_the_check():
    """The weights, every token's full-vocabulary logits and residuals for a batch, 3 GB: with
    Gemma-3's 262,144-token vocabulary every job asks for 27 GB (its accuracy, 6.9 x its 3.9 GB;
    46 GB in issue 58's table, planned before the card counted the prompt's tokens)."""

    def old(rule, record):
        size = placement.Size(**record["size"])
        return old_model_job_mb(size, record["spec"], record["work"]["batch"], record["cache_bytes"][rule])

    got = checked(old)
    failed = {key for key, (*_, ok) in got.items() if not ok}
    assert ("gemma3-270m", "accuracy") in failed and got[("gemma3-270m", "accuracy")][0] > 25_000
    assert {m for m, _ in failed} == {"smollm2-135m", "gemma3-270m"} and len(failed) >= 18, sorted(failed)


def test_the_items_before_issue_58_fail_the_check_on_the_jobs_they_under_declared(monkeypatch):
    """helixclock.jobs.memory.job_items as it was before the host-memory items (a several-token
    forward's logits twice in float32, a sweep's keys and values once, values read at the last
    token alone, no direct effects' logits, no attribution screen, one batch's neurons): SmolLM2's
    mlp_patching (4,989 MB true peak), helix_patching (4,514) and neuron_grids (4,776 sampled) and
    Gemma-3's head_patching (8,313) are declared below their peaks, and Gemma-3's accuracy above
    twice its (sampled) peak: its logits counted twice."""
    monkeypatch.setattr(memory, "job_items", memory_before.job_items)
    got = checked(declared_from_inputs)
    under = {key for key, (mb, peak, _, ok) in got.items() if not ok and mb < peak}
    assert {key for key, (mb, peak, _, ok) in got.items() if not ok and mb > peak} == {("gemma3-270m", "accuracy")}
    assert {
        ("smollm2-135m", "mlp_patching"),
        ("smollm2-135m", "helix_patching"),
        ("smollm2-135m", "neuron_grids"),
        ("gemma3-270m", "head_patching"),
    } <= under, sorted(under)


@pytest.mark.parametrize("model", ["smollm2-135m", "gemma3-270m"])
def test_a_retry_asks_for_twice_as_much(model):
    record = plan()[model]
    assert declared_from_inputs("mlp_patching", record, attempt=2) == 2 * declared_from_inputs("mlp_patching", record)

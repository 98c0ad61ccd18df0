"""The memory a job asks for is the memory it uses (docs/memory.md): every model job of the tiny
run declares (mem_mb, the plan's resources with the run's inputs there) between 1.0 and 2.0 times
the peak its log records (ru_maxrss; helpers.memory.measured), or the floor where the peak is below it; 32a8dce's formula
(tests/helpers/memory.py) does not."""

import yaml
from helpers.dag import TINY
from helpers.memory import declared, measured, old_model_job_mb, within
from helpers.paths import REPO

from helixclock.jobs import placement
from helixclock.project import outputs

MODELS = ["toy-gptj", "toy-digits"]


def test_every_model_job_declares_one_to_two_times_its_peak_and_32a8dces_formula_does_not(tiny_run):
    workdir, _ = tiny_run
    plan, peaks = declared(workdir, TINY, MODELS), measured(workdir)
    jobs = {key: peak for key, peak in peaks.items() if key[1] in outputs.MODEL_JOBS}
    assert {rule for _, rule in jobs} == set(outputs.MODEL_JOBS), sorted(jobs)  # every model job of both toys ran
    config = yaml.safe_load(TINY.read_text())
    registry = yaml.safe_load((REPO / config["registry"]).read_text())
    print("\nmodel, job, declared mem_mb, peak MB, ratio, 32a8dce's mem_mb")
    rejected_old = []
    for (model, rule), peak in sorted(jobs.items()):
        mem = plan[(model, rule)]["mem_mb"]
        spec = registry[model]
        size = placement.model_size(model, spec, workdir / outputs.CARD.format(model=model))
        old = old_model_job_mb(size, spec, config["batch_size"])
        print(f"  {model:<10} {rule:<22} {mem:6d} {peak:7.0f} {mem / peak:5.2f} {old:6d}")
        assert within(mem, peak), (model, rule, mem, peak)
        rejected_old.append(not within(old, peak))
    assert all(rejected_old), "32a8dce's formula passes the check on some job"

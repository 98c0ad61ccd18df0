"""Weak models: clear messages before loading the model, honest numbers after.

Unit tests on a planted weak model (an accuracy table written here: 41 correct a+b prompts
whose pairs are known by construction) check the preconditions, ``draw_pairs``'s warning,
the missing interval of a single pair and the figures' "n = k pairs".  A random-weight GPT-J
that answers nothing right goes through the DAG in tests/dag/test_weak_model_run.py.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.prompts import GPTJ_PROMPTS

from helixclock.causal.pairs import draw_pairs
from helixclock.fitting.bases import standard_bases
from helixclock.fitting.fits import fit_token
from helixclock.jobs import preconditions as pre
from helixclock.jobs.pipeline import accuracy, minimum, require, usable_tasks
from helixclock.prompts.sampling import pairs_available
from helixclock.stats.statistics import Resampling, bootstrap_ci, raw_table, summarise

PERIODS = (2, 5, 10, 100)
TEMPLATE = GPTJ_PROMPTS["add"]


# -- a planted weak model: 41 correct prompts, pairs known by construction ----------------------
def weak_accuracy() -> pd.DataFrame:
    """All 10,000 a+b prompts; correct: b = 7 with a = 0..9 (ten prompts sharing b, so each has
    partners a'+b) and a = 0 with b = 20..50 (31 prompts sharing a = 0 with a+7, so 32 have
    partners a+b'): 41 correct prompts, 10 pairs a'+b, 32 pairs a+b', 41 pairs a'+b'."""
    a, b = np.divmod(np.arange(10000), 100)
    correct = ((b == 7) & (a < 10)) | ((a == 0) & (b >= 20) & (b <= 50))
    return pd.DataFrame(
        {"task": "add", "a": a, "b": b, "answer": a + b, "answer_token": a + b + 10, "correct": correct}
    )


def reference_pairs(correct: pd.DataFrame, vary) -> int:
    """Clean prompts with a partner, one row at a time (the plain reference)."""
    rows = correct.to_dict("records")
    keep = [c for c in ("a", "b") if c not in vary]
    return sum(any(all(r[c] == s[c] for c in keep) and r["answer"] != s["answer"] for s in rows) for r in rows)


@pytest.mark.parametrize("vary, expected", [(("a",), 10), (("b",), 32), (("a", "b"), 41)])
def test_pairs_available_counts_the_planted_pairs(vary, expected):
    correct = pre.correct_rows(weak_accuracy())
    assert len(correct) == 41
    assert pairs_available(correct, vary) == expected == reference_pairs(correct, vary)


def test_pairs_available_is_what_draw_pairs_draws(tokenizer, caplog):
    """Asked for 16, draw_pairs draws the 10 the table holds and says so on the logger."""
    correct = pre.correct_rows(weak_accuracy())
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        pairs = draw_pairs(correct, 16, 0, tokenizer, TEMPLATE, ("a",))
    assert len(pairs) == pairs_available(correct, ("a",)) == 10
    assert (pairs.meta["clean_b"] == pairs.meta["corrupted_b"]).all()
    assert (pairs.meta["clean_answer"] != pairs.meta["corrupted_answer"]).all()
    warning = [r for r in caplog.records if r.name == "helixclock" and r.levelno == logging.WARNING]
    assert len(warning) == 1 and "only 10 clean/corrupted pairs of the 16 asked for" in warning[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        assert len(draw_pairs(correct, 8, 0, tokenizer, TEMPLATE, ("a",))) == 8
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]  # as many as asked: no warning


def test_pairs_available_within_a_held_out_split():
    correct = pre.correct_rows(weak_accuracy())
    assert pairs_available(correct, ("a",), clean_a=[3, 4]) == 2  # (3, 7), (4, 7)
    assert pairs_available(correct, ("b",), clean_a=[3]) == 0  # a = 3 has one correct prompt


def fake_job(rule: str, accuracy_path, **params) -> SimpleNamespace:
    """What a script's ``snakemake`` object holds for :func:`helixclock.jobs.pipeline.require`."""
    return SimpleNamespace(
        rule=rule,
        wildcards=SimpleNamespace(model="weak"),
        input=SimpleNamespace(accuracy=str(accuracy_path)),
        params=SimpleNamespace(**params),
    )


@pytest.fixture
def weak_table(tmp_path):
    path = tmp_path / "add.csv"
    weak_accuracy().to_csv(path, index=False)
    return path


def one_line(error: pytest.ExceptionInfo) -> str:
    line = str(error.value)
    assert "\n" not in line
    return line


def test_helix_patching_stops_on_too_few_pairs(weak_table):
    """41 correct prompts hold 10 pairs a'+b: with minimum.pairs 16 the stage stops; with 8 it
    has its pairs (fewer than the 100 asked) but not the train split's 8 distinct a (a fit of
    10 columns needs 11)."""
    job = fake_job("helix_patching", weak_table, minimum={"pairs": 16, "spare_rows": 1})

    def needs():  # as scripts/helix_patching.py states them
        return pre.helix_patching_needs(accuracy(job), PERIODS, 100, 0.2, 0, minimum(job))

    with pytest.raises(pre.PreconditionError) as err:
        require(job, needs())
    line = one_line(err)
    assert line.startswith("weak: helix_patching needs at least 16 clean/corrupted pairs")
    assert "(a'+b from the 41 correct add prompts)" in line and "found 10;" in line
    assert "(config helix.n_pairs=100, minimum.pairs=16)" in line
    job.params.minimum["pairs"] = 8
    with pytest.raises(pre.PreconditionError) as err:
        require(job, needs())
    assert "needs at least 11 distinct a in the train split" in one_line(err) and "found 8;" in one_line(err)


def test_fewer_pairs_than_asked_run_down_to_minimum_pairs():
    """100 pairs asked, 10 found: minimum.pairs 10 runs the stage (draw_pairs then warns), 11
    stops it; the minimum is never above what was asked nor below 2, and a task with fewer
    prompts than n_pairs asks for as many as it has."""
    needs = pre.clock_needs("last_token_patching", weak_accuracy(), PERIODS, 100, ("a",), pre.Minimum(pairs=10))
    assert [(n.found, n.minimum, n.met) for n in needs] == [(10, 10, True), (41, 29, True)]
    needs = pre.clock_needs("last_token_patching", weak_accuracy(), PERIODS, 100, ("a",), pre.Minimum(pairs=11))
    assert (needs[0].found, needs[0].minimum, needs[0].met) == (10, 11, False)
    assert pre.Minimum(pairs=50).fewest_pairs(4) == 4 and pre.Minimum(pairs=2).fewest_pairs(1) == 2
    mul = pd.DataFrame(
        {"task": "mul1p5", "a": np.arange(0, 100, 2), "b": -1, "answer": np.arange(0, 150, 3), "correct": True}
    )
    need = pre.other_tasks_needs({"mul1p5": mul}, PERIODS, 100, pre.Minimum(pairs=80))["mul1p5"][0]
    assert (need.found, need.minimum) == (50, 50) and "capped at the task's 50 prompts" in need.source


def test_the_last_token_fits_need_more_prompts_than_helix_abs_parameters():
    """helix(a, b, a+b) with 4 periods has 3 * 9 + 1 = 28 columns: 28 correct prompts stop the
    stage, 29 pass."""
    acc = weak_accuracy()
    keep = acc.index[acc["correct"]][:28]
    acc["correct"] = acc.index.isin(keep)
    needs = pre.clock_needs("last_token_patching", acc, PERIODS, 2, ("a", "b"), pre.Minimum())
    assert (needs[1].found, needs[1].minimum) == (28, 29)
    with pytest.raises(pre.PreconditionError, match=r"needs at least 29 correct a\+b prompts .* found 28;"):
        pre.check("weak", "last_token_patching", needs)


def test_mlp_fits_count_distinct_sums():
    """The 41 planted prompts have 10 + 31 answers, 7..16 and 20..50: 41 distinct a+b; a
    sample of 5 has 5 and is refused for helix(a+b)'s 10 columns."""
    acc = weak_accuracy()
    needs = pre.clock_needs("mlp_patching", acc, PERIODS, 2, ("a", "b"), pre.Minimum(), fit_prompts=400)
    assert (needs[1].found, needs[1].minimum) == (41, 11)
    needs = pre.clock_needs("mlp_patching", acc, PERIODS, 2, ("a", "b"), pre.Minimum(), fit_prompts=5)
    assert (needs[1].found, needs[1].met) == (5, False)


def test_no_correct_prompt_stops_the_cache_before_the_model(tmp_path):
    acc = weak_accuracy().assign(correct=False)
    path = tmp_path / "add.csv"
    acc.to_csv(path, index=False)
    job = fake_job("residual_cache", path, minimum={"correct_prompts": 1})
    with pytest.raises(pre.PreconditionError) as err:  # as scripts/residual_cache.py states them
        require(job, pre.cache_needs(accuracy(job), minimum(job), largest_bare_number=120, number_limit=199))
    assert one_line(err) == (
        "weak: residual_cache needs at least 1 correct a+b prompts (of 10000 prompts) "
        "(minimum.correct_prompts=1), found 0; "
        "this model's residual_cache and everything after it stop here"
    )


def test_other_tasks_leave_out_a_weak_task_and_stop_on_a_weak_add(tmp_path, caplog):
    good = weak_accuracy().assign(correct=True)
    mod2 = pd.DataFrame(
        {"task": "mod2", "a": np.arange(100), "b": -1, "answer": np.arange(100) % 2, "correct": np.arange(100) < 3}
    )  # answers 0, 1, 0: 3 pairs a'
    job = fake_job(
        "other_tasks_patching",
        "",
        tasks=["add", "mod2"],
        n_pairs=4,
        fit={"periods": PERIODS},
        minimum={"pairs": 10, "spare_rows": 1},
    )
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        usable = usable_tasks(job, {"add": good, "mod2": mod2})
    assert list(usable) == ["add"]
    assert (
        "left out of Table 1 and Fig. C7: weak: other_tasks_patching needs at least 4 clean/corrupted pairs "
        "with different answers (a' from the 3 correct mod2 prompts) (config helix.n_pairs=4, minimum.pairs=10), "
        "found 3"
    ) in caplog.text
    # the record the report reads (rule other_tasks_left_out) says the same, from the same params
    frames = {"add": good, "mod2": mod2}
    needs = pre.other_tasks_needs(frames, PERIODS, 4, pre.Minimum(pairs=10, spare_rows=1))
    left = pre.left_out(needs, frames, "weak", "other_tasks_patching")
    assert left[["task", "label", "prompts", "correct", "found", "minimum"]].values.tolist() == [
        ["mod2", "a mod 2", 100, 3, 3, 4]
    ]
    assert f"left out of Table 1 and Fig. C7: {left['reason'].iloc[0]}" in caplog.text
    with pytest.raises(pre.PreconditionError, match=r"at least 4 .*\(a'\+b from the 2 correct add prompts\).*found 2;"):
        usable_tasks(
            job,
            {
                "add": weak_accuracy().assign(correct=lambda d: d["correct"] & (d["b"] == 7) & (d["a"] < 2)),
                "mod2": mod2,
            },
        )


def test_over_fitted_helix_fits_are_refused():
    """The largest bases have 10 columns: the degree-9 polynomial fits random residuals of 10
    distinct a exactly (R^2 = 1, which says nothing about a helix); the precondition refuses 10
    rows and accepts 11, where no basis fits exactly."""
    g = torch.Generator().manual_seed(0)
    bases = standard_bases(PERIODS)
    assert max(len(b.columns()) for b in bases) == 10 == pre.n_columns("poly", PERIODS)
    poly = [b.name for b in bases].index("poly9(a)")
    for rows, refused in ((10, True), (11, False)):
        a = np.arange(rows) * 7
        fits = fit_token(torch.randn(2, rows, 16, generator=g), a, bases, 100)
        assert bool(torch.all(fits.r2[poly] > 1 - 1e-5)) == refused
        assert bool(torch.any(fits.r2 > 1 - 1e-5)) == refused
        need = pre.helix_fit_needs(a, PERIODS, pre.Minimum())[0]
        assert (need.found, need.minimum, need.met) == (rows, 11, not refused)


def test_one_pair_has_no_interval():
    mean, low, high = bootstrap_ci(torch.tensor([[1.5], [2.0]]))
    assert torch.equal(mean, torch.tensor([1.5, 2.0])) and torch.isnan(low).all() and torch.isnan(high).all()
    mean, low, high = bootstrap_ci(torch.tensor([[0.0, 2.0]]), n_boot=200)
    assert mean.item() == 1.0 and low.item() == 0.0 and high.item() == 2.0  # two pairs: an interval
    raw = raw_table(np.array([[3.0, np.nan, np.nan], [1.0, 2.0, 3.0]]), [{"v": "one"}, {"v": "three"}])
    summary = summarise(raw, Resampling(bootstrap=200))
    assert list(summary["n_pairs"]) == [1, 3] and list(summary["ld_mean"]) == [3.0, 2.0]
    assert summary.loc[0, ["ld_low", "ld_high"]].isna().all()
    assert summary.loc[1, "ld_low"] < 2.0 < summary.loc[1, "ld_high"]


def test_figures_say_how_many_pairs_and_draw_nan_intervals():
    from helixclock.plotting.style import pairs_note
    from helixclock.stages.helix.figures import figC5_helix_controls
    from helixclock.stages.last_token.figures import fig06_layer_patching

    controls = pd.DataFrame(
        {
            "control": ["train/test split"] * 2 + ["shuffled a"] * 2,
            "method": ["helix", "layer"] * 2,
            "layer": [0, 0, 0, 0],
            "ld_mean": [0.5, 1.0, 0.1, 1.0],
            "ld_low": [np.nan, np.nan, 0.0, 0.8],
            "ld_high": [np.nan, np.nan, 0.2, 1.2],
            "n_pairs": [1, 1, 30, 30],
        }
    )
    fig = figC5_helix_controls(controls, "weak")
    assert [ax.get_title() for ax in fig.axes] == [
        "fit on 80% of a, patch held-out 20% (n = 1 pair)",
        "helix fitted to shuffled a (n = 30 pairs)",
    ]
    effects = pd.DataFrame(
        {
            "reading": "last token",
            "component": ["MLP", "attention"],
            "layer": [0, 0],
            "te": [1.0, 0.5],
            "te_low": [np.nan, np.nan],
            "te_high": [np.nan, np.nan],
            "de": [0.2, 0.1],
            "de_low": [np.nan, np.nan],
            "de_high": [np.nan, np.nan],
            "n_pairs": [1, 4],
        }
    )
    fig = fig06_layer_patching(effects, "weak")
    assert [ax.get_title() for ax in fig.axes] == [
        "MLP outputs at the last token (n = 1 pair)",
        "attention outputs at the last token (n = 4 pairs)",
    ]
    fig.savefig(os.devnull, format="png")  # draws with NaN intervals
    assert pairs_note(controls) == "n = 1–30 pairs" and pairs_note(pd.DataFrame({"x": [1]})) == ""


def test_tensors_leave_the_device_as_numpy_can_hold_them():
    """bfloat16 (which numpy lacks) and float16 leave as float32, float64 stays, integers stay;
    ``dtype`` casts first (the cache stores the config's float16)."""
    from helixclock.project.io import to_numpy

    x = torch.tensor([1.0, 2.5, -3.25])
    for dtype, expected in (
        (torch.bfloat16, np.float32),
        (torch.float16, np.float32),
        (torch.float32, np.float32),
        (torch.float64, np.float64),
    ):
        out = to_numpy(x.to(dtype))
        assert out.dtype == expected and np.array_equal(out, [1.0, 2.5, -3.25])
    assert to_numpy(torch.arange(3)).dtype == np.int64
    assert to_numpy(x.to(torch.bfloat16), "float16").dtype == np.float16
    with pytest.raises(TypeError):  # what to_numpy is for: numpy has no bfloat16
        x.to(torch.bfloat16).numpy()


STOP = """
import sys
from types import SimpleNamespace
from helixclock.jobs.pipeline import start
from helixclock.prompts.sampling import pairs_available
from helixclock.jobs.preconditions import Need, check
snakemake = SimpleNamespace(log=[sys.argv[1]], threads=1, rule="residual_cache", wildcards={"model": "weak"})
start(snakemake)
check("weak", "residual_cache", [Need("correct a+b prompt", 0, 1)])
"""


def test_a_stopped_job_prints_its_line_and_no_traceback(tmp_path):
    """The job's console (what Snakemake shows) gets the line alone; its log gets it last."""
    log = tmp_path / "job.log"
    proc = subprocess.run([sys.executable, "-c", STOP, str(log)], capture_output=True, text=True, timeout=60)
    line = (
        "helixclock: weak: residual_cache needs at least 1 correct a+b prompt, found 0; "
        "this model's residual_cache and everything after it stop here"
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == line
    text = log.read_text()
    assert "Traceback" not in text and text.strip().splitlines()[-1].endswith("ERROR " + line)

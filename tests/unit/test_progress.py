"""Logs that read well (helixclock.project.progress): a long loop writes to a log file a line now and
then, in the log's format, never a progress bar's carriage returns; on a terminal it shows the
bar; every loop of the library goes through it."""

from __future__ import annotations

import io
import logging
import os
import re
import sys
from types import SimpleNamespace

from helixclock.project import progress as P

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO (.+)$")


class Clock:
    """A clock the test moves: ``step`` seconds each time it is read."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_long_loop_writes_a_bounded_number_of_log_lines_without_carriage_returns():
    """10,000 steps of 0.1 s each (1,000 s) with a line at most every 30 s: between 30 and 35
    lines, each in the log's format with the count, share and time left, the last one "done";
    no carriage return anywhere."""
    out = io.StringIO()
    bar = P.LogProgress(range(10_000), desc="clean run", stream=out, every_s=30, clock=Clock(0.1))
    assert sum(1 for _ in bar) == 10_000
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert 30 <= len(lines) <= 1000 / 30 + 2
    messages = [LINE.match(line).group(1) for line in lines]
    first = messages[0]
    assert first == "clean run: 300/10,000 (3%), 30 s so far, about 970 s left"  # 30 s at 0.1 s a step
    assert messages[-1] == "clean run: 10,000/10,000 (100%), done in 1000 s"


def test_a_short_loop_writes_nothing_and_postfix_and_update_work():
    out = io.StringIO()
    with P.LogProgress(total=50, desc="fit", stream=out, every_s=30, clock=Clock(0.1)) as bar:
        for _ in range(50):
            bar.update()
    assert out.getvalue() == ""  # 5 s: no line at all
    out = io.StringIO()
    bar = P.LogProgress(total=4, desc="train", stream=out, every_s=1, clock=Clock(2.0))
    bar.set_postfix(loss="0.123")
    bar.update(2)
    bar.close()
    bar.close()  # a second close writes nothing more
    messages = [LINE.match(line).group(1) for line in out.getvalue().splitlines()]
    assert messages == [
        "train: 2/4 (50%), 2 s so far, about 2 s left (loss 0.123)",
        "train: 2/4 (50%), done in 4 s (loss 0.123)",
    ]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_bar_a_file_the_lines_and_disable_nothing():
    from tqdm.std import tqdm

    term = Terminal()
    bar = P.progress(range(3), desc="x", stream=term)
    assert isinstance(bar, tqdm) and list(bar) == [0, 1, 2]
    assert "\r" in term.getvalue()  # the bar's redraws
    assert isinstance(P.progress(range(3), stream=io.StringIO()), P.LogProgress)
    quiet = io.StringIO()
    assert list(P.progress(range(3), stream=quiet, disable=True)) == [0, 1, 2] and quiet.getvalue() == ""


def test_the_patching_batches_write_progress_lines_to_a_log(monkeypatch):
    """OOMRetry (every batched model run) through the mechanism: with stderr a file and a line
    allowed every 0 s, one line a batch and a last one, no carriage return."""
    from helixclock.patching.batching import OOMRetry

    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    monkeypatch.setattr(P, "EVERY_S", 0.0)
    assert OOMRetry(10)(100, lambda a, b: (a, b), desc="clean run") == [(i, i + 10) for i in range(0, 100, 10)]
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and len(lines) == 11
    assert LINE.match(lines[3]).group(1).startswith("clean run: 40/100 (40%)")
    assert "done in" in lines[-1]


def test_a_jobs_log_gets_lines_not_bars_and_the_hugging_face_bars_are_off(tmp_path, monkeypatch):
    """pipeline.start, as every script calls it, with its log a file: the library's progress and
    the helixclock logger go to the log in one format; huggingface_hub's and transformers'
    bars are switched off (the environment variable and, imported already, the switch)."""
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars

    from helixclock.jobs.pipeline import start

    logger = logging.getLogger("helixclock")
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # start() sends stderr to the log: restored after
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(logger, "handlers", list(logger.handlers))
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.setattr(P, "EVERY_S", 0.0)
    enable_progress_bars()
    path = tmp_path / "job.log"
    job = SimpleNamespace(log=[str(path)], rule="a_rule", wildcards={"model": "toy"}, threads=1, resources=None)
    try:
        start(job)
        for _ in P.progress(range(3), desc="steps"):
            pass
        sys.stderr.flush()
        assert are_progress_bars_disabled()
        assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    finally:
        enable_progress_bars()
        if sys.stderr is not sys.__stderr__:
            sys.stderr.close()
    text = path.read_text()
    assert "\r" not in text
    messages = [LINE.match(line).group(1) for line in text.splitlines()]
    assert messages[0].startswith("rule a_rule, wildcards {'model': 'toy'}")
    counts = [m.split(", ")[0] for m in messages[1:]]
    assert counts == ["steps: 1/3 (33%)", "steps: 2/3 (67%)", "steps: 3/3 (100%)", "steps: 3/3 (100%)"]
    assert messages[-1].endswith("done in 0 s")

"""Progress of the library's long loops, one mechanism for all (batches of a patching run, the
answers' log-likelihoods, a toy's training): a bar on a terminal, and in a log file one line
now and then.

A job's stderr is its rule's log file (:func:`helixclock.project.io.start_log`).  A progress bar
written there is a long line of carriage returns, one redraw per update; instead, where the
stream is not a terminal, :func:`progress` writes a line in the log's own format at most every
``every_s`` seconds (none for a loop shorter than that) and one when a loop that wrote any
ends, so a log reads as a list of what happened::

    2026-11-27 22:16:40,112 INFO clean run: 3,200/10,000 (32%), 30 s so far, about 64 s left

:func:`quiet_third_party_bars` does the same for the bars of Hugging Face's libraries
(loading weights, downloads), which have no such mode: in a log file they are switched off.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator

EVERY_S = 30.0  # seconds between two progress lines in a log file
FORMAT = logging.Formatter("%(asctime)s %(levelname)s %(message)s")  # the log's own (io.start_log)


def interactive(stream) -> bool:
    """Whether ``stream`` shows a live bar: a terminal, or a Jupyter kernel's output."""
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False
    return "ipykernel" in sys.modules and stream in (sys.stdout, sys.stderr)


class LogProgress:
    """A progress bar for a log file: tqdm's calls (iteration, ``update``, ``set_postfix``,
    ``close``, ``with``), one line of the log's format at most every ``every_s`` seconds, the
    count, share, time so far and time left; a last line when a loop that wrote any ends."""

    def __init__(
        self,
        iterable: Iterable | None = None,
        total: int | None = None,
        desc: str = "",
        stream=None,
        every_s: float | None = None,
        clock=time.monotonic,
    ):
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total, self.desc, self.clock = total, desc or "progress", clock
        self.every_s = EVERY_S if every_s is None else every_s
        self.stream = stream if stream is not None else sys.stderr
        self.n, self.postfix, self.lines, self.closed = 0, "", 0, False
        self.start = self.last = clock()

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        if now - self.last >= self.every_s:
            self._write(now)

    def set_postfix(self, **values) -> None:
        self.postfix = ", ".join(f"{k} {v}" for k, v in values.items())

    def close(self) -> None:
        if not self.closed and self.lines:
            self._write(self.clock(), done=True)
        self.closed = True

    def _write(self, now: float, done: bool = False) -> None:
        elapsed = now - self.start
        count = f"{self.n:,}"
        if self.total is not None:
            count += f"/{self.total:,} ({self.n / max(self.total, 1):.0%})"
        if done:
            when = f"done in {elapsed:.0f} s"
        elif self.total and self.n:
            when = f"{elapsed:.0f} s so far, about {elapsed * (self.total - self.n) / self.n:.0f} s left"
        else:
            when = f"{elapsed:.0f} s so far"
        message = f"{self.desc}: {count}, {when}" + (f" ({self.postfix})" if self.postfix else "")
        record = logging.makeLogRecord({"msg": message, "levelname": "INFO", "levelno": logging.INFO})
        print(FORMAT.format(record), file=self.stream, flush=True)
        self.last, self.lines = now, self.lines + 1


class _Off:
    """A bar that shows nothing (``disable=True``), with tqdm's calls."""

    def __init__(self, iterable=None):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, **values) -> None:
        pass

    def close(self) -> None:
        pass


def progress(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    disable: bool = False,
    stream=None,
    every_s: float | None = None,
):
    """The progress of a loop over ``iterable`` (or of ``total`` steps counted by ``update``):
    tqdm's bar where ``stream`` (default stderr) is a terminal, else :class:`LogProgress`'s
    lines, at most every ``every_s`` seconds (default :data:`EVERY_S`); nothing with
    ``disable``."""
    stream = stream if stream is not None else sys.stderr
    if disable:
        return _Off(iterable)
    if interactive(stream):
        # deferred: a job that shows no bar (a figure's) does not import tqdm
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, file=stream, leave=False, mininterval=1)
    return LogProgress(iterable, total, desc, stream, every_s)


def quiet_third_party_bars(stream=None) -> None:
    """Where ``stream`` (default stderr) is not a terminal, switch off the progress bars of
    huggingface_hub and transformers (weights loading, downloads): the environment variable for
    a library imported later, the switch for one imported already."""
    if interactive(stream if stream is not None else sys.stderr):
        return
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "huggingface_hub" in sys.modules:
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()

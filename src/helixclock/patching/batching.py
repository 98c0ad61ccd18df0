"""Rows in chunks, with the batch halved on CUDA out-of-memory."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Sequence

import torch

from ..project.progress import progress as progress_bar

log = logging.getLogger("helixclock")


class OOMRetry:
    """Run ``fn(start, stop)`` over ``n`` rows in chunks of ``batch_size``; on CUDA
    out-of-memory halve the chunk, say so in the log, and retry the same rows.  A halved
    batch size sticks for later calls.  ``progress``: the rows done shown
    (:func:`helixclock.project.progress.progress`: a bar on a terminal, a line now and then in a log)."""

    def __init__(self, batch_size: int, progress: bool = True):
        self.batch_size = max(1, int(batch_size))
        self.progress = progress

    def iterate(
        self, n: int, fn: Callable[[int, int], object], desc: str = "", boundaries: Sequence[int] = ()
    ) -> Iterator[object]:
        """``fn(start, stop)`` over chunks of the rows; no chunk crosses a row index in
        ``boundaries`` (where the rows' token layout changes)."""
        bar = progress_bar(total=n, desc=desc, disable=not self.progress or n <= self.batch_size)
        ends = sorted({int(b) for b in boundaries if 0 < b < n} | {n})
        start = 0
        while start < n:
            stop = min(start + self.batch_size, next(e for e in ends if e > start))
            try:
                result = fn(start, stop)
            except torch.cuda.OutOfMemoryError:
                if self.batch_size == 1:
                    raise
                self.batch_size = max(1, self.batch_size // 2)
                torch.cuda.empty_cache()
                msg = f"CUDA out of memory: retrying with batch size {self.batch_size}"
                log.warning(msg)
                print(f"[helixclock] {msg}", file=sys.stderr, flush=True)
                continue
            bar.update(stop - start)
            start = stop
            yield result
        bar.close()

    def __call__(
        self, n: int, fn: Callable[[int, int], object], desc: str = "", boundaries: Sequence[int] = ()
    ) -> list:
        return list(self.iterate(n, fn, desc, boundaries))

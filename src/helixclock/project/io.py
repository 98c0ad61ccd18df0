"""Small I/O helpers shared by the pipeline's scripts: logs, tables, figures, JSON."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np


def start_log(path: str | os.PathLike | None, threads: int | None = None) -> logging.Logger:
    """Send stderr (progress bars, warnings) and the ``helixclock`` logger to ``path``."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "w", buffering=1)
        sys.stderr = fh
    logger = logging.getLogger("helixclock")
    logger.handlers.clear()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    if threads:
        # read by torch when (and if) the job imports it; plotting jobs never do
        os.environ["OMP_NUM_THREADS"] = str(int(threads))
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
    return logger


def to_numpy(tensor, dtype: str | None = None) -> np.ndarray:
    """A tensor leaving the device.  Floating point narrower than float32 (bfloat16, which
    numpy lacks, and float16) becomes float32, wider stays as it is, other dtypes too; with
    ``dtype`` ("float16", "float32", ...) it is cast to that on the device first (the cache's
    storage dtype).  Every tensor that becomes a table or a file goes through here."""
    tensor = tensor.detach()
    if dtype is not None:
        # deferred: torch stays out of the table and plotting jobs, which import this module
        import torch

        tensor = tensor.to(getattr(torch, dtype))
    elif tensor.is_floating_point() and tensor.element_size() < 4:
        tensor = tensor.float()
    return tensor.cpu().numpy()


def write_json(path: str | os.PathLike, obj: Any) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj, indent=2, default=_jsonable) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON serialisable: {type(x)}")


def write_table(
    df, csv_path: str | os.PathLike, md_path: str | os.PathLike | None = None, floatfmt: str = ".4g"
) -> None:
    """Write a table as CSV and (when asked) as a Markdown table beside it."""
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv_path, index=False)
    if md_path:
        Path(md_path).write_text(markdown_table(df, floatfmt) + "\n")


def markdown_table(df, floatfmt: str = ".4g") -> str:
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return format(float(v), floatfmt)
        return str(v).replace("\n", "\\n").replace("|", "\\|")

    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def save_figure(fig, outputs) -> None:
    """Save a matplotlib figure to every path in ``outputs`` (pdf and png)."""
    # deferred: matplotlib stays out of the model and table jobs, which import this module
    import matplotlib.pyplot as plt

    for path in outputs:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150 if str(path).endswith(".png") else None, bbox_inches="tight")
    plt.close(fig)


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every dataset of an HDF5 file as a numpy array (e.g. the neuron stage's grids.h5)."""
    # deferred: the figure and table jobs that import this module read no HDF5
    import h5py

    with h5py.File(path, "r") as f:
        return {key: f[key][...] for key in f}

"""Do two versions of the plotting code draw the same data?  (Issue 57: "every toy figure unchanged
in content" after a change of layout.)

    python benchmarks/figure_content.py RUN CONFIG OLD_SRC NEW_SRC

RUN: a finished run's folder, made by the new checkout; CONFIG: its config file; OLD_SRC, NEW_SRC: the
``src/`` folders of two checkouts (``git worktree add``).  Every plotting job of RUN (its rule's
function, input tables and keyword arguments, as Snakemake resolves them with the new checkout's
workflow) is drawn by each
version in a process of its own, and the figures' data are compared: per axes each line's x and y,
each collection's offsets and values, each bar's geometry, each image's values and the axes' own
annotations, never ticks, tick labels, legends, titles or positions (the layout).  A function whose
signature changed is called with the inputs the old one takes.  Prints each figure that differs and
what differs.  The layout change of 9243c91 against 32a8dce, on a tiny run made at 9243c91 (toy-gptj
and toy-digits): 74 of 82 figures draw the same data; the other 8, on both toys: Fig. D6 the same
values (seaborn's strip jitter is random), Fig. 7 two empty legend proxies fewer, Fig. 10 one
circuit MLP at another category position with the same values, Fig. D11 its intended change (the
layer bars as shares of each set, the running share over positive DE).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _rounded(values) -> list:
    a = np.asarray(values, dtype=float).ravel()
    return [None if not np.isfinite(x) else round(float(x), 6) for x in a]


def content(fig) -> list[str]:
    """The data a figure draws, axes by axes (sorted: a layout may reorder its axes)."""
    out = []
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        lines = sorted(json.dumps([_rounded(ln.get_xdata()), _rounded(ln.get_ydata())]) for ln in ax.get_lines())
        cols = sorted(
            json.dumps([_rounded(c.get_offsets()), _rounded(c.get_array()) if c.get_array() is not None else []])
            for c in ax.collections
        )
        bars = sorted(
            json.dumps(_rounded([p.get_x(), p.get_y(), p.get_width(), p.get_height()]))
            for p in ax.patches
            if isinstance(p, Rectangle)
        )
        images = [hashlib.sha256(json.dumps(_rounded(im.get_array())).encode()).hexdigest() for im in ax.images]
        texts = sorted(t.get_text() for t in ax.texts)
        if lines or cols or bars or images or texts:
            drawn = {"lines": lines, "collections": cols, "bars": bars, "images": images, "texts": texts}
            out.append(json.dumps(drawn))
    return sorted(out)


def draw_all(jobs_file: str, out_file: str) -> None:
    """Child process: draw every job with the helixclock first on sys.path, write its content."""
    try:
        # deferred: the helixclock of the checkout the caller put first on sys.path, not this one's
        from helixclock.stats.statistics import primary
    except ImportError:  # a checkout before src/helixclock was grouped into packages
        # deferred: as above, the older checkout's flat module
        from helixclock.statistics import primary
    found = {}
    for job in json.loads(Path(jobs_file).read_text()):
        module, name = job["function"].split(":")
        fn = getattr(importlib.import_module(module), name)
        tables = [primary(pd.read_csv(p)) for p in job["inputs"]]
        params = inspect.signature(fn).parameters.values()
        if not any(p.kind == p.VAR_POSITIONAL for p in params):  # a signature that changed: the tables it takes
            tables = tables[: len([p for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]) - 1]
        fig = fn(*tables, job["model"], **job["kwargs"])
        found[f"{job['model']}: {name}"] = content(fig)
        plt.close(fig)
    Path(out_file).write_text(json.dumps(found))


def main(run: str, config: str, old_src: str, new_src: str) -> int:
    # the jobs as the new checkout's workflow resolves them for the run (its test helper)
    checkout = Path(new_src).resolve().parent
    sys.path[:0] = [str(checkout / "src"), str(checkout / "tests"), str(checkout / "tests" / "dag")]
    # deferred: the new checkout's test helper, on sys.path only from the line above
    from test_run_figures_readable import plotting_jobs

    jobs = [{**j, "inputs": [str(p) for p in j["inputs"]]} for j in plotting_jobs(Path(run), Path(config))]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "jobs.json").write_text(json.dumps(jobs))
        drawn = {}
        for label, src in (("old", old_src), ("new", new_src)):
            out = Path(tmp) / f"{label}.json"
            code = f"import sys; sys.path.insert(0, {src!r}); sys.path.insert(1, {str(REPO / 'benchmarks')!r}); "
            code += f"import figure_content; figure_content.draw_all({str(Path(tmp) / 'jobs.json')!r}, {str(out)!r})"
            subprocess.run([sys.executable, "-c", code], check=True)
            drawn[label] = json.loads(out.read_text())
    old, new = drawn["old"], drawn["new"]
    differing = sorted(k for k in new if old.get(k) != new[k])
    print(f"{len(new) - len(differing)} of {len(new)} figures draw the same data")
    for key in differing:
        print(f"  {key}:")
        for a, b in zip(map(json.loads, old.get(key, [])), map(json.loads, new[key])):
            for part in a:
                if a[part] != b[part]:
                    print(f"    {part}: old {str(a[part])[:160]}\n    {' ' * len(part)}  new {str(b[part])[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))

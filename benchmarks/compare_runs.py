"""Compare every table of two runs of the workflow: a refactor must leave the results as they were.

    python benchmarks/compare_runs.py BEFORE AFTER [--allow-added reading,place] [--rtol 1e-6]

BEFORE and AFTER are two run folders (each holds ``results/``).  Every CSV, JSON and HDF5 file
under ``results/`` of either is compared: the same rows in the same order, every shared column
equal (numbers within ``rtol``/``atol``, NaN equal to NaN, text exactly), no column lost, and
no column added but those of ``--allow-added`` (each of those must hold one value per file where
``--one-value`` names it).  Figures, logs and provenance records (run times, versions, dates)
are not compared.  Prints one line per file that differs and a count; exits 1 where any
differs, so a refactor's note can say "equal but the files listed" with the list.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

SKIPPED_NAMES = ("provenance.json", "model.json", "timings.csv")  # run records: dates, versions, seconds
SKIPPED_PARTS = ("logs", "figures", "benchmarks")


def compared(root: Path) -> set[str]:
    """The files of a run that hold results, relative to its folder."""
    out = set()
    for path in (root / "results").rglob("*"):
        rel = path.relative_to(root)
        if not path.is_file() or path.suffix not in (".csv", ".json", ".h5"):
            continue
        if path.name in SKIPPED_NAMES or set(rel.parts) & set(SKIPPED_PARTS):
            continue
        out.add(str(rel))
    return out


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        return bool(np.allclose(a.astype(float), b.astype(float), rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(a.astype(str), b.astype(str)))


def compare_csv(before: Path, after: Path, allowed: set[str], rtol: float, atol: float) -> str | None:
    """What differs between two tables, or None where they are equal."""
    a, b = pd.read_csv(before), pd.read_csv(after)
    lost = [c for c in a.columns if c not in b.columns]
    added = [c for c in b.columns if c not in a.columns]
    if lost:
        return f"columns lost: {lost}"
    if set(added) - allowed:
        return f"columns added: {sorted(set(added) - allowed)}"
    if len(a) != len(b):
        return f"rows {len(a)} -> {len(b)}"
    bad = []
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if not _close(x, y, rtol, atol):
            if x.dtype.kind in "biuf" and y.dtype.kind in "biuf":
                diff = np.nanmax(np.abs(x.astype(float) - y.astype(float))) if len(x) else 0.0
                bad.append(f"{c} (max |diff| {diff:.3g})")
            else:
                bad.append(c)
    extra = f" (added {added})" if added else ""
    return f"values differ: {', '.join(bad[:8])}{' ...' if len(bad) > 8 else ''}{extra}" if bad else None


def _h5_items(path: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        for key, value in f.attrs.items():
            out[f"@{key}"] = np.asarray(value)
    return out


def compare_h5(before: Path, after: Path, rtol: float, atol: float) -> str | None:
    a, b = _h5_items(before), _h5_items(after)
    if set(a) != set(b):
        return f"datasets differ: lost {sorted(set(a) - set(b))}, added {sorted(set(b) - set(a))}"
    bad = [k for k in a if not _close(np.asarray(a[k]), np.asarray(b[k]), rtol, atol)]
    return f"values differ: {bad[:8]}" if bad else None


def compare_json(before: Path, after: Path) -> str | None:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    return None if a == b else "contents differ"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--allow-added", default="", help="comma-separated columns the AFTER run may add")
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--atol", type=float, default=1e-9)
    args = parser.parse_args(argv)
    allowed = {c for c in args.allow_added.split(",") if c}
    a, b = compared(args.before), compared(args.after)
    lines = [f"{rel}: only in BEFORE" for rel in sorted(a - b)] + [f"{rel}: only in AFTER" for rel in sorted(b - a)]
    for rel in sorted(a & b):
        before, after = args.before / rel, args.after / rel
        if rel.endswith(".csv"):
            why = compare_csv(before, after, allowed, args.rtol, args.atol)
        elif rel.endswith(".h5"):
            why = compare_h5(before, after, args.rtol, args.atol)
        else:
            why = compare_json(before, after)
        if why:
            lines.append(f"{rel}: {why}")
    for line in lines:
        print(line)
    print(f"{len(a & b)} files compared, {len(lines)} differ")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())

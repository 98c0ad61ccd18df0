"""Mutation testing of the statistics: ``make mutation`` (docs/benchmarks.md, "Mutation testing").

mutmut (requirements/mutation.txt, run from the ``.mutation`` venv the Makefile builds) mutates the
functions of the files ``[tool.mutmut] only_mutate`` names in pyproject.toml (inference.py,
multiplicity.py, crossfit.py, the findings stage's contrasts.py and verdicts.py) in a copy under
``mutants/``, and runs against each mutant the tests of ``pytest_add_cli_args_test_selection`` that
reach the mutated function.  This script runs it, reads every mutant's status (``mutmut results
--all true``), takes off the mutants ``tests/mutation-equivalent.txt`` lists as equivalent, and
prints and writes to ``benchmarks/out/mutation.json``:

    score = detected / (mutants - equivalent)

detected: killed by a test, or timed out (the mutant looped: the tests noticed).  Every other
status (survived, no test reaches it, suspicious, segfault) counts against the score.  Exits 1
below 90%, or when an entry of the equivalents file is stale (no such mutant, or its diff is no
longer the one the entry was written for).

    python benchmarks/mutation.py                    # a fresh run (mutants/ removed first)
    python benchmarks/mutation.py --keep             # resume: mutants already tested keep their result
    python benchmarks/mutation.py --keep 'helixclock.stats.multiplicity.*'   # rerun these mutants

The equivalents file: one mutant a line, ``NAME FINGERPRINT REASON`` (the fingerprint: the first 12
hex digits of the sha256 of the diff's changed lines, which this script prints beside each
survivor, so that a renumbered mutant is not excused by another's reason); ``#`` starts a comment.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = Path("tests/mutation-equivalent.txt")
OUT = Path("benchmarks/out/mutation.json")
SURVIVORS = Path("benchmarks/out/mutation-survivors.txt")  # every undetected mutant's diff
THRESHOLD = 0.90
DETECTED = {"killed", "timeout", "caught by type check"}


def mutmut(*args: str, capture: bool = False) -> str:
    """Run mutmut's command line in this interpreter's environment, from the repository root."""
    done = subprocess.run(
        [sys.executable, "-m", "mutmut", *args], cwd=ROOT, check=True, text=True, capture_output=capture
    )
    return done.stdout if capture else ""


def statuses(patterns: list[str]) -> dict[str, str]:
    """Every mutant's status (``mutmut results --all true``: lines ``    NAME: STATUS``), only
    those matching ``patterns`` when any are given."""
    found = {}
    for line in mutmut("results", "--all", "true", capture=True).splitlines():
        match = re.fullmatch(r"\s+(\S+): (.+)", line)
        if match and (not patterns or any(fnmatch.fnmatch(match.group(1), p) for p in patterns)):
            found[match.group(1)] = match.group(2).strip()
    return found


def diff(name: str) -> str:
    """The mutant's diff against the original function: what ``mutmut show NAME`` prints, through
    the functions that command calls (one process for every survivor instead of one each)."""
    # deferred: mutmut lives in the .mutation venv only (make mutation), never in .venv or CI
    from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant

    return get_diff_for_mutant(name, path=find_mutant(name).path)


def fingerprint(text: str) -> str:
    """The first 12 hex digits of the sha256 of a diff's changed lines (not its header, whose
    line numbers move when code above the function changes)."""
    changed = [line.strip() for line in text.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return hashlib.sha256("\n".join(changed).encode()).hexdigest()[:12]


def equivalents(path: Path) -> dict[str, tuple[str, str]]:
    """The equivalents file: mutant name -> (fingerprint, reason); a line without a reason is an error."""
    listed = {}
    if not path.exists():
        return listed
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise SystemExit(f"{path}:{number}: expected NAME FINGERPRINT REASON, got {line!r}")
        listed[parts[0]] = (parts[1], parts[2])
    return listed


def module(name: str) -> str:
    """helixclock.stats.inference.x_t_interval__mutmut_3 -> helixclock.stats.inference"""
    return name.rsplit(".", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="resume the last run instead of starting afresh")
    parser.add_argument("--max-children", type=int, default=None, help="mutmut's workers (default: every core)")
    parser.add_argument("patterns", nargs="*", help="mutant names or globs: run and score only these")
    args = parser.parse_args()
    os.chdir(ROOT)  # mutmut reads pyproject.toml and mutants/ from the working directory

    if not args.keep:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    run = ["run", *args.patterns]
    if args.max_children:
        run[1:1] = ["--max-children", str(args.max_children)]
    start = time.perf_counter()
    mutmut(*run)
    seconds = time.perf_counter() - start

    status = statuses(args.patterns)
    counts = Counter(status.values())
    if counts.get("not checked"):
        print(f"mutation: {counts['not checked']} mutants not checked: the run was interrupted", file=sys.stderr)
        return 1
    listed = equivalents(ROOT / EQUIVALENT)
    undetected = sorted(n for n, s in status.items() if s not in DETECTED)
    diffs = {n: diff(n) for n in undetected}
    excused = [n for n in undetected if n in listed and listed[n][0] == fingerprint(diffs[n])]
    stale = sorted(n for n in listed if n not in excused and (n in status or not args.patterns))
    unexplained = [n for n in undetected if n not in excused]
    detected = sum(counts[s] for s in DETECTED)
    scored = len(status) - len(excused)
    score = detected / scored if scored else 1.0

    by_module = defaultdict(list)
    for n in unexplained:
        by_module[module(n)].append(f"{n} {fingerprint(diffs[n])} ({status[n]})")
    report = {
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True, capture_output=True
        ).stdout.strip(),
        "patterns": args.patterns,
        "seconds": round(seconds, 1),
        "mutants": len(status),
        "by_status": dict(sorted(counts.items())),
        "detected": detected,
        "equivalent": len(excused),
        "score": round(score, 4),
        "threshold": THRESHOLD,
        "unexplained": dict(by_module),
        "stale_equivalents": stale,
    }
    (ROOT / OUT).parent.mkdir(parents=True, exist_ok=True)
    (ROOT / OUT).write_text(json.dumps(report, indent=2) + "\n")
    (ROOT / SURVIVORS).write_text(
        "".join(f"{n} {fingerprint(diffs[n])} ({status[n]})\n{diffs[n]}\n" for n in unexplained)
    )

    tally = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f"mutation: {len(status)} mutants in {seconds / 60:.1f} min: {tally}")
    print(f"mutation: {len(excused)} listed as equivalent in {EQUIVALENT}; {len(unexplained)} not explained")
    for mod, names in sorted(by_module.items()):
        print(f"  {mod}: {len(names)}")
        for n in names:
            print(f"    {n}")
    for n in stale:
        print(f"mutation: stale entry in {EQUIVALENT}: {n} (no such undetected mutant, or its diff changed)")
    print(f"mutation: score {detected}/{scored} = {score:.1%} (threshold {THRESHOLD:.0%}); {OUT}, diffs in {SURVIVORS}")
    return 0 if score >= THRESHOLD and not stale else 1


if __name__ == "__main__":
    sys.exit(main())

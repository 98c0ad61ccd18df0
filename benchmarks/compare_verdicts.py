"""Which verdicts of a findings table changed between two runs (or two versions of the statistics):
every finding id of either table with its verdict, estimate [interval] and pairs before and after,
the rows whose verdict differs first.

    python benchmarks/compare_verdicts.py BEFORE.csv AFTER.csv [--all]

BEFORE and AFTER are ``findings/contrasts.csv`` tables (e.g. docs/real-findings/{model}.csv at
two commits).  Prints a markdown table; the last line counts the changed verdicts.
"""

from __future__ import annotations

import sys

import pandas as pd


def described(row) -> str:
    if row is None:
        return "(absent)"
    interval = f"[{row['low']:.2f}, {row['high']:.2f}]" if pd.notna(row.get("low")) else ""
    pairs = f"{int(row['n_pairs'])} pairs" if pd.notna(row.get("n_pairs")) else ""
    return f"{row['verdict']}: {row['estimate']:.2f} {interval} {pairs}".strip()


def changes(before: pd.DataFrame, after: pd.DataFrame, everything: bool = False) -> list[tuple[str, str, str]]:
    """(id, before, after) for each finding whose verdict differs (every finding with ``everything``)."""
    b, a = before.set_index("id"), after.set_index("id")
    out = []
    for fid in dict.fromkeys([*b.index, *a.index]):
        rb = b.loc[fid] if fid in b.index else None
        ra = a.loc[fid] if fid in a.index else None
        differs = rb is None or ra is None or rb["verdict"] != ra["verdict"]
        if differs or everything:
            out.append((fid, described(rb), described(ra)))
    return out


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    before, after = pd.read_csv(argv[0]), pd.read_csv(argv[1])
    rows = changes(before, after, "--all" in argv)
    print("| finding | before | after |\n| --- | --- | --- |")
    for fid, b, a in rows:
        print(f"| `{fid}` | {b} | {a} |")
    changed = sum(b.split(":")[0] != a.split(":")[0] for _, b, a in rows)
    print(f"\n{changed} of {len(set(before['id']) | set(after['id']))} verdicts changed")


if __name__ == "__main__":
    main(sys.argv[1:])

"""What a run's findings show, on the site: the findings pages and tables of its models
snapshotted under ``docs/{folder}/`` (:func:`snapshot`), and a summary generated from those tables
written between two markers of the site's pages (its home page and the embedded default's):
which run it is (its commit and date), each model's verdict counts, the paper's claims on a+b
(Table 1's a+b row, Fig. 5 at the last token, Fig. 6: :data:`HEADLINE`) with the ones that hold
first, and those that hold on every model.  Every number is a value of the model's table, each
line of a claim its own row's (tests/unit/test_docs.py checks the committed summary line by row).

    python -m helixclock.stages.findings.summary DOCS MODEL [MODEL ...]

run in the finished project (``make toy-findings`` after ``make run``: the toys of the embedded
default, into ``docs/toy-findings/``, ``docs/index.md`` and ``docs/embedded-default.md``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

from .page import _cell, _tally, summary_line
from .snapshot import run_of, snapshot

FOLDER = "toy-findings"
PAGES = ("index.md", "embedded-default.md")  # the pages of DOCS that hold the summary
# the paper's claims the summary shows: the families of config/findings.yaml on a+b's central results
HEADLINE = ("table1", "fig05", "fig06")
BEGIN = (
    "<!-- findings-summary: written by `python -m helixclock.stages.findings.summary` (`make toy-findings`);"
    " regenerate, do not edit -->"
)
END = "<!-- /findings-summary -->"
BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
HEADER = "> From the run at commit `{commit}` on {date}: {pages}."


def headline(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the :data:`HEADLINE` families, those that hold first (stable: in the table's
    order otherwise)."""
    rows = table[table["family"].isin(HEADLINE)]
    return rows.sort_values("verdict", key=lambda v: v != "holds", kind="stable")


def model_section(model: str, table: pd.DataFrame, folder: str = FOLDER) -> list[str]:
    """One model's part: its verdict counts, then its headline claims as the findings page's
    summary table writes them."""
    rows = headline(table)
    lines = [
        f"**{model}** ([its findings page]({folder}/{model}.md)): verdicts of all {len(table)} rows: {_tally(table)}.",
        "",
    ]
    if not len(rows):
        return lines + ["None of the paper's claims on a+b applies to it.", ""]
    lines += [
        "| The paper's claim on a+b | Estimate [interval] | Level | Count | Verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    return lines + [summary_line(row) for _, row in rows.iterrows()] + [""]


def held_by_all(tables: dict[str, pd.DataFrame]) -> list[str]:
    """The headline claims that hold on every model, in the first model's order."""
    held = [set(headline(t).query("verdict == 'holds'")["claim"]) for t in tables.values()]
    first = headline(next(iter(tables.values())))
    return [c for c in first["claim"] if all(c in h for h in held)]


def summary_markdown(tables: dict[str, pd.DataFrame], commit: str, date: str, folder: str = FOLDER) -> str:
    """The block the pages hold, markers included."""
    pages = ", ".join(f"[{m}]({folder}/{m}.md)" for m in tables)
    lines = [BEGIN, "", HEADER.format(commit=commit, date=date, pages=pages), ""]
    both = held_by_all(tables)
    lines.append(
        f"Of the paper's claims on a+b (Table 1's a+b row, Fig. 5 at the last token, Fig. 6), "
        f"{'these hold on every model' if both else 'none holds on every model'}" + (":" if both else ".")
    )
    lines += [""] + [f"* {_cell(c)}" for c in both] + ([""] if both else [])
    for model, table in tables.items():
        lines += model_section(model, table, folder)
    lines.append(END)
    return "\n".join(lines)


def write_summary(project: Path, models: list[str], docs: Path, folder: str = FOLDER) -> list[Path]:
    """Snapshot the models' findings from ``project`` into ``docs/folder`` and write the summary
    into each of :data:`PAGES` of ``docs``, between its markers (a page without them is refused);
    the files written."""
    written = snapshot(project, models, docs / folder)
    tables = {m: pd.read_csv(docs / folder / f"{m}.csv") for m in models}
    block = summary_markdown(tables, *run_of(project), folder=folder)
    for name in PAGES:
        page = docs / name
        text = page.read_text()
        if not BLOCK.search(text):
            raise ValueError(f"{page} has no findings summary to replace (its markers: {BEGIN} ... {END})")
        page.write_text(BLOCK.sub(lambda _: block, text))
        written.append(page)
    return written


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    for path in write_summary(Path.cwd(), sys.argv[2:], Path(sys.argv[1])):
        print(path)

"""A committed snapshot of a run's findings pages (docs/real-models.md, "The findings"): each
model's ``results/{model}/findings.md`` copied under ``docs/`` beside its own ``contrasts.csv``,
with one quoted line naming the run's commit and date.  The page's numbers stay the table's
(tests/unit/test_docs.py checks the committed snapshot against its table).

    python -m helixclock.stages.findings.snapshot DEST MODEL [MODEL ...]

run in the finished project (``make findings-snapshot`` after ``make real``).
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
from pathlib import Path

from helixclock import outputs

HEADER = "> Snapshot of `{page}` from the run at commit `{commit}` on {date}; its table: [{table}]({table})."


def snapshot_header(page: str, commit: str, date: str, table: str) -> str:
    """The quoted line a snapshot adds below the page's title (what run, which table)."""
    return HEADER.format(page=page, commit=commit, date=date, table=table)


def snapshot(project: Path, models: list[str], dest: Path, commit: str, date: str) -> list[Path]:
    """Copy each model's findings page and table from ``project`` to ``dest`` as ``{model}.md``
    and ``{model}.csv``, the header line inserted after the page's title; the pages written."""
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for model in models:
        page = project / outputs.FINDINGS["page"].format(model=model)
        table = project / outputs.FINDINGS["contrasts"].format(model=model)
        if not page.exists() or not table.exists():
            raise FileNotFoundError(f"no findings of {model} in {project} (run `make real` first): {page}, {table}")
        title, _, body = page.read_text().partition("\n")
        header = snapshot_header(str(page.relative_to(project)), commit, date, f"{model}.csv")
        (dest / f"{model}.md").write_text(f"{title}\n\n{header}\n{body}")
        shutil.copyfile(table, dest / f"{model}.csv")
        written.append(dest / f"{model}.md")
    return written


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
    date = datetime.date.today().isoformat()
    for path in snapshot(Path.cwd(), argv[1:], Path(argv[0]), commit.stdout.strip(), date):
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])

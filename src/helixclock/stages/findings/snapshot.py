"""A committed snapshot of a run's findings pages (docs/real-models.md, "The findings"): each
model's ``results/{model}/findings.md`` copied under ``docs/`` beside its own ``contrasts.csv``,
with one quoted line naming the run's commit and date, read from the run's provenance record
(``results/all/provenance.json``).  The page's numbers stay the table's (tests/unit/test_docs.py
checks the committed snapshot against its table).

    python -m helixclock.stages.findings.snapshot DEST MODEL [MODEL ...]

run in the finished project (``make findings-snapshot`` after ``make real``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from helixclock.project import outputs

HEADER = "> Snapshot of `{page}` from the run at commit `{commit}` on {date}; its table: [{table}]({table})."


def run_of(project: Path) -> tuple[str, str]:
    """The commit (7 digits) and the date (YYYY-MM-DD) of the run in ``project``, from its
    provenance record."""
    record = project / outputs.RECORD
    if not record.exists():
        raise FileNotFoundError(f"no provenance record in {project} (finish `make run` or `make real` first): {record}")
    run = json.loads(record.read_text())
    return run["helixclock"]["commit"][:7], run["written"][:10]


def snapshot(project: Path, models: list[str], dest: Path) -> list[Path]:
    """Copy each model's findings page and tables from ``project`` to ``dest`` as ``{model}.md``,
    ``{model}.csv`` and ``{model}-model.csv`` (the model's accuracy, where the run wrote it), a
    line naming the run (its provenance record's commit and date) inserted after the page's
    title; the pages written."""
    commit, date = run_of(project)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for model in models:
        page = project / outputs.FINDINGS["page"].format(model=model)
        table = project / outputs.FINDINGS["contrasts"].format(model=model)
        if not page.exists() or not table.exists():
            raise FileNotFoundError(f"no findings of {model} in {project} (run `make real` first): {page}, {table}")
        title, _, body = page.read_text().partition("\n")
        header = HEADER.format(page=page.relative_to(project), commit=commit, date=date, table=f"{model}.csv")
        (dest / f"{model}.md").write_text(f"{title}\n\n{header}\n{body}")
        shutil.copyfile(table, dest / f"{model}.csv")
        about = project / outputs.FINDINGS["model"].format(model=model)  # the page's opening line's table
        if about.exists():
            shutil.copyfile(about, dest / f"{model}-model.csv")
        written.append(dest / f"{model}.md")
    return written


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    for path in snapshot(Path.cwd(), sys.argv[2:], Path(sys.argv[1])):
        print(path)

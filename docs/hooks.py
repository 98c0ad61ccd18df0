"""mkdocs hooks of helixclock's documentation (mkdocs.yml, ``hooks:``).

The outputs reference (docs/outputs.md) is generated at every build from the output registry
(:func:`helixclock.project.results.registered_outputs`) and the workflow's rules (read through
Snakemake's API, as ``snakemake --list-rules`` reads them): every registered output, every
figure and every table, with the rule that makes it and that rule's docstring.  A page can
therefore not fall behind the code, and ``mkdocs build --strict`` fails where the registry
names a path no rule makes.  The paper's numbering (the same page, "The paper's numbering") is
generated from :data:`helixclock.project.outputs.PAPER_FIGURES` and its neighbours: the compiled paper's
number of every figure and table id, and helixclock's own.

Two pages hold text kept elsewhere, read at every build so the site cannot fall behind it: the
configuration reference (docs/configuration.md) is config/README.md, and the Quickstart
(docs/quickstart.md) is the README's section "Quickstart"; a link of theirs into docs/ becomes
the site's page, a link to another file of the repository its path in code."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- outputs-reference -->"
NUMBERING = "<!-- paper-numbering -->"
# a page's marker -> (the file whose text replaces it, the "## " section of it or None for all)
INCLUDES = {
    "<!-- include: config/README.md -->": ("config/README.md", None),
    "<!-- include: README.md, Quickstart -->": ("README.md", "Quickstart"),
}


def _pattern(output: str) -> str:
    """A rule's output with its inline wildcard constraints dropped: {model,a|b} -> {model}."""
    out, i = [], 0
    while i < len(output):
        if output[i] == "{":
            depth, j = 1, i + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(output[j], 0)
                j += 1
            out.append("{" + output[i + 1 : j - 1].split(",", 1)[0] + "}")
            i = j
        else:
            out.append(output[i])
            i += 1
    return "".join(out)


def workflow_rules() -> dict[str, tuple[str, list[str]]]:
    """Every rule of the workflow on the default config: name -> (docstring, output patterns)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    cwd, path = os.getcwd(), list(sys.path)
    try:
        with tempfile.TemporaryDirectory() as work, SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
            workflow = api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(),
                snakefile=REPO / "Snakefile",
                workdir=Path(work),
            )
            return {r.name: (r.docstring or "", [_pattern(str(o)) for o in r.output]) for r in workflow._workflow.rules}
    finally:
        os.chdir(cwd)
        sys.path[:] = path


def reference_rows(rules: dict[str, tuple[str, list[str]]]) -> list[dict]:
    """One row per output: its id (registry, table or figure id), path and the rule that makes it
    (a staged job's work rule, whose publish job moves the file into place)."""
    sys.path.insert(0, str(REPO / "src"))
    from helixclock.project import outputs
    from helixclock.project.results import registered_outputs

    maker = {}
    for name, (doc, patterns) in rules.items():
        for pattern in patterns:
            if not pattern.startswith(outputs.STAGING):
                work = name.removeprefix("publish_") if name.startswith("publish_") else name
                maker[pattern] = (work, rules.get(work, (doc, []))[0])
    rows = []
    for output, path in registered_outputs().items():
        rows.append(
            {"id": output, "path": path, "rule": maker.get(path, ("", ""))[0], "what": maker.get(path, ("", ""))[1]}
        )
    ids = {r["path"] for r in rows}
    for path, (rule, doc) in sorted(maker.items()):
        folder = path.split("/")[-2] if "/" in path else ""
        if path in ids or folder not in ("figures", "tables") or path.endswith((".pdf", ".md")):
            continue
        rows.append({"id": Path(path).stem, "path": path, "rule": rule, "what": doc})
    return rows


AS_ABOVE = "as above"


def reference_markdown(rows: list[dict]) -> str:
    """The table of :func:`reference_rows`; a rule's description is written on the first of its
    consecutive rows, and the rows after it say "as above" (one job writes all of STRUCTURE.*)."""
    lines = ["| output | path | made by | what |", "|---|---|---|---|"]
    previous = None
    for r in rows:
        same = previous is not None and r["what"] and (r["rule"], r["what"]) == (previous["rule"], previous["what"])
        lines.append(f"| `{r['id']}` | `{r['path']}` | `{r['rule'] or '(none)'}` | {AS_ABOVE if same else r['what']} |")
        previous = r
    return "\n".join(lines)


def numbering_markdown() -> str:
    """One row per figure and table of the paper, in its order: the compiled number, the section
    it sits in, helixclock's id (or, for the two it draws as another figure of other models, which
    figure of which models), the paper's label; then helixclock's own figures and tables."""
    sys.path.insert(0, str(REPO / "src"))
    from helixclock.project import outputs

    lines = ["| the paper's | in | helixclock's id | the paper's label |", "|---|---|---|---|"]
    for kind, items in (("Figure", outputs.PAPER_FIGURES), ("Table", outputs.PAPER_TABLES)):
        for item in items:
            where = f"§{item.section}" if item.section.isdigit() else f"App. {item.section}"
            if item.output:
                output = f"`{item.output}`"
            else:
                output = f"none: `{outputs.PAPER_NOT_DRAWN[item.label]}` of the models `pythia` and `llama`"
            lines.append(f"| {kind} {item.number} | {where} | {output} | `{item.label}` |")
    for kind, ids in (("figure", outputs.OWN_FIGURES), ("table", outputs.OWN_TABLES)):
        for output in ids:
            lines.append(f"| none (helixclock's {kind}) | | `{output}` | |")
    return "\n".join(lines)


def included(path: str, section: str | None = None) -> str:
    """The text of a repository file (``path``) as a page of the site shows it: all of it, or the
    body of its ``## section`` (up to the next ``## ``; an absent section stops the build); links
    into docs/ become the site's pages, links to other files of the repository their path in code."""
    text = (REPO / path).read_text()
    if section is not None:
        match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
        if match is None:
            raise RuntimeError(f"{path} has no section '## {section}' for the site")
        text = match.group(1)
    folder = Path(path).parent

    def link(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if re.match(r"[a-z]+:|#", target):
            return m.group(0)
        resolved = (folder / target).as_posix()
        if resolved.startswith("docs/"):
            return f"[{label}]({resolved.removeprefix('docs/')})"
        return f"{label} (`{resolved}`)"

    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", link, text).strip() + "\n"


def on_page_markdown(markdown: str, page, config, files, rules=None):
    """The outputs page with its reference filled in (``rules``: the workflow's, read here unless
    given); an output of the registry that no rule makes stops the build."""
    for marker, (path, section) in INCLUDES.items():
        if marker in markdown:
            markdown = markdown.replace(marker, included(path, section))
    if NUMBERING in markdown:
        markdown = markdown.replace(NUMBERING, numbering_markdown())
    if MARKER not in markdown:
        return markdown
    rows = reference_rows(workflow_rules() if rules is None else rules)
    missing = [r["id"] for r in rows if not r["rule"]]
    if missing:
        raise RuntimeError(f"outputs reference: no rule makes the registered output(s) {', '.join(missing)}")
    return markdown.replace(MARKER, reference_markdown(rows))

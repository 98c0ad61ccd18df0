"""Output paths in one place (helixclock.project.outputs) and the table of docs/outputs.md ("Where each
figure comes from") true to the code: every rule it names exists and every function it names is
importable."""

import importlib
import re
from collections import Counter

import pytest
from helpers.dag import workflow_rules
from helpers.paths import REPO

from helixclock.project import outputs
from helixclock.stages.report.quantities import REGISTRY, TABLE_FILES


def outputs_table() -> list[list[str]]:
    """The rows of docs/outputs.md's table of rules and code, as cells."""
    text = (REPO / "docs" / "outputs.md").read_text()
    section = text[text.index("## Where each figure comes from") : text.index("## Layer numbering")]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    assert header[3:] == ["rules", "code (`helixclock.`…)"], header
    return [[c.strip() for c in row.strip("|").split(" | ")] for row in rows[1:]]


def test_every_rule_the_outputs_page_names_exists(tmp_path):
    listed = workflow_rules(tmp_path)
    named = {name for row in outputs_table() for name in re.findall(r"`(\w+)`", row[3])}
    assert len(named) > 40
    assert named <= set(listed), sorted(named - set(listed))


def test_every_function_the_outputs_page_names_is_importable():
    """A name with dots is a module path under helixclock and an attribute of it; a bare name
    after it is another attribute of the same module."""
    found = 0
    for row in outputs_table():
        module = None
        for name in re.findall(r"`([\w.]+)`", row[4]):
            if "." in name:
                module, name = name.rsplit(".", 1)
            assert module is not None, row
            assert hasattr(importlib.import_module(f"helixclock.{module}"), name), (module, name)
            found += 1
    assert found > 60


def test_paths_are_relative_to_the_project_folder():
    """Snakemake records the paths of a job's inputs: an absolute one would pin a finished
    project to its folder (docs/outputs.md, "Outputs")."""
    # PAPER_NOT_DRAWN: figure ids by the paper's label, no paths ("The paper's numbering")
    constants = {k: v for k, v in vars(outputs).items() if k.isupper() and k != "PAPER_NOT_DRAWN"}
    # folders and file names the workflow keeps beside the outputs (config/: in helixclock's checkout)
    kept = {"LOGS", "STAGING", "COMMITTED_TOYS", "PAPER_VALUES_SOURCE", "INSTALLED_GGUF", "CONVERTED_GGUF"}
    assert [constants[k] for k in sorted(kept)] == [
        "resources/toys", "converted", "model.gguf", "logs", "config/paper_values.yaml", ".staging"
    ]  # fmt: skip
    paths = [v for k, v in constants.items() if isinstance(v, str) and k not in kept]
    paths += [p for v in constants.values() if isinstance(v, dict) for p in v.values()]
    paths += outputs.figure("fig04_helix_patching") + outputs.table("tab01_other_tasks", "all")
    paths += [outputs.log("accuracy-{params_hash}"), outputs.benchmark("provenance", "all")]
    assert len(paths) > 60
    assert all(re.fullmatch(r"(results|resources/models|logs)(/[\w{}./-]+)?", p) for p in paths), paths
    assert outputs.MISTAKES == "results/{model}/mistakes"  # the stage's name (helixclock.stages.mistakes)
    assert outputs.WRONG_ANSWERS["wrong_answers"] == "results/{model}/mistakes/wrong_answers.csv"


def test_the_comparison_reads_the_registered_paths():
    """The paper comparison's tables are those of helixclock.project.outputs, and each quantity reads
    registered ones."""
    assert TABLE_FILES == outputs.COMPARED_TABLES
    assert TABLE_FILES["neurons"] == "results/{model}/neurons/neurons.csv"
    assert {k for q in REGISTRY.values() for k in q.tables} <= set(TABLE_FILES)


def test_no_rule_file_writes_a_path():
    """Rule files take every path (outputs, logs, staging, models) from helixclock.project.outputs
    (through common.smk), so none depends on another's constants and the include order does
    not matter."""
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        code = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]
        written = r"[\"'](results|resources|logs|config|\.staging)/"
        assert not [line for line in code if re.search(written, line)], path.name


# The paper's figures and tables per section, counted in its LaTeX source: the figure/figure* and
# table/table* environments with a \caption, in the order they appear, by the \section they sit in
# (the main text's number; after \appendix, the letter).  \appendix resets neither counter and the
# source sets none (no \setcounter, \numberwithin or \renewcommand of \thefigure or \thetable), so
# the compiled paper numbers figures 1..42 and tables 1..3 straight through.
PAPER_FIGURES_PER_SECTION = {"1": 1, "4": 3, "5": 6, "A": 1, "B": 4, "C": 7, "D": 13, "E": 1, "F": 6}
PAPER_TABLES_PER_SECTION = {"4": 1, "A": 1, "C": 1}
SECTION_ORDER = "12345ABCDEF"


@pytest.mark.parametrize(
    "items, per_section, prefix",
    [
        (outputs.PAPER_FIGURES, PAPER_FIGURES_PER_SECTION, "fig"),
        (outputs.PAPER_TABLES, PAPER_TABLES_PER_SECTION, "tab"),
    ],
    ids=["figures", "tables"],
)
def test_the_paper_numbers_follow_its_source(items, per_section, prefix):
    """Numbered 1..N in the paper's order, N the source's count, each section holding the source's
    count; a main-text id carries its number (fig04 is Figure 4), an appendix id its appendix's
    letter and its place there (figD2: the second figure of App. D, Figure 24)."""
    assert [item.number for item in items] == list(range(1, sum(per_section.values()) + 1))
    assert Counter(item.section for item in items) == per_section
    assert [item.section for item in items] == sorted((i.section for i in items), key=SECTION_ORDER.index)
    assert len({item.label for item in items}) == len(items)
    place = Counter()
    for item in items:
        place[item.section] += 1
        if item.output is None:
            continue
        if item.section.isdigit():
            assert item.output.startswith(f"{prefix}{item.number:02d}_"), item
        else:
            assert item.output.startswith(f"{prefix}{item.section}{place[item.section]}_"), item


def test_every_figure_and_table_is_the_papers_or_helixclocks_own():
    """Every id the rules make is one of the paper's figures or tables, or marked helixclock's own,
    never both; the paper's figures with no id of their own (C4, D1) are a main-text figure of the
    other models, named."""
    for ids, items, own in (
        (outputs.FIGURE_IDS, outputs.PAPER_FIGURES, outputs.OWN_FIGURES),
        (outputs.TABLE_IDS, outputs.PAPER_TABLES, outputs.OWN_TABLES),
    ):
        papers = [item.output for item in items if item.output]
        assert sorted(papers + list(own)) == sorted(ids)
        assert not set(papers) & set(own)
    missing = {item.label for item in outputs.PAPER_FIGURES if item.output is None}
    assert missing == set(outputs.PAPER_NOT_DRAWN) == {"fig:app_helix_pythia_llama", "fig:ab_helix_llama_pythia"}
    assert set(outputs.PAPER_NOT_DRAWN.values()) == {"fig04_helix_patching", "fig05_last_token_helix"}
    assert outputs.paper_number("figD2_head_patching") == "Figure 24"
    assert outputs.paper_number("figF6_logit_slope_fourier") == "Figure 42"
    assert outputs.paper_number("tabA1_prompts_accuracy") == "Table 2"
    assert outputs.paper_number("tabD1_head_categories") is None
    with pytest.raises(KeyError):
        outputs.paper_number("figC4_helix_pythia_llama")


def _cited(cell: str, kind: str) -> set[int]:
    """The numbers a "paper" cell cites after ``kind`` ("Fig"/"Figs." or "Table"/"Tables"), ranges
    expanded; what stands in parentheses (the id's letter and place) left out."""
    cell = re.sub(r"\([^)]*\)", "", cell)
    numbers = set()
    for run in re.findall(rf"{kind}s?\.? ([\d,\s–]+)", cell):
        for part in filter(None, (p.strip() for p in run.split(","))):
            low, _, high = part.partition("–")
            numbers |= set(range(int(low), int(high or low) + 1))
    return numbers


def test_the_outputs_page_gives_the_compiled_papers_numbers():
    """The "paper" column of docs/outputs.md's table of rules and code cites, for each row, the
    compiled paper's number of every paper figure and table the row's ids name (a range "a … b"
    in FIGURE_IDS' order), C4 and D1 beside Figs. 4 and 5, and no other; helixclock's own ids with
    a letter are marked as such."""
    number = {i.output: i.number for i in outputs.PAPER_FIGURES + outputs.PAPER_TABLES if i.output}
    also = {
        v: next(i.number for i in outputs.PAPER_FIGURES if i.label == k) for k, v in outputs.PAPER_NOT_DRAWN.items()
    }
    seen = set()
    for row in outputs_table():
        names = re.findall(r"`(\w+)`|(…)", row[0])
        ids = []
        for k, (name, ellipsis) in enumerate(names):
            if ellipsis:
                start, end = (outputs.FIGURE_IDS.index(names[k + d][0]) for d in (-1, 1))
                ids += outputs.FIGURE_IDS[start + 1 : end]
            elif name:
                ids.append(name)
        figures = {number[i] for i in ids if i in number and i.startswith("fig")}
        figures |= {also[i] for i in ids if i in also}
        tables = {number[i] for i in ids if i in number and i.startswith("tab")}
        assert (_cited(row[2], "Fig"), _cited(row[2], "Table")) == (figures, tables), row[:3]
        own = [i for i in ids if re.fullmatch(r"(fig|tab)[A-Z]\d+_\w+", i) and i not in number]
        assert not own or "helixclock's" in row[2], row[:3]
        seen |= set(ids)
    assert set(number) <= seen, sorted(set(number) - seen)
    assert _cited("Figs. 30 (D8), 7; Table 1, Figs. 12–14", "Fig") == {7, 12, 13, 14, 30}

"""Output paths in one place (helixclock.outputs) and the table of docs/outputs.md ("Where each
figure comes from") true to the code: every rule it names exists and every function it names is
importable."""

import importlib
import re

from helpers.dag import workflow_rules
from helpers.paths import REPO

from helixclock import outputs
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
    constants = {k: v for k, v in vars(outputs).items() if k.isupper()}
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
    """The paper comparison's tables are those of helixclock.outputs, and each quantity reads
    registered ones."""
    assert TABLE_FILES == outputs.COMPARED_TABLES
    assert TABLE_FILES["neurons"] == "results/{model}/neurons/neurons.csv"
    assert {k for q in REGISTRY.values() for k in q.tables} <= set(TABLE_FILES)


def test_no_rule_file_writes_a_path():
    """Rule files take every path (outputs, logs, staging, models) from helixclock.outputs
    (through common.smk), so none depends on another's constants and the include order does
    not matter."""
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        code = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]
        written = r"[\"'](results|resources|logs|config|\.staging)/"
        assert not [line for line in code if re.search(written, line)], path.name

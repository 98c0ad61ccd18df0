"""The documentation: the site builds with --strict (every page in the nav, no broken link), its
outputs reference lists every registered output with the rule that makes it, the README is a
front door of at most 300 lines whose links resolve, and the results API reads a project by the
pipeline's names (README, "Documentation"; docs/results-api.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import h5py
import numpy as np
import pandas as pd
import pytest
from helpers.pages import assert_every_number_is_in_the_table
from helpers.paths import REPO

from helixclock.project import outputs
from helixclock.project.results import Results, registered_outputs
from helixclock.stages.findings import summary
from helixclock.stages.findings.snapshot import snapshot


def docs_hooks():
    """docs/hooks.py, the mkdocs hook that generates the outputs reference."""
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_site(root, site):
    """`make docs`'s build of the site in ``root`` into ``site``.  Not with --quiet: mkdocs 1.6
    counts the warnings --strict fails on only where they are logged, and --quiet logs none (a
    broken link then builds)."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    proc = build_site(REPO, site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = (site / "outputs" / "index.html").read_text()
    assert "<!-- outputs-reference -->" not in page
    for output in ("HELIX_SUMMARY.sweep", "FINDINGS.contrasts", "fig04_helix_patching", "Figure 24"):
        assert output in page
    assert "<!-- paper-numbering -->" not in page
    # the configuration reference is config/README.md and the Quickstart the README's section, as
    # they stand: every key of the config table and every heading, on pages the home page links
    config = (site / "configuration" / "index.html").read_text()
    readme = (REPO / "config" / "README.md").read_text()
    keys = re.findall(r"^\| `([a-z_.]+)` \|", readme, re.M)
    assert len(keys) > 20 and all(f"<code>{key}</code>" in config for key in keys)
    for heading in re.findall(r"^## (.+)$", readme, re.M):
        assert re.sub(r"`([^`]+)`", r"<code>\1</code>", heading).replace("'", "&#39;") in config, heading
    quickstart = (site / "quickstart" / "index.html").read_text()
    assert "make run" in quickstart and 'href="../installation/"' in quickstart
    home = (site / "index.html").read_text()
    assert 'href="quickstart/"' in home and 'href="configuration/"' in home
    # long code lines wrap (docs/stylesheets/extra.css), on the Python API page too
    assert "stylesheets/extra.css" in (site / "results-api" / "index.html").read_text()
    assert "pre-wrap" in (site / "stylesheets" / "extra.css").read_text()
    # the search index splits a config key at its dots (mkdocs.yml, plugins: search), so that its
    # last part finds the configuration page (the built-in separator, spaces and dashes, did not)
    index = json.loads((site / "search" / "search_index.json").read_text())
    tokens = {
        doc["location"]: set(re.split(index["config"]["separator"], re.sub(r"<[^>]+>", " ", doc["text"])))
        for doc in index["docs"]
    }
    assert "largest_bare_number" in tokens["configuration/#configconfigyaml-what-to-run"]
    assert "largest_bare_number" not in set(re.split(r"[\s\-]+", "`cache.largest_bare_number`"))


def test_an_included_page_follows_its_source_and_its_links_resolve_on_the_site(tmp_path, monkeypatch):
    """docs/hooks.py's includes: a section of a file (up to the next "## "), its links into docs/
    made the site's pages, other repository links their path in code; a section not there stops the
    build rather than leaving a page empty."""
    hooks = docs_hooks()
    (tmp_path / "config").mkdir()
    (tmp_path / "README.md").write_text(
        "# T\n\n## Quickstart\n\nrun [it](docs/running.md#x) or see [the lock](requirements/lock.txt)"
        " and [web](https://example.org).\n\n## Next\n\nnot this\n"
    )
    monkeypatch.setattr(hooks, "REPO", tmp_path)
    text = hooks.included("README.md", "Quickstart")
    assert text == "run [it](running.md#x) or see the lock (`requirements/lock.txt`) and [web](https://example.org).\n"
    page = hooks.on_page_markdown("# Q\n\n<!-- include: README.md, Quickstart -->\n", None, None, None, rules={})
    assert "run [it](running.md#x)" in page and "not this" not in page and "include:" not in page
    with pytest.raises(RuntimeError, match="no section '## Setup'"):
        hooks.included("README.md", "Setup")


def test_the_strict_build_fails_on_a_broken_link(tmp_path):
    """The wrong arm of the build above: a page linking a page that is not there stops it (with
    --quiet, as make docs and the test built before, mkdocs 1.6.1 built it and exited 0)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# A\n\n[gone](gone.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nstrict: true\n")
    proc = build_site(tmp_path, tmp_path / "site")
    assert proc.returncode == 1 and "contains a link 'gone.md'" in proc.stderr


def test_the_outputs_reference_lists_every_registered_output_with_its_rule():
    hooks = docs_hooks()
    rules = hooks.workflow_rules()
    rows = {row["id"]: row for row in hooks.reference_rows(rules)}
    for output, path in registered_outputs().items():
        assert rows[output]["path"] == path and rows[output]["rule"] in rules, output
    # a staged output names the job that makes it, not the publish job that moves it
    assert rows["HEADS_RAW.effects"]["rule"] == "head_patching"
    assert rows["CACHE"]["rule"] == "residual_cache"
    # every figure of every rule file, and its docstring
    figures = {Path_stem(p) for rule in rules.values() for p in rule[1] if "/figures/" in p}
    assert figures and figures <= set(rows)
    assert rows["fig04_helix_patching"]["rule"] == "fig_helix_patching" and rows["fig04_helix_patching"]["what"]
    markdown = hooks.reference_markdown(list(rows.values()))
    assert markdown.count("\n") == len(rows) + 1
    # one job's description once, then "as above" down its rows (STRUCTURE.* are one job's)
    whats = [line.rsplit(" | ", 1)[1].removesuffix(" |") for line in markdown.splitlines()[2:]]
    assert all(a != b for a, b in zip(whats, whats[1:]) if b != hooks.AS_ABOVE), "a description repeated"
    structure = [w for (output, _), w in zip(rows.items(), whats) if output.startswith("STRUCTURE.")]
    assert structure[0] == rows["STRUCTURE.spectrum"]["what"] and set(structure[1:]) == {hooks.AS_ABOVE}


def Path_stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def test_the_outputs_page_numbers_every_figure_and_table_as_the_compiled_paper_does():
    """ "The paper's numbering": a row per figure and table of the paper (42 and 3) with its
    compiled number and helixclock's id, C4 and D1 as Figs. 4 and 5 of pythia and llama, then
    helixclock's own; the page's marker is replaced."""
    hooks = docs_hooks()
    markdown = hooks.numbering_markdown()
    rows = [line.split(" | ") for line in markdown.splitlines()[2:]]
    assert len(rows) == 42 + 3 + len(outputs.OWN_FIGURES) + len(outputs.OWN_TABLES)
    assert "| Figure 24 | App. D | `figD2_head_patching` | `fig:app_attn_act_patch` |" in markdown
    assert "| Table 2 | App. A | `tabA1_prompts_accuracy` |" in markdown
    assert "| Figure 19 | App. C | none: `fig04_helix_patching` of the models `pythia` and `llama` |" in markdown
    assert "| none (helixclock's table) | | `tabD1_head_categories` | |" in markdown
    page = (REPO / "docs" / "outputs.md").read_text()
    assert hooks.NUMBERING in page and "no `figC4` and no `figD1`" in page
    assert hooks.NUMBERING not in hooks.on_page_markdown(hooks.NUMBERING, None, None, None, rules={})


def test_a_registered_path_no_rule_makes_fails_the_build():
    hooks = docs_hooks()
    rules = hooks.workflow_rules()
    rules["head_patching"] = ("", [])  # as if the rule files lost the job that makes heads/raw/*
    rules["publish_head_patching"] = ("", [])
    with pytest.raises(RuntimeError, match="no rule makes the registered output"):
        hooks.on_page_markdown(hooks.MARKER, None, None, None, rules=rules)


def test_the_readme_is_a_front_door_whose_links_resolve():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert "## Contents" in readme and "## Quickstart" in readme
    anchors = re.findall(r"\]\(#([a-z0-9-]+)\)", readme)
    headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^## (.+)$", readme, re.M)}
    assert anchors and set(anchors) <= headings
    for target in re.findall(r"\]\(((?:docs|config)/[^)#]+)\)", readme):
        assert (REPO / target).exists(), target
    # the Quickstart's test command is the one CI runs
    assert "make lint && .venv/bin/python -m pytest -q --durations=10" in readme
    assert "make lint && .venv/bin/python -m pytest -q --durations=10" in (REPO / ".ci" / "run").read_text()


def planted_project(root):
    """A project folder with a few outputs of one model, written where the registry says."""
    model = "toy"
    for output, frame in {
        "CARD": None,
        "HELIX_SUMMARY.sweep": pd.DataFrame({"layer": [0, 1], "method": ["helix", "helix"], "ld_mean": [1.5, 2.5]}),
        "FINDINGS.contrasts": pd.DataFrame({"id": ["a"], "verdict": ["holds"]}),
    }.items():
        path = root / registered_outputs()[output].format(model=model)
        path.parent.mkdir(parents=True, exist_ok=True)
        if frame is None:
            path.write_text('{"model": "toy", "n_layers": 2}')
        else:
            frame.to_csv(path, index=False)
    table = root / outputs.table("tab01_other_tasks", model)[0]
    table.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"task": ["a+b"], "Full": [3.0]}).to_csv(table, index=False)
    return model


def test_results_reads_a_project_by_registry_table_and_figure_ids(tmp_path):
    model = planted_project(tmp_path)
    run = Results(tmp_path)
    # a few outputs of one model: not finished (tests/unit/test_results.py has a finished one), read all the same
    assert run.models == [] and run.unfinished == [model]
    assert run.card(model)["n_layers"] == 2
    assert run.table("HELIX_SUMMARY.sweep", model)["ld_mean"].tolist() == [1.5, 2.5]
    assert run.table("tab01_other_tasks", model)["Full"].tolist() == [3.0]
    assert run.findings(model)["verdict"].tolist() == ["holds"]
    assert run.path("fig04_helix_patching", model) == tmp_path / f"results/{model}/figures/fig04_helix_patching.png"
    with pytest.raises(KeyError, match="did you mean HELIX_SUMMARY.sweep"):
        run.path("HELIX_SUMARY.sweep", model)
    with pytest.raises(
        FileNotFoundError, match=r"finished models here: none; unfinished: toy\); make it with `snakemake"
    ):
        run.table("HEADS_SUMMARY.effects", model)
    with pytest.raises(FileNotFoundError, match="no results/ folder"):
        Results(tmp_path / "elsewhere")


def test_results_reads_one_layer_of_the_cache(tmp_path):
    path = tmp_path / outputs.CACHE.format(model="toy")
    path.parent.mkdir(parents=True)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 3, 4)).astype(np.float32)
    with h5py.File(path, "w") as f:
        f["a"], f["b"], f["last"] = a, a + 1, a + 2
        f["ab"] = np.arange(10).reshape(5, 2)
        f["numbers"] = rng.normal(size=(7, 3, 4)).astype(np.float32)
    (tmp_path / "results/toy/model.json").write_text("{}")
    values, ab = Results(tmp_path).cache_layer("toy", layer=1, position="b")
    assert np.array_equal(values, a[:, 1] + 1) and ab.tolist() == np.arange(10).reshape(5, 2).tolist()
    numbers, n = Results(tmp_path).cache_layer("toy", 2, "numbers")
    assert numbers.shape == (7, 4) and n.tolist() == list(range(7))
    with pytest.raises(ValueError, match="allowed 'a', 'b', 'last', 'numbers'"):
        Results(tmp_path).cache_layer("toy", 1, "c")


def test_every_registered_output_is_a_file_under_the_project():
    registry = registered_outputs()
    assert len(registry) > 80 and "CACHE" in registry and "HELIX_SUMMARY.sweep" in registry
    assert all(p.startswith(("results/", "resources/")) and "{model}" in p or "/all/" in p for p in registry.values())
    assert not any("/tables/" in p for p in registry.values())  # tables are read by their table ids


def test_a_findings_snapshot_names_its_run_and_keeps_the_page_and_its_table(tmp_path):
    """`make findings-snapshot`: each model's findings page and table copied with one quoted line
    after the title naming the run's commit and date (its provenance record's); a model without
    findings is refused."""
    page = tmp_path / outputs.FINDINGS["page"].format(model="m1")
    table = tmp_path / outputs.FINDINGS["contrasts"].format(model="m1")
    table.parent.mkdir(parents=True)
    page.write_text("# Findings: m1\n\nVerdicts: holds 1.\n")
    table.write_text("id,estimate\nf1,1.5\n")
    record = {"written": "2026-11-28T03:42:54+00:00", "helixclock": {"commit": "abc1234" + "0" * 33}}
    (tmp_path / outputs.RECORD).parent.mkdir(parents=True)
    (tmp_path / outputs.RECORD).write_text(json.dumps(record))
    (written,) = snapshot(tmp_path, ["m1"], tmp_path / "docs")
    assert written.read_text() == (
        "# Findings: m1\n\n> Snapshot of `results/m1/findings.md` from the run at commit `abc1234` on 2026-11-28;"
        " its table: [m1.csv](m1.csv).\n\nVerdicts: holds 1.\n"
    )
    assert (tmp_path / "docs" / "m1.csv").read_text() == table.read_text()
    assert not (tmp_path / "docs" / "m1-model.csv").exists()  # a run from before findings/model.csv
    about = tmp_path / outputs.FINDINGS["model"].format(model="m1")
    about.write_text("task,prompts,correct,accuracy_percent\nadd,10000,2086,20.86\n")
    snapshot(tmp_path, ["m1"], tmp_path / "docs")
    assert (tmp_path / "docs" / "m1-model.csv").read_text() == about.read_text()
    with pytest.raises(FileNotFoundError, match="no findings of m2"):
        snapshot(tmp_path, ["m2"], tmp_path / "docs")


REAL_FINDINGS = REPO / "docs" / "real-findings"  # `make findings-snapshot` after `make real`
SNAPSHOT_HEADER = re.compile(
    r"> Snapshot of `results/(?P<model>[\w.-]+)/findings\.md` from the run at commit `[0-9a-f]{7,40}`"
    r" on \d{4}-\d\d-\d\d; its table: \[(?P=model)\.csv\]\((?P=model)\.csv\)\."
)


@pytest.mark.parametrize("model", ["smollm2-135m", "gemma3-270m"])
def test_the_committed_real_findings_snapshot_prints_only_its_own_tables_numbers(model):
    """docs/real-models.md, "The findings": the committed snapshot of each real model's findings
    page names its run (commit and date) and every number it prints is in its own contrasts.csv."""
    title, blank, header, body = (REAL_FINDINGS / f"{model}.md").read_text().split("\n", 3)
    assert title == f"# Findings: {model}" and not blank and SNAPSHOT_HEADER.fullmatch(header), header
    table = pd.read_csv(REAL_FINDINGS / f"{model}.csv")
    assert set(table["verdict"]) >= {"holds", "not distinguished"}
    about = REAL_FINDINGS / f"{model}-model.csv"  # the opening line's table, in snapshots since issue 54
    about = pd.read_csv(about) if about.exists() else None
    assert assert_every_number_is_in_the_table(body, table, model=about) > 500


TOY_FINDINGS = REPO / "docs" / "toy-findings"  # `make toy-findings` after `make run`
TOYS = ("toy-gptj", "toy-llama")
SUMMARY_HEADER = re.compile(
    r"> From the run at commit `[0-9a-f]{7,40}` on \d{4}-\d\d-\d\d: "
    r"(?:\[([\w.-]+)\]\(toy-findings/\1\.md\)(?:, )?)+\."
)


def check_findings_summary(block: str, tables: dict[str, pd.DataFrame]) -> int:
    """How many numbers a findings summary (helixclock.stages.findings.summary) prints, each
    checked against its model's table: a claim's line against its own row, sign included, any
    other line against the table (tests/helpers/pages.py); its header names the run; each model's
    part lists exactly the model's headline claims, those that hold first; a claim said to hold on
    every model holds in every table."""
    lines = block.splitlines()
    assert lines[0] == summary.BEGIN and lines[-1] == summary.END
    assert SUMMARY_HEADER.fullmatch(lines[2]), lines[2]
    starts = [i for i, line in enumerate(lines) if any(line.startswith(f"**{m}** ") for m in tables)]
    assert [lines[i].split("**")[1] for i in starts] == list(tables)
    intro = "\n".join(lines[3 : starts[0]])
    found = 0
    for table in tables.values():
        found += assert_every_number_is_in_the_table(intro, table, every_row=False)
    for claim in (line[2:] for line in intro.splitlines() if line.startswith("* ")):
        for model, table in tables.items():
            assert (table.loc[table["claim"] == claim, "verdict"] == "holds").all() and claim in set(table["claim"]), (
                model,
                claim,
            )
    for (model, table), start, end in zip(tables.items(), starts, [*starts[1:], len(lines) - 1]):
        part = "\n".join(lines[start:end])
        found += assert_every_number_is_in_the_table(part, table, every_row=False)
        claims = [line.split(" | ")[0][2:] for line in part.splitlines()[4:] if line.startswith("| ")]
        rows = table[table["family"].isin(summary.HEADLINE)]
        assert sorted(claims) == sorted(rows["claim"]), model
        verdicts = [rows.loc[rows["claim"] == c, "verdict"].item() for c in claims]
        assert verdicts == sorted(verdicts, key=lambda v: v != "holds"), model
    return found


def test_a_findings_summary_prints_only_its_tables_numbers_and_names_its_run(tmp_path):
    """`make toy-findings` on a planted run of two models (the frozen SmolLM2 table; the second
    with one headline claim that held not distinguished): the pages are snapshotted, the summary
    replaces the block between the markers of the home page and the embedded default's, the claim
    that no longer holds on both is not listed as holding on every model, and the check above
    passes.  The wrong arms: one number of a claim's line changed, or its sign flipped, fails the
    check; a page without the markers is refused."""
    frozen = pd.read_csv(REPO / "tests" / "data" / "findings" / "smollm2-135m-0eaabb1.csv")
    second = frozen.copy()
    second.loc[second["id"] == "fig06_mlps_above_attention", "verdict"] = "not distinguished"
    for model, table in {"m1": frozen, "m2": second}.items():
        path = tmp_path / outputs.FINDINGS["contrasts"].format(model=model)
        path.parent.mkdir(parents=True)
        table.to_csv(path, index=False)
        (tmp_path / outputs.FINDINGS["page"].format(model=model)).write_text(f"# Findings: {model}\n\nA page.\n")
    record = {"written": "2026-11-28T21:00:00+00:00", "helixclock": {"commit": "abc1234" + "0" * 33}}
    (tmp_path / outputs.RECORD).parent.mkdir(parents=True)
    (tmp_path / outputs.RECORD).write_text(json.dumps(record))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in summary.PAGES:
        (docs / name).write_text(f"# {name}\n\n{summary.BEGIN}\nold lines\n{summary.END}\n\nAfter.\n")
    written = summary.write_summary(tmp_path, ["m1", "m2"], docs, folder="toy-findings")
    assert {p.name for p in written} == {"m1.md", "m2.md", *summary.PAGES}
    pages = {name: (docs / name).read_text() for name in summary.PAGES}
    block = summary.BLOCK.search(pages["index.md"]).group(0)
    assert pages["index.md"] == f"# index.md\n\n{block}\n\nAfter.\n" and block in pages["embedded-default.md"]
    assert (
        "> From the run at commit `abc1234` on 2026-11-28: [m1](toy-findings/m1.md), [m2](toy-findings/m2.md)." in block
    )
    tables = {m: pd.read_csv(docs / "toy-findings" / f"{m}.csv") for m in ("m1", "m2")}
    assert check_findings_summary(block, tables) > 40
    held = [line[2:] for line in block.splitlines() if line.startswith("* ")]
    fig06 = frozen.loc[frozen["id"] == "fig06_mlps_above_attention", "claim"].item()
    poly = frozen.loc[frozen["id"] == "table1_helix_above_poly", "claim"].item()
    assert poly in held and fig06 not in held
    line = next(line for line in block.splitlines() if line.startswith(f"| {poly} |"))
    assert "Helix − Poly = 2.74 [1.56, 3.92]" in line  # the frozen table's row
    for wrong in ("Helix − Poly = 2.75 [1.56, 3.92]", "Helix − Poly = −2.74 [1.56, 3.92]"):
        with pytest.raises(AssertionError, match="is not in the table's row"):
            check_findings_summary(block.replace("Helix − Poly = 2.74 [1.56, 3.92]", wrong), tables)
    (docs / "index.md").write_text("# A page without the markers\n")
    with pytest.raises(ValueError, match="has no findings summary to replace"):
        summary.write_summary(tmp_path, ["m1", "m2"], docs, folder="toy-findings")


def test_the_committed_toy_findings_summary_prints_only_its_tables_numbers():
    """docs/index.md and docs/embedded-default.md, "What the toys show": the summary of the last
    `make run` (`make toy-findings`) is the same block on both pages, names its run, and prints
    only numbers of the toys' committed tables, each claim's line its own row's."""
    blocks = {summary.BLOCK.search((REPO / "docs" / name).read_text()).group(0) for name in summary.PAGES}
    assert len(blocks) == 1
    tables = {m: pd.read_csv(TOY_FINDINGS / f"{m}.csv") for m in TOYS}
    assert check_findings_summary(blocks.pop(), tables) > 40


@pytest.mark.parametrize("model", TOYS)
def test_the_committed_toy_findings_snapshot_prints_only_its_own_tables_numbers(model):
    """The toys' findings pages the summary links, snapshotted with their run's commit and date."""
    title, blank, header, body = (TOY_FINDINGS / f"{model}.md").read_text().split("\n", 3)
    assert title == f"# Findings: {model}" and not blank and SNAPSHOT_HEADER.fullmatch(header), header
    table = pd.read_csv(TOY_FINDINGS / f"{model}.csv")
    about = pd.read_csv(TOY_FINDINGS / f"{model}-model.csv")  # the opening line's table (issue 54 item 7)
    assert assert_every_number_is_in_the_table(body, table, model=about) > 100


def test_the_findings_page_has_headings_and_writes_its_formulas_for_the_site():
    """docs/findings.md: the statistics under a heading of their own, a subheading a topic (the
    site's table of contents lists them), and no formula in TeX's or code's notation, which the
    site would print as it stands (t_{df, 1−α'/2}, sqrt(C/(C-1)), R^2)."""
    page = (REPO / "docs" / "findings.md").read_text()
    headings = re.findall(r"^(#{2,3}) (.+)$", page, re.M)
    assert ("##", "The statistics") in headings and ("##", "The findings page") in headings
    assert len([h for level, h in headings if level == "###"]) >= 10
    assert not re.search(r"_\{|\^\d|sqrt\(|\bR\^2", page), re.search(r".{30}(_\{|\^\d|sqrt\(|R\^2).{30}", page)
    assert "t<sub>df, 1 − α′/2</sub>" in page

"""The HTML report of the tiny run: every figure and table of the run, and the paper beside it."""

import base64
import json
import platform
import re
import subprocess
from importlib.metadata import version

import pandas as pd
import yaml
from helpers.dag import snakemake
from helpers.pages import assert_the_html_holds_the_page
from helpers.paths import REPO

STYLESHEET = REPO / "workflow" / "report" / "report.css"  # the README's report command gives it


def test_report_names_every_output_of_the_run(tiny_run):
    work, _ = tiny_run
    snakemake(work, "--report", str(work / "report.html"), "--report-stylesheet", str(STYLESHEET))
    html = (work / "report.html").read_text(errors="replace")
    figures = {p.stem for p in (work / "results").glob("*/figures/*.png")}
    tables = {p.stem for p in (work / "results").glob("*/tables/*.csv")}
    assert len(figures) == 44  # 42 per model (Figs. N1 and N2, helixclock's, included) and two across models
    for model in ("toy-gptj", "toy-digits"):  # both toys' figures, toy-digits' numbers of several tokens too
        assert len(list((work / "results" / model / "figures").glob("*.png"))) == 42, model
    assert {
        "fig01_clock",
        "fig08_neuron_preacts",
        "figF6_logit_slope_fourier",
        "figN1_number_bases",
        "figAll_ld_ratios",
    } <= figures
    assert {"paper_comparison", "provenance", "tab01_other_tasks", "tabD2_top_neurons", "tabF2_carry_test"} <= tables
    missing = sorted(x for x in figures | tables if x not in html)
    assert not missing, f"not in the report: {missing}"
    # grouped by paper section, the paper beside the run first
    names = [
        "0 Paper vs run",
        "1 Accuracy",
        "2 Structure of numbers",
        "3 The helix",
        "4 The last token",
        "5 Attention heads",
        "6 MLPs",
        "7 Neurons",
        "8 Why a helix",
    ]
    assert all(name in html for name in names)
    # the report's entries (its embedded `results` and `categories`): every model's findings page (its
    # HTML: the report shows it in a frame; findings.md is no entry) and table, under "9 Findings", one
    # subcategory a model, and the landing text links each page; the page embedded is the run's, and
    # holds its Markdown page word for word
    results, categories, landing = (report_variable(html, name) for name in ("results", "categories", "workflow_desc"))
    findings = categories["9 Findings: every declared claim tested"]
    for model in ("toy-gptj", "toy-digits"):
        page, contrasts = f"results/{model}/findings.html", f"results/{model}/findings/contrasts.csv"
        assert sorted(findings[model]) == sorted([page, contrasts])
        assert results[page]["mime_type"] == "text/html" and "findings page" in results[page]["caption"]
        shown = data_uri_text(results[page]["data_uri"])
        assert shown == (work / page).read_text(encoding="utf-8")
        assert assert_the_html_holds_the_page(shown, (work / f"results/{model}/findings.md").read_text()) > 20
        assert results[contrasts]["mime_type"] == "text/csv" and "findings table" in results[contrasts]["caption"]
        assert f"app.showResultInfo('{page}')" in landing
    assert "Where to start" in landing
    # the landing page's text first, the rule graph in a box beside it (workflow/report/report.css,
    # given as the README's report command gives it, embedded in the page)
    assert STYLESHEET.read_text() in html


def data_uri_text(uri: str) -> str:
    """The text a report entry embeds (``data:<mime>[;charset=...];base64,<data>``)."""
    header, _, data = uri.partition(",")
    assert header.startswith("data:text/html") and header.endswith(";base64"), header
    return base64.b64decode(data).decode("utf-8")


def report_variable(html: str, name: str):
    """A variable of the data Snakemake's HTML report embeds (one JSON value a line: `var results = {...};`)."""
    match = re.search(rf"^\s*var {name} = (\{{.*\}}|\".*\");$", html, re.M)
    assert match, name
    return json.loads(match.group(1))


def test_paper_comparison_has_every_quantity_for_every_model(tiny_run):
    work, _ = tiny_run
    values = yaml.safe_load((REPO / "config" / "paper_values.yaml").read_text())["quantities"]
    table = pd.read_csv(work / "results/all/tables/paper_comparison.csv")
    for model in ("toy-gptj", "toy-digits"):
        part = table[table["model"] == model]
        assert set(part["id"]) == {q["id"] for q in values}
        # every row has a status of status.STATUSES, a value where it is judged, and a reason
        judged = {"agree", "differ", "not comparable"}
        assert set(part["status"]) <= judged | {"not run", "not defined"}, set(part["status"])
        assert part.loc[part["status"].isin(judged), "run_value"].notna().all()
        assert part["reason"].notna().all()
        # a toy of 2 layers of 4 heads has no top 20 heads
        k20 = part.set_index("id").loc["heads_fraction_k20"]
        assert k20["status"] == "not defined" and k20["reason"].endswith("ends at k = 8 heads")
        left = pd.read_csv(work / f"results/{model}/helix/other_tasks_left_out.csv")
        for task in left["task"]:  # a task left out of Table 1: its rows say so, with the count
            rows = part[part["id"].str.startswith(f"tab01_{task}_")]
            assert (rows["status"] == "not run").all() and rows["reason"].str.contains("left out of Table 1").all()
    counts = pd.read_csv(work / "results/all/tables/paper_comparison_status.csv").set_index("model")
    for model, part in table.groupby("model"):
        assert counts.loc[model, "total"] == len(part) == len(values)
        assert counts.loc[model, "agree"] == (part["status"] == "agree").sum()
    md = (work / "results/all/tables/paper_comparison.md").read_text()
    assert md.count("| tab01_add_helix |") == 2


def test_the_run_records_what_it_ran_on(tiny_run):
    """docs/running.md, "Provenance of a run": the record, the model cards' environment, the table the
    report shows and paper_comparison's column naming the record."""
    work, _ = tiny_run
    record = json.loads((work / "results/all/provenance.json").read_text())
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert record["helixclock"]["commit"] == head.strip() and record["python"] == platform.python_version()
    for name in ("torch", "transformers", "nnsight", "snakemake", "numpy"):
        assert record["packages"][name] == version(name)
    assert record["device"]["setting"] == "cpu" and record["device"]["resolved"] == "cpu"
    for model in ("toy-gptj", "toy-digits"):
        card = json.loads((work / f"results/{model}/model.json").read_text())
        assert card["environment"]["packages"] == record["packages"] and record["models"][model] == card["environment"]
    table = pd.read_csv(work / "results/all/tables/provenance.csv", keep_default_na=False).set_index("item")
    assert list(table.columns) == ["run", "lock", "toy-gptj", "toy-digits"]
    assert table.loc["transformers", "run"] == table.loc["transformers", "toy-digits"] == version("transformers")
    comparison = pd.read_csv(work / "results/all/tables/paper_comparison.csv")
    assert (comparison["provenance"] == "results/all/provenance.json").all()
    assert (
        "What the run ran on: `results/all/provenance.json`"
        in (work / "results/all/tables/paper_comparison.md").read_text()
    )

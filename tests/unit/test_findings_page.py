"""The findings page (docs/findings.md, "The findings page"): it opens with a summary table of the
tested findings, says how to read it, then gives one line a row under its family's heading; each
line prints its own row's numbers with their signs (tests/helpers/pages.py, checked here against a
page corrupted as the former check let pass), bounds with the decimals that show their sign, why a
row was not computed, the sampling unit of a table of units, each row's split in words, and a
simultaneous interval where the table has one."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from helpers.pages import NUMBER, assert_every_number_is_in_the_table, assert_the_html_holds_the_page, markdown_blocks

from helixclock.stages.findings.page import SPLITS, findings_page, page_html
from helixclock.stages.findings.tables import model_table

REPO = Path(__file__).resolve().parents[2]
# a frozen contrasts table of SmolLM2 (the snapshot's at commit 0eaabb1): the page's rendering is
# tested on a fixed input; the committed snapshot itself is checked line by row in test_docs.py
SMOLLM2 = REPO / "tests" / "data" / "findings" / "smollm2-135m-0eaabb1.csv"


def former_check(page: str, table: pd.DataFrame) -> int:
    """The page check before issue 53 (the wrong arm): a number passes where its rounded value,
    or its rounded absolute value, is any number cell of the table, or it sits in any text cell."""
    text = {str(v) for col in table for v in table[col] if isinstance(v, str)}
    values = [float(v) for col in table.select_dtypes("number") for v in table[col] if pd.notna(v)]
    values += [float(n) for col in table.select_dtypes(include=["object", "str"]) for n in table[col].value_counts()]
    found = 0
    for match in re.finditer(r"[−-]?\d+(?:\.\d+)?", page):
        token = match.group(0).replace("−", "-")
        decimals = len(token.split(".")[1]) if "." in token else 0
        as_text = any(match.group(0) in t or token in t for t in text)
        as_value = any(round(v, decimals) == float(token) or round(abs(v), decimals) == float(token) for v in values)
        assert as_text or as_value, f"{match.group(0)} in the page is not in the table"
        found += 1
    return found


def section(page: str, title_start: str) -> str:
    """The lines of the section whose heading starts with ``title_start``."""
    start = page.index(f"\n## {title_start}")
    end = page.find("\n## ", start + 1)
    return page[start : end if end > 0 else len(page)]


def line_of(page: str, row_id: str) -> str:
    return next(line for line in page.splitlines() if line.endswith(f" Row `{row_id}`."))


def test_a_flipped_sign_or_another_rows_numbers_fail_the_check_the_former_one_passed():
    """SmolLM2's committed table: Helix − Full (−0.28 [−0.64, 0.09]) printed as +0.28, and the
    estimates and intervals of Helix − PCA and Helix − Circle swapped between their lines. The
    former check passes both corrupted sections (every number is, in size, somewhere in the
    table); the line-by-row check passes the page as rendered and fails each corruption, naming
    the row."""
    table = pd.read_csv(SMOLLM2)
    page = findings_page(table, "smollm2-135m")
    assert assert_every_number_is_in_the_table(page, table) > 2000
    full, pca, circle = (
        line_of(page, i) for i in ("table1_helix_below_full", "table1_helix_above_pca", "table1_helix_above_circle")
    )
    assert "Helix − Full = −0.28 [−0.64, 0.09]" in full
    assert "= −0.06 [−0.32, 0.19]" in pca and "= −0.04 [−0.40, 0.32]" in circle

    flipped = page.replace(full, full.replace("Helix − Full = −0.28", "Helix − Full = 0.28"))
    swapped_pca = pca.replace("−0.06 [−0.32, 0.19]", "−0.04 [−0.40, 0.32]")
    swapped_circle = circle.replace("−0.04 [−0.40, 0.32]", "−0.06 [−0.32, 0.19]")
    swapped = page.replace(pca, swapped_pca).replace(circle, swapped_circle)
    for corrupted in (flipped, swapped):
        assert corrupted != page
        assert former_check(section(corrupted, "Table 1 on a+b"), table) > 50  # the former check: passes
    with pytest.raises(AssertionError, match=r"0\.28 in the line of row table1_helix_below_full is not in the table"):
        assert_every_number_is_in_the_table(flipped, table)
    with pytest.raises(AssertionError, match=r"−0\.04 in the line of row table1_helix_above_pca"):
        assert_every_number_is_in_the_table(swapped, table)


def test_a_line_naming_no_row_or_a_row_twice_fails():
    """Every row has exactly one line in the sections; a line naming a row the table lacks fails."""
    table = pd.read_csv(SMOLLM2)
    page = findings_page(table, "smollm2-135m")
    full = line_of(page, "table1_helix_below_full")
    with pytest.raises(AssertionError, match="rows without exactly one line"):
        assert_every_number_is_in_the_table(page.replace(full + "\n", ""), table)
    with pytest.raises(AssertionError, match="rows without exactly one line"):
        assert_every_number_is_in_the_table(page.replace(full, full + "\n" + full), table)
    with pytest.raises(AssertionError, match="which the table lacks"):
        assert_every_number_is_in_the_table(page.replace("Row `table1_helix_below_full`", "Row `nowhere`"), table)


def test_the_smollm2_page_opens_with_its_summary_and_prints_the_sign_of_every_bound():
    """SmolLM2's table (frozen, 0eaabb1's snapshot): the page's first section is the summary, one line a tested row
    (claim, estimate [interval], level, count, verdict); the verdict line counts all 280 rows;
    L18H5's TE (lower bound −0.005) prints its sign; the neurons' rows name their unit; no line says
    "is not shown, nor its opposite"."""
    table = pd.read_csv(SMOLLM2)
    page = findings_page(table, "smollm2-135m")
    headings = re.findall(r"^## (.+)$", page, re.M)
    assert headings[:2] == ["Summary", "How to read it"] and len(headings) == 2 + table["family"].nunique()
    tally = re.search(r"^Verdicts of all (\d+) rows: (.+)\.$", page, re.M)
    assert int(tally.group(1)) == len(table) == sum(int(n) for n in re.findall(r"\d+", tally.group(2)))
    assert "holds 22, not distinguished 20, not detected 30, estimate 71, not defined 137" in tally.group(2)
    summary = section(page, "Summary")
    judged = table[table["family_kind"].isin(["confirmatory", "screening"])]
    rows = [line for line in summary.splitlines() if line.startswith("| ") and not line.startswith("| **")]
    assert len(rows) == len(judged) + 2  # the header and its rule
    first = next(line for line in rows if line.startswith("| the helix of a's last token"))
    assert first.endswith("| Helix − Full = −0.28 [−0.64, 0.09] | 98.3% | 50 pairs | not distinguished from 0 |")
    row = table.set_index("id").loc["head_category[layer=18,head=5]"]
    assert row["den_low"] == pytest.approx(-0.005, abs=0.0005)
    assert "0.044 [−0.005, 0.093] (95%)" in line_of(page, "head_category[layer=18,head=5]")
    neurons = line_of(page, "neurons_eq5_better[place=hundreds]")
    assert "460 units, resampled unit by unit: the sampling unit is the chosen unit" in neurons
    assert "not of pairs" in neurons and " 460 pairs" not in neurons
    assert "nor its opposite." not in page and "not shown, nor" not in page and "not categorised" not in page
    # every interval printed shows the sign of each bound that is not 0
    for low, high in re.findall(r"\[(\S+), (\S+)\]", page):
        for bound in (low, high):
            assert NUMBER.fullmatch(bound) and (float(bound.replace("−", "-")) != 0 or bound.strip("0.") == "")


def planted(**changes) -> dict:
    """One planted row of the contrasts table (a judged difference that holds)."""
    row = {
        "id": "f",
        "family": "fam",
        "family_kind": "confirmatory",
        "family_title": "Planted family",
        "section": "4.3",
        "claim": "a planted claim",
        "quantity": "difference",
        "x": "X",
        "y": "Y",
        "expect": "positive",
        "selection": "",
        "split": "fixed",
        "estimate": 0.5,
        "low": 0.2,
        "high": 0.8,
        "level": 95.0,
        "interval": "t on the bootstrap SE, paired",
        "se": 0.15,
        "df": 49.0,
        "p": 0.001,
        "m": 4.0,
        "alpha_step": 0.0125,
        "adj_level": 98.75,
        "adj_low": 0.1,
        "adj_high": 0.9,
        "verdict": "holds",
        "den_estimate": float("nan"),
        "den_low": float("nan"),
        "den_high": float("nan"),
        "n_pairs": 50,
        "n_clusters": 50.0,
        "clusters": "pairs",
        "resamples": 1000,
        "seed": 0,
        "alpha": 0.05,
        "power": 0.8,
        "mde": 0.45,
        "sided": "",
        "detectable": float("nan"),
        "detectable_of": "",
        "note": float("nan"),
    }
    return {**row, **changes}


def planted_table(bonferroni: bool) -> pd.DataFrame:
    """Rows of every kind the page must say plainly: a Holm rejection whose simultaneous interval
    covers 0, a bound of −0.004 beside an estimate of 0.05, a row below its family's minimum, a
    category that holds and one not tested, a row of one pair not computed, a table of units, and
    the splits the stages write."""
    nan = float("nan")
    rows = [
        planted(
            id="holds",
            claim="the first claim holds",
            split="separate draw",
            selection="the best layer: 6",
            bonf_low=-0.05,
            bonf_high=1.05,
        ),
        planted(
            id="small",
            claim="a small effect",
            verdict="not distinguished",
            estimate=0.05,
            adj_low=-0.004,
            adj_high=0.104,
            mde=0.12,
            split="cross-fitted (conservative bound)",
            selection="the best block: 3",
            bonf_low=-0.02,
            bonf_high=0.12,
        ),
        planted(
            id="outside",
            claim="a stratum of three pairs",
            verdict="estimate",
            estimate=4.2,
            low=-3.1,
            high=11.5,
            adj_low=nan,
            adj_high=nan,
            m=nan,
            n_pairs=3,
            note="outside the family: 3 pairs, below its declared minimum of 5",
        ),
        planted(
            id="cat",
            family="cat",
            family_title="Planted categories",
            claim="head L1H2 has the category the rule gives it",
            quantity="category",
            x="g",
            y="",
            selection="a+b",
            split="separate draw",
            estimate=0.3,
            adj_low=0.05,
            adj_high=0.55,
            bonf_low=0.01,
            bonf_high=0.59,
        ),
        planted(
            id="nocat",
            family="cat",
            family_title="Planted categories",
            claim="head L3H0 has the category the rule gives it",
            quantity="category",
            x="g",
            y="",
            verdict="not defined",
            estimate=nan,
            adj_low=nan,
            adj_high=nan,
            den_estimate=0.02,
            den_low=-0.01,
            den_high=0.05,
            note="no category tested: TE or helix(a,b,a+b) not shown above 0",
        ),
        planted(
            id="one",
            claim="a stratum of one pair",
            verdict="not computed",
            estimate=-3.8,
            low=nan,
            high=nan,
            adj_low=nan,
            adj_high=nan,
            m=nan,
            n_pairs=1,
            n_clusters=1.0,
        ),
        planted(
            id="units",
            family="units",
            family_title="Planted units",
            claim="Eq. 5 fits the units better",
            clusters="units",
            n_pairs=460,
            n_clusters=460.0,
            estimate=0.06,
            adj_low=0.05,
            adj_high=0.07,
            split="the run's choice, on the same pairs",
            selection="the top units",
            bonf_low=0.04,
            bonf_high=0.08,
        ),
        planted(
            id="ratio",
            family="est",
            family_kind="estimate",
            family_title="Planted estimates",
            claim="DE/TE of MLP 3",
            quantity="ratio",
            x="DE",
            y="TE",
            verdict="estimate",
            estimate=0.4,
            low=0.1,
            high=0.9,
            interval="Fieller",
            adj_low=nan,
            adj_high=nan,
            m=nan,
            split="same pairs (compat: authors)",
            selection="layer 3, on all pairs",
        ),
    ]
    table = pd.DataFrame(rows)
    return table if bonferroni else table.drop(columns=["bonf_low", "bonf_high"])


@pytest.mark.parametrize("bonferroni", [True, False])
def test_a_planted_table_of_every_kind_reads_plainly(bonferroni):
    table = planted_table(bonferroni)
    page = findings_page(table, "planted")
    assert assert_every_number_is_in_the_table(page, table) > 60
    assert "Verdicts of all 8 rows: holds 3, not distinguished 1, estimate 2, not defined 1, not computed 1." in page
    assert "These intervals are **not simultaneous**" in page
    small = line_of(page, "small")
    assert "a small effect. X − Y = 0.050 [−0.004, 0.104]" in small and "the interval covers 0" in small
    one = line_of(page, "one")
    assert one.startswith(
        "- **Not computed**: a stratum of one pair: 1 pair, too few for an interval. The estimate is −3.80."
    )
    outside = line_of(page, "outside")
    assert outside.startswith(
        "- **Estimate, outside the family**: a stratum of three pairs: X − Y = 4.20 [−3.10, 11.50]"
    )
    assert "Outside the family: 3 pairs, below its declared minimum of 5." in outside
    assert (
        "| a stratum of three pairs | X − Y = 4.20 [−3.10, 11.50] | 95% | 3 pairs | estimate, outside the family |"
        in page
    )
    nocat = line_of(page, "nocat")
    assert nocat.startswith(
        "- **No category tested**. Claimed: head L3H0 has the category the rule gives it. "
        "TE or helix(a,b,a+b) not shown above 0: 0.02 [−0.01, 0.05] (95%)."
    )
    assert "| head L3H0 has the category the rule gives it | — |  | 50 pairs | no category tested |" in page
    assert "- **Holds**: head L1H2 has the category the rule gives it. g = 0.30 [0.05, 0.55]" in line_of(page, "cat")
    assert "*mixed*" in page and "mixed" not in section(page, "Planted categories")
    units = line_of(page, "units")
    assert "460 units, resampled unit by unit: the sampling unit is the chosen unit" in units
    assert "**Rows over units** (neurons): the sampling unit is the chosen unit, not the pair." in page
    # each row states its own split, and the intro counts the rows of each
    for row_id, split in [
        ("holds", "separate draw"),
        ("small", "cross-fitted (conservative bound)"),
        ("units", "the run's choice, on the same pairs"),
        ("ratio", "same pairs (compat: authors)"),
    ]:
        assert SPLITS[split] in line_of(page, row_id)
    assert (
        f"* 2 rows: {SPLITS['separate draw']}." in page
        and f"* 1 row: {SPLITS['cross-fitted (conservative bound)']}." in page
    )
    assert "measured on the pairs that chose it" not in page
    holds = line_of(page, "holds")
    if bonferroni:
        assert (
            "X − Y = 0.50 [0.10, 0.90] (98.8% interval, at its Holm step in a confirmatory family of 4). "
            "Simultaneous (Bonferroni) interval: [−0.05, 1.05], which covers 0." in holds
        )
        assert "Simultaneous (Bonferroni) interval: [0.04, 0.08]. 460 units" in units
        assert "the interval covers 0. Simultaneous (Bonferroni) interval: [−0.02, 0.12], which covers 0." in small
        assert "Where a line also prints a simultaneous (Bonferroni) interval" in page
    else:
        assert "Bonferroni" not in page and holds.count("[") == 1


def test_the_docs_list_the_words_of_every_split():
    """docs/findings.md, "The findings page": its table of splits is the page's (SPLITS), word for word."""
    doc = (REPO / "docs" / "findings.md").read_text()
    listed = dict(re.findall(r"^\| `([^`]+)` \| (.+) \|$", doc.split("The words for each `split`")[1], re.M))
    assert {k: v for k, v in listed.items() if k in SPLITS} == SPLITS


def test_the_html_page_holds_every_line_of_the_markdown_page_and_a_changed_one_fails():
    """findings.html, the page the report shows: SmolLM2's page (frozen table) as HTML holds the
    Markdown page's headings, paragraphs, lines and summary table, in order and word for word (every
    number and verdict), self-contained, its table with borders. The wrong arms: the HTML without
    one row of the summary, with one number changed, with one verdict changed, or without a line
    of a section, fails the check, naming where."""
    table = pd.read_csv(SMOLLM2)
    page = findings_page(table, "smollm2-135m")
    html = page_html(page)
    blocks = assert_the_html_holds_the_page(html, page)
    assert blocks == len(markdown_blocks(page)) > len(table) + 90  # a line a row, the summary's rows
    judged = table[table["family_kind"].isin(["confirmatory", "screening"])]
    summary = [b for b in markdown_blocks(page) if b[0] == "tr"]  # the header, a title a family, a row a finding
    assert len(summary) == 1 + judged["family"].nunique() + len(judged) == html.count("<tr")
    text = unescape(re.sub(r"<(style|title)>.*?</\1>|<[^>]+>", " ", html, flags=re.S))  # the HTML's text
    assert sorted(NUMBER.findall(text)) == sorted(NUMBER.findall(page))
    assert '<meta charset="utf-8">' in html and "border: 1px solid" in html and "<h2>Summary</h2>" in html
    row = (
        "<tr><td>the helix of a's last token restores less than patching that token's whole residual</td>"
        "<td>Helix − Full = −0.28 [−0.64, 0.09]</td><td>98.3%</td><td>50 pairs</td><td>not distinguished from 0</td></tr>"
    )
    # the summary's first finding: block 6, after the title, two lines, "Summary", the header and its family
    assert row in html
    holds = next(line for line in html.splitlines() if line.endswith("<td>holds</td></tr>"))
    li = next(line for line in html.splitlines() if line.startswith("<li><strong>Holds</strong>"))
    for wrong, where in (
        (html.replace(row + "\n", ""), r"block 6 .*Helix − PCA .* != .*Helix − Full"),
        (html.replace("−0.28 [−0.64, 0.09]", "−0.28 [−0.64, 0.08]", 1), r"block 6 .*0\.08\]"),
        (html.replace(holds, holds.replace("<td>holds</td>", "<td>reversed</td>")), r"'reversed'\)\) != .*'holds'\)\)"),
        (html.replace(li + "\n", ""), r"differs from the page's: .* != \('li', .Holds: the helix restores more"),
    ):
        assert wrong != html
        with pytest.raises(AssertionError, match=where):
            assert_the_html_holds_the_page(wrong, page)


def test_the_html_page_escapes_the_tables_text_and_reads_its_marks():
    """A claim with <, &, | and a literal * (p* = 1) prints as text in the HTML, not as markup;
    **strong**, *emphasis* and `code` of the page are HTML's; every page of the planted tables
    holds."""
    table = planted_table(True)
    table.loc[0, "claim"] = "x < y & y | z at p* = 1"
    page = findings_page(table, "planted")
    html = page_html(page)
    assert assert_the_html_holds_the_page(html, page) > 20
    assert "x &lt; y &amp; y | z at p* = 1" in html and "<td>x &lt; y &amp; y | z at p* = 1</td>" in html
    assert "<em>mixed</em>" in html and "<strong>not simultaneous</strong>" in html
    assert "<code>findings/contrasts.csv</code>" in html and "Row <code>holds</code>." in html
    assert "<title>Findings: planted</title>" in html and "<h1>Findings: planted</h1>" in html
    empty = findings_page(table.iloc[:0], "none")
    assert assert_the_html_holds_the_page(page_html(empty), empty) == 2


def accuracy_table(correct: int, prompts: int = 10_000) -> pd.DataFrame:
    return pd.DataFrame({"correct": [True] * correct + [False] * (prompts - correct)})


def test_the_page_opens_with_the_models_accuracy_and_the_prompts_its_draws_come_from():
    """Issue 54 item 7: a page opens with the model's accuracy on each task and the correct a+b
    prompts every draw comes from (SmolLM2's 4-bit file: 2086 of 10000), its numbers those of
    findings/model.csv; a changed number on that line fails the check, and so does the line
    checked without its table."""
    table = pd.read_csv(SMOLLM2)
    about = model_table({"add": accuracy_table(2086), "sub23": accuracy_table(37, 100)})
    assert about.to_dict("records") == [
        {"task": "add", "prompts": 10_000, "correct": 2086, "accuracy_percent": pytest.approx(20.86)},
        {"task": "sub23", "prompts": 100, "correct": 37, "accuracy_percent": pytest.approx(37.0)},
    ]
    page = findings_page(table, "smollm2-135m", about)
    opening = page.split("\n")[2]
    assert opening == (
        "**The model.** Accuracy (greedy decoding of the answer): a+b 20.9% (2086 of 10000 prompts); "
        "a-23 37.0% (37 of 100 prompts). Every pair of a measuring or a selection draw is drawn from its task's "
        "correctly answered prompts (2086 a+b prompts; a selection draw from those its job's measuring pairs "
        "leave), so each verdict below is about prompts this model answers correctly."
    )
    assert page.index(opening) < page.index("## Summary")
    assert assert_every_number_is_in_the_table(page, table, model=about) > 500
    with pytest.raises(AssertionError, match="not in the model table"):
        assert_every_number_is_in_the_table(page.replace("(2086 of", "(2068 of"), table, model=about)
    with pytest.raises(AssertionError, match="needs its model table"):
        assert_every_number_is_in_the_table(page, table)
    assert_the_html_holds_the_page(page_html(page), page)
    assert findings_page(table, "smollm2-135m").split("\n")[2].startswith("Generated from")  # no accuracy: no line

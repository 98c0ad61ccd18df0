"""One vocabulary of paper_comparison's statuses (docs/running.md, "The report"): the words and
what each means are helixclock.stages.report.status.MEANINGS, the one definition the code writes
into paper_comparison.csv; docs/running.md's table of statuses is those rows, word for word, and
the report's captions of paper_comparison and paper_comparison_status name exactly those words.
Before, the docs and the captions said ok / differs / different metric, words the table never
held: these tests fail on those pages (and the last test shows the old caption caught)."""

from __future__ import annotations

import re

from helpers.paths import REPO

from helixclock.stages.report.status import MEANINGS, STATUSES

OLD = ("ok", "differs", "different metric")  # the words the docs and captions used, never in the table
CAPTIONS = REPO / "workflow" / "report"
ANY_WORD = r"\b(" + "|".join(re.escape(w) for w in (*STATUSES, *OLD)) + r")\b"


def old_words(text: str) -> list[str]:
    """The old status words a text uses (whole words: "look" is not "ok")."""
    return re.findall(r"\b(" + "|".join(re.escape(w) for w in OLD) + r")\b", text)


def defined_words(caption: str) -> list[str]:
    """The status words a caption defines, in order: each written as "word (what it means)"."""
    return re.findall(ANY_WORD + r" \(", caption)


def report_section(page: str) -> str:
    return page.split("## The report", 1)[1].split("\n## ", 1)[0]


def status_table(section: str) -> list[tuple[str, str]]:
    """The rows (status, meaning) of the table headed "| status | the row |"."""
    rows = section.split("| status | the row |\n|---|---|\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [tuple(cell.strip() for cell in row.strip("|").split(" | ", 1)) for row in rows]


def test_the_vocabulary_is_six_words_each_with_its_meaning():
    assert STATUSES == ("agree", "differ", "not comparable", "not run", "not defined", "missing")
    assert all(len(MEANINGS[s]) > 60 for s in STATUSES)
    assert not any(old_words(meaning) for meaning in MEANINGS.values())


def test_the_docs_table_of_statuses_is_the_codes_word_for_word():
    section = report_section((REPO / "docs" / "running.md").read_text())
    assert status_table(section) == [(f"`{s}`", MEANINGS[s]) for s in STATUSES]
    assert old_words(section) == []


def test_no_page_of_the_docs_names_an_old_status():
    pages = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        assert not re.findall(r"`(ok|differs|different metric)`", text), page
        assert not re.findall(r"status (ok|differs|different metric)\b", text), page


def test_the_report_captions_use_exactly_the_codes_words():
    table = (CAPTIONS / "paper_comparison.rst").read_text()
    assert "(" + ", ".join(STATUSES) + ";" in table  # its list of statuses
    assert old_words(table) == []
    counts = (CAPTIONS / "paper_comparison_status.rst").read_text()
    assert defined_words(counts) == list(STATUSES)  # each status once, with what it means, in the table's order
    assert old_words(counts) == []


def test_the_old_caption_is_caught():
    old = (
        "by status: ok (a run value; its bound holds), differs (a bound the paper states fails), not run (a task), "
        "not defined (no such value), different metric (a Table 1 LD), missing (an output absent)"
    )
    assert defined_words(old) == ["ok", "differs", "not run", "not defined", "different metric", "missing"]
    assert defined_words(old) != list(STATUSES) and old_words(old) == ["ok", "differs", "different metric"]

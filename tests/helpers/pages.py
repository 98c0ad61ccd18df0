"""A generated findings page against the table it was rendered from (docs/findings.md, "The
findings page"): each line that names a row prints that row's numbers and no other's, with their
signs; the other lines print values or counts of the table; every row has its line.

A line names its row by the row's id at its end (a section's line: "... Row `id`.") or by the
row's claim in its first cell (a line of the summary table).  Such a line, with the row's text
cells taken out (its claim, labels, selection, note: text the page copies), may print only numbers
that are the row's own number cells at the decimals printed, sign included: a flipped sign or a
number of another row fails it (tests/unit/test_findings_page.py shows both).  The check before it
accepted a number found, in absolute value, anywhere in the table."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd

from helixclock.prompts.tasks import TASKS
from helixclock.stages.findings.page import MODEL_LINE

# a number not glued to a word (L21H2, R^2 and block_output 23 come from text cells); "−" or a
# "-" after no word character is its sign
NUMBER = re.compile(r"(?<![\w.^])[−-]?\d+(?:\.\d+)?")
ROW_ID = re.compile(r" Row `([^`]+)`\.$")
CELL = re.compile(r"(?<!\\)\|")


def _value(token: str) -> tuple[float, int]:
    token = token.replace("−", "-")
    return float(token), (len(token.split(".")[1]) if "." in token else 0)


def _matches(token: str, values) -> bool:
    """``token`` is one of ``values`` rounded to the decimals printed, with its sign."""
    shown, decimals = _value(token)
    return any(round(float(v), decimals) == shown for v in values)


def _texts(row: pd.Series) -> list[str]:
    """A row's text cells, and what follows a cell's label ("no category tested: ..."; the page
    copies a note without its label), longest first (a label inside a longer one is taken out
    after it)."""
    cells = {str(v) for v in row if isinstance(v, str) and v}
    tails = {c.split(": ", 1)[1] for c in cells if ": " in c and c.split(": ", 1)[1]}
    return sorted(cells | tails, key=len, reverse=True)


def _numbers(row: pd.Series) -> list[float]:
    return [float(v) for v in row if isinstance(v, (int, float)) and not isinstance(v, bool) and pd.notna(v)]


def check_line(line: str, row: pd.Series) -> int:
    """How many numbers ``line`` prints, each checked to be a number cell of ``row`` at the
    decimals printed, with its sign, once the row's text cells are taken out."""
    rest = line.replace("\\|", "|")
    for text in _texts(row):  # as copied, or opening a sentence
        rest = rest.replace(text, " ").replace(text[0].upper() + text[1:], " ")
    values = _numbers(row)
    found = 0
    for match in NUMBER.finditer(rest):
        assert _matches(match.group(0), values), (
            f"{match.group(0)} in the line of row {row['id']} is not in the table's row {row['id']}: "
            f"...{rest[max(0, match.start() - 80) : match.end() + 20]}"
        )
        found += 1
    return found


def table_numbers(table: pd.DataFrame) -> tuple[list[str], list[float]]:
    """What a line that names no row may print: the table's text (its string cells) and its
    numbers: its number cells, its row count, how many rows hold each value of a text column, and
    each family's size and its count of each verdict (the page counts its verdicts)."""
    text = sorted({str(v) for col in table for v in table[col] if isinstance(v, str)})
    values = [float(v) for col in table.select_dtypes("number") for v in table[col] if pd.notna(v)]
    objects = table.select_dtypes(include=["object", "str"])
    counts = [float(n) for col in objects for n in table[col].value_counts()]
    if "family" in table and "verdict" in table:
        counts += [float(n) for n in table.groupby("family").size()]
        counts += [float(n) for n in table.groupby(["family", "verdict"]).size()]
    return text, values + counts + [float(len(table))]


def _summary_claim(line: str) -> str | None:
    if not line.startswith("| "):
        return None
    return CELL.split(line)[1].strip().replace("\\|", "|")


def assert_every_number_is_in_the_table(
    page: str, table: pd.DataFrame, every_row: bool = True, model: pd.DataFrame | None = None
) -> int:
    """How many numbers the page prints, each checked: a line naming a row against that row alone
    (:func:`check_line`), the opening line on the model (MODEL_LINE: its accuracy) against the
    model table ``model`` (findings/model.csv), any other line against the whole table
    (:func:`table_numbers`, sign included); and, where ``every_row`` (a findings page; a summary of
    some rows is not), every row of the table has its one line in a section. An AssertionError
    names the first number (or row) that fails."""
    table = table.reset_index(drop="id" in table.columns)
    by_id = {str(r["id"]): r for _, r in table.iterrows()}
    claims = table["claim"].astype(str) if "claim" in table else pd.Series(dtype=str)
    assert claims.is_unique, f"claims that name several rows: {sorted(set(claims[claims.duplicated()]))[:3]}"
    by_claim = {str(r["claim"]): r for _, r in table.iterrows()} if "claim" in table else {}
    text, values = table_numbers(table)
    found, lines_of = 0, dict.fromkeys(by_id, 0)
    for line in page.splitlines():
        if line.startswith("# Findings: "):  # the title: the model's name
            continue
        named = ROW_ID.search(line)
        claim = _summary_claim(line)
        if line.startswith(MODEL_LINE):
            assert model is not None, f"the page's line on the model needs its model table: {line[:80]}"
            model_text, model_values = table_numbers(model)
            # a task is printed by its paper's label (a*1.5 of mul1p5): the numbers inside a label's place
            labelled = [
                range(m.start(), m.end())
                for t in model_text
                if t in TASKS
                for m in re.finditer(re.escape(TASKS[t].label), line)
            ]
            for match in NUMBER.finditer(line):
                in_name = any(match.group(0) in t for t in model_text) or any(
                    match.start() in span for span in labelled
                )  # a task's name (a-23 of sub23) or its label
                assert in_name or _matches(match.group(0), model_values), (
                    f"{match.group(0)} in the line on the model is not in the model table: "
                    f"...{line[max(0, match.start() - 80) : match.end() + 20]}"
                )
                found += 1
        elif named:
            assert named.group(1) in by_id, f"the line names row {named.group(1)}, which the table lacks: {line}"
            lines_of[named.group(1)] += 1
            found += check_line(line[: named.start()], by_id[named.group(1)])
        elif claim in by_claim:
            found += check_line(line, by_claim[claim])
        else:
            for match in NUMBER.finditer(line):
                token = match.group(0)
                as_text = any(token in t or token.replace("−", "-") in t for t in text)
                assert as_text or _matches(token, values), (
                    f"{token} in the page is not in the table: ...{line[max(0, match.start() - 80) : match.end() + 20]}"
                )
                found += 1
    missing = [i for i, n in lines_of.items() if n != 1 and (every_row or n > 1)]
    assert not missing, f"rows without exactly one line on the page: {missing[:5]}"
    return found


# -- the page as HTML (results/{model}/findings.html, the one the report shows) against its Markdown
class _Blocks(HTMLParser):
    """An HTML page's blocks in order: ("h1"/"h2"/"p"/"li", text) and ("tr", its cells' texts)."""

    TEXT = ("h1", "h2", "p", "li")

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self.row, self.text, self.tags = [], None, None, []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in self.TEXT or tag in ("td", "th"):
            self.text = []
        if tag == "tr":
            self.row = []

    def handle_endtag(self, tag):
        if self.tags and self.tags[-1] == tag:
            self.tags.pop()
        if tag in self.TEXT:
            self.blocks.append((tag, _plain("".join(self.text))))
        elif tag in ("td", "th"):
            self.row.append(_plain("".join(self.text)))
        elif tag == "tr":
            self.blocks.append(("tr", tuple(self.row)))
        if tag in self.TEXT or tag in ("td", "th"):
            self.text = None

    def handle_data(self, data):
        if self.text is not None:
            self.text.append(data)
        elif data.strip() and {"style", "title"}.isdisjoint(self.tags):
            self.blocks.append(("loose", _plain(data)))


def _plain(text: str) -> str:
    """Text with Markdown's marks taken out (* and `; a literal * of the text too, on both sides)
    and its spaces and line breaks read as one space."""
    return " ".join(text.replace("*", "").replace("`", "").split())


def markdown_blocks(page: str) -> list[tuple]:
    """A findings page's blocks in order, read from its Markdown as a reader sees them: a heading,
    a paragraph (its lines together), a list item, a table line's cells (``\\|`` read as ``|``; the
    rule under the header is no row)."""
    blocks, paragraph = [], []
    for line in [*page.splitlines(), ""]:
        plain_line = not line.startswith(("#", "|", "- ", "* ")) and line.strip()
        if paragraph and not plain_line:
            blocks.append(("p", _plain(" ".join(paragraph))))
            paragraph = []
        if line.startswith(("# ", "## ")):
            level = line.index(" ")
            blocks.append((f"h{level}", _plain(line[level:])))
        elif line.startswith("|") and not set(line) <= set("|-: "):
            blocks.append(("tr", tuple(_plain(c).replace("\\|", "|") for c in CELL.split(line.strip())[1:-1])))
        elif line.startswith(("- ", "* ")):
            blocks.append(("li", _plain(line[2:])))
        elif plain_line:
            paragraph.append(line)
    return blocks


def assert_the_html_holds_the_page(html: str, page: str) -> int:
    """The HTML page holds the Markdown page's blocks, in order, with their text (every number,
    verdict and word), and nothing else; self-contained (nothing fetched, no script). How many
    blocks; an AssertionError names the first that differs."""
    parser = _Blocks()
    parser.feed(html)
    parser.close()
    got, want = parser.blocks, markdown_blocks(page)
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        assert g == w, f"block {i} of the HTML differs from the page's: {g} != {w}"
    assert len(got) == len(want), (
        f"the HTML has {len(got)} blocks, the page {len(want)}: {(got + want)[len(want) :][:1]}"
    )
    assert not re.search(r"<(script|link|img|iframe)\b|\b(src|href)=|url\(", html, re.I), "the HTML fetches something"
    return len(got)

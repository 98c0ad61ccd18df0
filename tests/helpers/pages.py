"""A generated page against the table it was rendered from: every number the page prints is a
value (or a text cell) of the table (docs/findings.md, "Findings")."""

from __future__ import annotations

import re

import pandas as pd

NUMBER = re.compile(r"[−-]?\d+(?:\.\d+)?")


def numbers_in_table(table: pd.DataFrame) -> tuple[set[str], list[float]]:
    """The table's text (its string cells) and its numbers: its number cells, and how many rows
    hold each value of a text column (a page counts its verdicts)."""
    text = {str(v) for col in table for v in table[col] if isinstance(v, str)}
    values = [float(v) for col in table.select_dtypes("number") for v in table[col] if pd.notna(v)]
    counts = [float(n) for col in table.select_dtypes(include=["object", "str"]) for n in table[col].value_counts()]
    return text, values + counts


def assert_every_number_is_in_the_table(page: str, table: pd.DataFrame) -> int:
    """How many numbers the page prints, each checked to be in ``table`` (as the rounded value of
    a number cell or inside a text cell); an AssertionError names the first that is not."""
    text, values = numbers_in_table(table)
    found = 0
    for match in NUMBER.finditer(page):
        token = match.group(0).replace("−", "-")
        decimals = len(token.split(".")[1]) if "." in token else 0
        as_text = any(match.group(0) in t or token in t for t in text)
        as_value = any(round(v, decimals) == float(token) or round(abs(v), decimals) == float(token) for v in values)
        assert as_text or as_value, (
            f"{match.group(0)} in the page is not in the table: ...{page[max(0, match.start() - 80) : match.end() + 20]}"
        )
        found += 1
    return found

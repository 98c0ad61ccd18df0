"""The findings page (``results/{model}/findings.md``, and as HTML ``findings.html`` for the report:
:func:`page_html`), rendered from ``contrasts.csv`` alone
(docs/findings.md, "The findings page"): a summary table, one line a tested finding (its claim,
estimate [interval], count, verdict), then how to read it, then one section per family with one
line per row of the table, each line ending with the row's id.  Every number of a line is a value
of that line's own row, printed with its sign (tests/helpers/pages.py checks each line against its
row; tests/unit/test_findings_page.py renders planted tables and the committed snapshots).
"""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from ...prompts.tasks import TASKS

DIGITS = 2
SMALLEST = 8  # decimals at most: a value below 1e-8 (a rounding-sized R^2 increment) prints as 0
JUDGED = ("confirmatory", "screening")
VERDICTS = ("holds", "reversed", "not distinguished", "not detected", "estimate", "not defined", "not computed")

# what each value of the column ``split`` says about a chosen object, in words (a value not listed
# is printed as it is; docs/findings.md, "The findings page", lists them, tested)
SPLITS = {
    "cross-fitted": "cross-fitted: chosen on one half of the pairs and measured on the other, the halves swapped",
    "cross-fitted (conservative bound)": (
        "cross-fitted: chosen on one half of the pairs and measured on the other; its interval is a conservative bound"
    ),
    "separate draw": "chosen on the job's own selection draw and measured on all the measuring pairs",
    "the run's choice, on a separate draw of pairs": (
        "the run's choice, made on a selection draw of its own and measured on the measuring pairs"
    ),
    "the run's choice, on the same pairs": "the run's choice, made on the same pairs that measure it",
    "same pairs (compat: authors)": "chosen and measured on the same pairs, as the paper does (compat: authors)",
    "same pairs (two-sided test of the rule's sign)": (
        "the rule's category on all the measuring pairs, its sign tested two-sided "
        "(a wrong direction at most half of alpha)"
    ),
}
FIXED = ("fixed", "fixed by the paper")


def _present(row, col: str) -> bool:
    v = row.get(col) if hasattr(row, "get") else None
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and not (isinstance(v, str) and not v)


def num(x, digits: int = DIGITS) -> str:
    """A value of the table as the page writes it (a minus sign for negatives)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    text = f"{float(x):.{digits}f}"
    if float(text) == 0:
        text = text.lstrip("-")  # no "-0.00": a value that rounds to 0 is given more decimals (_digits)
    return text.replace("-", "−")


def interval(low, high, digits: int = DIGITS) -> str:
    return f"[{num(low, digits)}, {num(high, digits)}]"


def _digits(*values) -> int:
    """Decimals for an estimate (the first value) and its bounds: 2 where the estimate (else the
    largest value given; NaN left out) is 0.01 or more in size, else two significant digits of it
    (a held-out R^2 increment of 0.0014 as 0.0014, one of 5.8e-6 as 0.0000058); then more, up to
    :data:`SMALLEST`, until every value that is not 0 prints as more than 0 in size, so that its
    sign shows (a lower bound of −0.005 beside an estimate of 0.04 as −0.005, not 0.00)."""
    sizes = [abs(float(v)) for v in values if pd.notna(v)]
    if not sizes:
        return DIGITS
    size = abs(float(values[0])) if pd.notna(values[0]) and values[0] != 0 else max(sizes)
    if size >= 0.01:
        digits = DIGITS
    elif size == 0:
        digits = 4
    else:
        digits = min(SMALLEST, 1 - math.floor(math.log10(size)))
    while digits < SMALLEST and any(s > 0 and round(s, digits) == 0 for s in sizes):
        digits += 1
    return digits


def _shown(estimate, low, high) -> str:
    """An estimate and its interval at decimals that show every bound's sign."""
    d = _digits(estimate, low, high)
    if pd.isna(low) or pd.isna(high):
        return num(estimate, d)
    return f"{num(estimate, d)} {interval(low, high, d)}"


def _quantity(row) -> str:
    if row["quantity"] == "difference":
        return f"{row['x']} − {row['y']}"
    if row["quantity"] == "ratio":
        return f"{row['x']} / {row['y']}"
    if row["quantity"] == "share_below":
        return f"share with {row['x']} below {row['y']}"
    if row["quantity"] == "tested":
        return f"{row['x']}" + (f" − {row['y']}" if _present(row, "y") else "")
    return str(row["x"])


def unit_of(row) -> str:
    """What a row's count counts: a stage's own unit (numbers, units) for a stage's test, units
    for a table of units (e.g. neurons), else pairs; singular for a count of 1."""
    if row["quantity"] == "tested" and _present(row, "clusters"):
        unit = str(row["clusters"])
    else:
        unit = "units" if row["clusters"] == "units" else "pairs"
    return unit[:-1] if row["n_pairs"] == 1 and unit.endswith("s") else unit


def count(row) -> str:
    """The row's count and its unit ("50 pairs", "460 units"), or "" where the row counts none."""
    return f"{int(row['n_pairs'])} {unit_of(row)}" if _present(row, "n_pairs") else ""


def _resampled(row) -> str:
    """The sampling unit and how it was resampled."""
    if row["quantity"] == "tested" or not count(row):
        return count(row)
    if row["clusters"] == "units":
        return (
            f"{count(row)}, resampled unit by unit: the sampling unit is the chosen unit (each unit's fit is "
            "computed once, over all the numbers), so the interval and the test speak of such units, not of pairs"
        )
    if row["clusters"] == "prompt-sharing components" and _present(row, "n_clusters"):
        n = int(row["n_clusters"])
        return f"{count(row)}, resampled in {n} cluster{'' if n == 1 else 's'} of pairs that share a prompt"
    return f"{count(row)}, resampled pair by pair"


def split_words(split) -> str:
    return SPLITS.get(str(split), str(split))


def _choice(row) -> str:
    """What was chosen and how (the row's selection and split), or "" for a fixed object; a head
    category row's selection is the category the rule gives it."""
    has_split = _present(row, "split") and row["split"] not in FIXED
    if _present(row, "selection"):
        chosen = str(row["selection"])
        if row["quantity"] == "category" and chosen.rpartition("; ")[2] in ("a+b", "a,b"):
            head, _, category = chosen.rpartition("; ")
            chosen = f"{head}; the rule's category: {category}" if head else f"the rule's category: {category}"
        return f"{chosen}; {split_words(row['split'])}" if has_split else chosen
    return split_words(row["split"]) if has_split else ""


def _support(row) -> str:
    """The count and what was resampled, then what was chosen and how (as the table writes it,
    not capitalised: a selection may open with a+b)."""
    text = "; ".join(p for p in (_resampled(row), _choice(row)) if p)
    return f" {text}." if text else ""


def _judged_interval(row) -> str:
    """A judged row's estimate and its interval at the level of the step that decided it."""
    method = "Holm" if row["family_kind"] == "confirmatory" else "Benjamini-Hochberg"
    return (
        f"{_quantity(row)} = {_shown(row['estimate'], row['adj_low'], row['adj_high'])} "
        f"({num(row['adj_level'], 1)}% interval, at its {method} step in a {row['family_kind']} family of "
        f"{int(row['m'])})"
    )


def _simultaneous(row) -> str:
    """A judged row's simultaneous (Bonferroni) interval, where the table has one."""
    if not (_present(row, "bonf_low") and _present(row, "bonf_high")):
        return ""
    d = _digits(row["estimate"], row["bonf_low"], row["bonf_high"])
    covers = ", which covers 0" if row["bonf_low"] <= 0 <= row["bonf_high"] else ""
    return f" Simultaneous (Bonferroni) interval: {interval(row['bonf_low'], row['bonf_high'], d)}{covers}."


def _stage_test(row) -> str:
    """A stage's own test (quantity tested): its estimate, interval where it has one, p against
    the family's step, and what it counted."""
    shown = f"{_quantity(row)} = {_shown(row['estimate'], row['low'], row['high'])}"
    if pd.notna(row["low"]):
        shown += f" ({num(row['level'], 0)}% interval, the stage's, not adjusted for the family)"
    sided = "two-sided" if row["sided"] == "two" else "one-sided"
    method = "Holm" if row["family_kind"] == "confirmatory" else "Benjamini-Hochberg"
    p = num(row["p"], max(4, _digits(row["p"])))
    also = ""
    if _present(row, "also_label") and pd.notna(row["also_estimate"]):
        shown_also = _shown(row["also_estimate"], row["also_low"], row["also_high"])
        also = (
            f"; {row['also_label']} = {shown_also}, one-sided p = {num(row['also_p'], max(4, _digits(row['also_p'])))}"
            "; the test's p is the larger of the two (it rejects only where both comparisons do)"
        )
    mde_text = ""
    if _present(row, "mde") and count(row):
        both = _present(row, "also_se")
        mde_text = (
            f" With these {count(row)} the test detects a true {_quantity(row)}"
            + (f" and a true {row['also_label']}" if both else "")
            + f" of {num(row['mde'], _digits(row['mde']))} or more with power "
            + ("at least " if both else "")
            + f"{num(row['power'])} at its family's first step."
        )
    return (
        f"{shown}{also}; p = {p} ({sided}) against {method}'s level {num(row['alpha_step'], 4)} in a family of "
        f"{int(row['m'])}." + (f" {count(row)[0].upper()}{count(row)[1:]}." if count(row) else "") + mde_text
    )


def _detectable(row) -> str:
    """What the stage calibrated its test to detect, where it did."""
    if not _present(row, "detectable_of"):
        return ""
    of, calibration = row["detectable_of"], "(the stage's calibration)"
    if _present(row, "detectable_power"):
        calibration = f"with power {num(row['detectable_power'])} (the stage's calibration)"
    if pd.isna(row["detectable"]):
        return f" Planted at the whole of {of}, it would not be detected here {calibration}."
    exact = [d for d in (DIGITS, 3, 4) if round(row["detectable"], d) == row["detectable"]]  # 0.125, 0.0625
    fraction = num(row["detectable"], exact[0] if exact else 4)
    share = row.get("detectable_share", math.nan)
    absolute = (
        f" (at {fraction}, {num(share, _digits(share))} of the data's variance lies outside the test's base)"
        if pd.notna(share)
        else ""
    )
    if row["detectable"] >= 1:
        whole = absolute.replace(f"(at {fraction}, ", "(")
        return f" Planted at the whole of {of}, it is detected here{whole}; at smaller fractions, not {calibration}."
    return f" Planted at {fraction} of {of} or more, it is detected here {calibration}{absolute}; a smaller one is not."


def _absence(row) -> str:
    """What "not detected" of a stage's test says: nothing of absence where the test has no power
    at this row (its calibration detects not even the whole planted part), and no absence shown
    where the interval lies on the claim's side but the family's test refuses."""
    if row["verdict"] != "not detected":
        return ""
    if _present(row, "detectable_of") and pd.isna(row["detectable"]):
        return " The test has no power here: this is no evidence that it is absent."
    if pd.notna(row["low"]) and row["low"] > 0:
        return " Its interval lies above 0 but the family's test does not reject: absence is not shown."
    return ""


def _after_colon(note: str, *prefixes: str) -> str:
    for prefix in prefixes:
        if note.startswith(prefix):
            return note[len(prefix) :].lstrip(" :")
    return note


def is_category_untested(row) -> bool:
    return row["quantity"] == "category" and row["verdict"] == "not defined"


def why_not_computed(row) -> str:
    """Why a row has no estimate or no interval: its note, or its count where that is the reason."""
    if _present(row, "note"):
        return _after_colon(str(row["note"]), "not computed")
    if _present(row, "n_pairs") and int(row["n_pairs"]) < 2:
        return f"{count(row)}, too few for an interval"
    return "the table gives no interval and no reason"


def sentence(row) -> str:
    """One row's line, chosen by its verdict, ending with the row's id."""
    v, claim = row["verdict"], row["claim"]
    if row["quantity"] == "tested" and v in ("holds", "not detected"):
        head = f"**Holds**: {claim}." if v == "holds" else f"**Not detected**. Claimed: {claim}."
        text = f"{head} {_stage_test(row)}{_detectable(row)}{_absence(row)}"
    elif v in ("holds", "reversed", "not distinguished"):
        shown = _judged_interval(row)
        if v == "holds":
            text = f"**Holds**: {claim}. {shown}.{_simultaneous(row)}"
        elif v == "reversed":
            text = (
                f"**Reversed**. Claimed: {claim}. {shown}: the interval lies on the other side of 0."
                f"{_simultaneous(row)}"
            )
        else:
            text = (
                f"**Not distinguished from 0**. Claimed: {claim}. {shown}: the interval covers 0.{_simultaneous(row)} "
                f"With these {count(row)} the test detects a true effect of {num(row['mde'], _digits(row['mde']))} "
                f"or more with power {num(row['power'])}."
            )
        if _present(row, "note"):
            text += f" {row['note'][0].upper()}{row['note'][1:]}."
        text += _support(row)
    elif v == "estimate":
        shown = (
            f"{_shown(row['estimate'], row['low'], row['high'])} ({num(row['level'], 0)}% interval, {row['interval']})"
        )
        outside = f" {row['note'][0].upper()}{row['note'][1:]}." if _present(row, "note") else ""
        label = "**Estimate, outside the family**" if outside else "**Estimate**"
        text = f"{label}: {claim}: {_quantity(row)} = {shown}.{outside}{_support(row)}"
    elif v == "not defined":
        den = f"{_shown(row['den_estimate'], row['den_low'], row['den_high'])} ({num(row['level'], 0)}%)"
        if is_category_untested(row):
            reason = (
                _after_colon(str(row["note"]), "no category tested", "not categorised")
                if _present(row, "note")
                else "TE not shown above 0"
            )
            shown = f": {den}" if pd.notna(row["den_estimate"]) else ""
            text = f"**No category tested**. Claimed: {claim}. {reason[0].upper()}{reason[1:]}{shown}.{_support(row)}"
        else:
            text = f"**Not defined**: {claim}. Its denominator, {den}, is not distinguished from 0.{_support(row)}"
    else:
        single = (
            f" The estimate is {num(row['estimate'], _digits(row['estimate']))}." if pd.notna(row["estimate"]) else ""
        )
        chosen = f" Chosen: {_choice(row)}." if _choice(row) else ""  # nothing resampled
        text = f"**Not computed**: {claim}: {why_not_computed(row)}.{single}{chosen}"
    return f"- {text} Row `{row['id']}`."


def verdict_word(row) -> str:
    """The verdict as the summary table names it."""
    if is_category_untested(row):
        return "no category tested"
    if row["verdict"] == "not distinguished":
        return "not distinguished from 0"
    if row["verdict"] == "estimate" and _present(row, "note"):
        return "estimate, outside the family"
    return str(row["verdict"])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def summary_line(row) -> str:
    """One judged row in the summary table: claim | quantity = estimate [interval] | level | count | verdict."""
    v = row["verdict"]
    if row["quantity"] == "tested":
        shown, level = (
            _shown(row["estimate"], row["low"], row["high"]),
            (f"{num(row['level'], 0)}%, the stage's" if pd.notna(row["low"]) else ""),
        )
    elif v in ("holds", "reversed", "not distinguished"):
        shown, level = _shown(row["estimate"], row["adj_low"], row["adj_high"]), f"{num(row['adj_level'], 1)}%"
    elif v == "estimate":
        shown, level = _shown(row["estimate"], row["low"], row["high"]), f"{num(row['level'], 0)}%"
    elif pd.notna(row["estimate"]):
        shown, level = num(row["estimate"], _digits(row["estimate"])), ""
    else:
        shown, level = "", ""
    shown = f"{_quantity(row)} = {shown}" if shown else "—"
    return f"| {_cell(str(row['claim']))} | {_cell(shown)} | {level} | {count(row) or '—'} | {verdict_word(row)} |"


def _tally(contrasts: pd.DataFrame) -> str:
    counts = contrasts["verdict"].value_counts()
    order = [v for v in VERDICTS if v in counts] + sorted(v for v in counts.index if v not in VERDICTS)
    return ", ".join(f"{v} {int(counts[v])}" for v in order)


def _how_to_read(contrasts: pd.DataFrame) -> list[str]:
    first = contrasts.iloc[0]
    lines = [
        "## How to read it",
        "",
        f"* **Intervals.** Every interval comes from {int(first['resamples'])} bootstrap resamples (seed "
        f"{int(first['seed'])}); a difference is paired, pair by pair over the pairs both quantities have. Each "
        "line says what was resampled: pairs, clusters of pairs that share a prompt, or units.",
        f"* **Verdicts.** A verdict is a test at level {num(first['alpha'])} within the finding's family "
        "(Holm for a confirmatory family, Benjamini-Hochberg for a screening list). The interval printed "
        "beside it is at the level of the step that decided it, so it excludes 0 exactly where the verdict "
        "is holds or reversed. These intervals are **not simultaneous**: each is at its own row's level, "
        "and the chance that some interval of a family misses its true value is larger than any one "
        "row's."
        + (
            " Where a line also prints a simultaneous (Bonferroni) interval, the intervals of its family at "
            "that level hold together."
            if "bonf_low" in contrasts and contrasts["bonf_low"].notna().any()
            else ""
        ),
        "* **Not distinguished from 0**: the interval covers 0, so the data show neither the claim nor its "
        "opposite; the line gives the smallest true effect the test detects with these pairs.",
    ]
    if contrasts["quantity"].eq("tested").any():
        lines.append(
            "* **A stage's own test** (the section names it) gives each line's estimate, interval and p from "
            "that stage's table: the interval is the stage's, at its own level and not adjusted for the "
            "family, and the verdict is the stage's p against the step printed beside it (holds only where "
            "the interval also lies on the claim's side). Such a claim of detection is either shown or not "
            "detected: no opposite is claimed."
        )
    if contrasts["clusters"].eq("units").any():
        lines.append(
            "* **Rows over units** (neurons): the sampling unit is the chosen unit, not the pair. Each unit's "
            "fit is computed once; the interval and test treat the chosen units as a sample of such units, "
            "and say nothing about new pairs or prompts."
        )
    if contrasts["quantity"].eq("category").any():
        lines.append(
            "* **Heads' categories** (a,b or a+b): a head whose total effect is not shown above 0 has "
            "*no category tested*; this is not the paper's *mixed* (the heads least confidently "
            "categorised), which this page does not use."
        )
    splits = contrasts.loc[~contrasts["split"].isin(FIXED) & contrasts["split"].notna(), "split"].value_counts()
    if len(splits):
        lines += ["", "How the objects of these rows were chosen (each row's line says which applies):", ""]
        lines += [f"* {int(n)} row{'' if n == 1 else 's'}: {split_words(split)}." for split, n in splits.items()]
    return lines


MODEL_LINE = "**The model.**"  # the page's opening line, whose numbers are findings/model.csv's


def model_line(about: pd.DataFrame | None) -> list[str]:
    """The page's opening paragraph: the model's accuracy on each task and the correct a+b
    prompts every draw comes from (``about``: the findings job's model table, task, prompts,
    correct, accuracy_percent); none without it."""
    if about is None or not len(about):
        return []
    tasks = [
        f"{TASKS[r.task].label if r.task in TASKS else r.task} {r.accuracy_percent:.1f}% "
        f"({int(r.correct)} of {int(r.prompts)} prompts)"
        for r in about.itertuples()
    ]
    add = about[about["task"] == "add"]
    pool = (
        f" Every pair of a measuring or a selection draw is drawn from its task's correctly answered "
        f"prompts ({int(add['correct'].iloc[0])} a+b prompts; a selection draw from those its job's measuring "
        "pairs leave), so each verdict below is about prompts this model answers correctly."
        if len(add)
        else ""
    )
    return [f"{MODEL_LINE} Accuracy (greedy decoding of the answer): {'; '.join(tasks)}.{pool}", ""]


def findings_page(contrasts: pd.DataFrame, model: str, about: pd.DataFrame | None = None) -> str:
    """The page of one model: what the model is (its accuracy, :func:`model_line`), the summary
    table of the tested findings, how to read it, then each family's rows under its title, in the
    table's order."""
    if len(contrasts) == 0:
        return f"# Findings: {model}\n\nNo declared finding applies to this model.\n"
    lines = [
        f"# Findings: {model}",
        "",
        *model_line(about),
        "Generated from `findings/contrasts.csv`, for the findings that `config/findings.yaml` declares for "
        "this model: every number below is a value of that table, each line's of its own row (the id at "
        "the line's end); the opening line's are of `findings/model.csv`.",
        "",
        f"Verdicts of all {len(contrasts)} rows: {_tally(contrasts)}.",
    ]
    judged = contrasts[contrasts["family_kind"].isin(JUDGED)]
    lines += ["", "## Summary", ""]
    if len(judged):
        lines += [
            "| Finding | Estimate [interval] | Level | Count | Verdict |",
            "| --- | --- | --- | --- | --- |",
        ]
        for _, part in judged.groupby("family", sort=False):
            lines.append(f"| **{_cell(str(part['family_title'].iloc[0]))}** | | | | |")
            lines += [summary_line(row) for _, row in part.iterrows()]
    else:
        lines.append("No tested finding.")
    estimates = contrasts[~contrasts["family_kind"].isin(JUDGED)]
    if len(estimates):
        lines += ["", "Estimates without a test (each in its section below):", ""]
        for _, part in estimates.groupby("family", sort=False):
            lines.append(f"* {part['family_title'].iloc[0]}: {_tally(part)}.")
    lines += [""] + _how_to_read(contrasts)
    for _, part in contrasts.groupby("family", sort=False):
        lines += ["", f"## {part['family_title'].iloc[0]}", ""]
        for method in part.loc[part["quantity"].eq("tested"), "interval"].dropna().unique():
            lines += [f"The stage's test: {method}.", ""]
        lines += [sentence(row) for _, row in part.iterrows()]
    return "\n".join(lines) + "\n"


# -- the page as HTML (``results/{model}/findings.html``): the report shows an HTML result in its
# own frame, where a Markdown file is only downloaded.  Rendered from the Markdown text itself, so
# that both hold the same words and numbers; only what findings_page writes is read: headings,
# paragraphs, lists, the summary table, **strong**, *emphasis* and `code`.
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; line-height: 1.5;
       color: #1a1a1a; max-width: 80em; margin: 1.5em auto; padding: 0 1em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #888; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
thead th { background: #e6e6e6; }
tr.family td { background: #f2f2f2; }
code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.9em; background: #f2f2f2; padding: 0 0.2em; }
li { margin: 0.3em 0; }
"""
_CODE = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"(?<![^\s(])\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![^\s(])\*(?=\w)([^*]+?)(?<=\w)\*(?![\w*])")
_CELL = re.compile(r"(?<!\\)\|")
_RULE = re.compile(r"^\|(?: *:?-+:? *\|)+$")


def _inline(text: str) -> str:
    """One line's text as HTML: escaped, `code` kept as it is, **strong** and *emphasis* outside it."""
    parts = _CODE.split(text)  # odd parts: the code spans' contents
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"<code>{html.escape(part, quote=False)}</code>")
        else:
            part = _STRONG.sub(r"<strong>\1</strong>", html.escape(part, quote=False))
            out.append(_EMPHASIS.sub(r"<em>\1</em>", part))
    return "".join(out)


def _cells(line: str) -> list[str]:
    """A table line's cells, ``\\|`` read as ``|``."""
    return [c.strip().replace("\\|", "|") for c in _CELL.split(line.strip())[1:-1]]


def _row(cells: list[str], tag: str) -> str:
    family = tag == "td" and cells[0].startswith("**") and not any(cells[1:])
    opening = '<tr class="family">' if family else "<tr>"
    return opening + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>"


def page_html(page: str) -> str:
    """The findings page (:func:`findings_page`'s Markdown) as one self-contained HTML page: the
    same headings, paragraphs, lists and table, in the same order, with the same text; its style
    inline (a table with borders), nothing fetched."""
    lines, body, block = page.splitlines(), [], None

    def close():
        nonlocal block
        if block == "ul":
            body.append("</ul>")
        elif block == "table":
            body.append("</tbody></table>")
        elif block == "p":
            body.append("</p>")
        block = None

    for line in lines:
        if not line.strip():
            close()
        elif line.startswith(("# ", "## ")):
            close()
            level = 1 if line.startswith("# ") else 2
            body.append(f"<h{level}>{_inline(line[level + 1 :])}</h{level}>")
        elif line.startswith("|"):
            if _RULE.match(line.strip()):
                continue
            if block != "table":
                close()
                body.append(f"<table><thead>{_row(_cells(line), 'th')}</thead><tbody>")
                block = "table"
            else:
                body.append(_row(_cells(line), "td"))
        elif line.startswith(("- ", "* ")):
            if block != "ul":
                close()
                body.append("<ul>")
                block = "ul"
            body.append(f"<li>{_inline(line[2:])}</li>")
        elif block == "p":
            body.append(_inline(line))
        else:
            close()
            body.append(f"<p>{_inline(line)}")
            block = "p"
    close()
    title = next((line[2:] for line in lines if line.startswith("# ")), "Findings")
    head = f'<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n<style>{STYLE}</style>'
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n{head}\n</head>\n<body>\n'
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )

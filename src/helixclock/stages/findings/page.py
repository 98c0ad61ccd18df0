"""The findings page (``results/{model}/findings.md``), rendered from ``contrasts.csv`` alone:
each sentence is chosen by the finding's verdict, and every number in it is a value of the table
(tests/unit/test_findings.py renders a planted table and checks each number of the page against it).
"""

from __future__ import annotations

import math

import pandas as pd

DIGITS = 2


def num(x, digits: int = DIGITS) -> str:
    """A value of the table as the page writes it (a minus sign for negatives)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    text = f"{float(x):.{digits}f}"
    if float(text) == 0:
        text = text.lstrip("-")  # no "-0.00"
    return text.replace("-", "−")


def interval(low, high, digits: int = DIGITS) -> str:
    return f"[{num(low, digits)}, {num(high, digits)}]"


def _quantity(row) -> str:
    if row["quantity"] == "difference":
        return f"{row['x']} − {row['y']}"
    if row["quantity"] == "ratio":
        return f"{row['x']} / {row['y']}"
    if row["quantity"] == "share_below":
        return f"share with {row['x']} below {row['y']}"
    return str(row["x"])


def _counted(row) -> str:
    """What a row's count counts: units (a table of units, e.g. neurons) or pairs."""
    return "units" if row["clusters"] == "units" else "pairs"


def _support(row) -> str:
    """Where the numbers come from: pairs, clusters, split, choice."""
    unit = _counted(row)
    parts = [f"{int(row['n_pairs'])} {unit}"]
    if unit == "pairs":
        if row["clusters"] == "prompt-sharing components":
            parts.append(f"{int(row['n_clusters'])} clusters of pairs that share a prompt")
        else:
            parts.append(
                "each pair its own cluster (pairs that share a prompt count as independent: "
                "the interval may be too narrow)"
            )
    if isinstance(row["selection"], str) and row["selection"]:
        parts.append(f"{row['selection']} ({row['split']})")
    return "; ".join(parts)


SMALLEST = 8  # decimals at most: a value below 1e-8 (a rounding-sized R^2 increment) prints as 0


def _digits(*values) -> int:
    """Decimals that show a small value as more than 0 (a held-out R^2 increment of 0.0014 as
    0.0014, one of 5.8e-6 as 0.0000058, a p of 3e-8 as 0.00000003): 2 where the largest value
    given (NaN left out) is 0.01 or more in size, else two significant digits of it, at most
    :data:`SMALLEST` (an estimate and its interval take the estimate's)."""
    sizes = [abs(float(v)) for v in values if pd.notna(v)]
    if not sizes or max(sizes) >= 0.01:
        return DIGITS
    if max(sizes) == 0:
        return 4
    return min(SMALLEST, 1 - math.floor(math.log10(max(sizes))))


def _stage_test(row) -> str:
    """A stage's own test (quantity tested): its estimate, interval where it has one, p, the
    family's multiplicity and what it resampled or counted (the test itself: the family's
    heading, :func:`findings_page`)."""
    shown = f"{row['x']}" + (f" − {row['y']}" if isinstance(row["y"], str) and row["y"] else "")
    digits = _digits(row["estimate"])
    shown += f" = {num(row['estimate'], digits)}"
    if pd.notna(row["low"]):
        level = f"{num(row['level'], 0)}%, the stage's, not adjusted"
        shown += f" [{num(row['low'], digits)}, {num(row['high'], digits)}] ({level})"
    sided = "two-sided" if row["sided"] == "two" else "one-sided"
    method = "Holm" if row["family_kind"] == "confirmatory" else "Benjamini-Hochberg"
    step = f"{method}'s level {num(row['alpha_step'], 4)} in a family of {int(row['m'])}"
    counted = f"{int(row['n_pairs'])} {row['clusters']}"
    p = num(row["p"], max(4, _digits(row["p"])))
    return f"{shown[0].upper()}{shown[1:]}, p = {p} ({sided}) against {step}; {counted}"


def _detectable(row) -> str:
    """What the stage calibrated its test to detect, where it did."""
    if not (isinstance(row["detectable_of"], str) and row["detectable_of"]):
        return ""
    of, calibration = row["detectable_of"], "(the stage's calibration)"
    if pd.isna(row["detectable"]):
        return f" Planted at the whole of {of}, it would not be detected here {calibration}."
    if row["detectable"] >= 1:
        return f" Planted at the whole of {of}, it is detected here; at smaller fractions, not {calibration}."
    exact = [d for d in (DIGITS, 3, 4) if round(row["detectable"], d) == row["detectable"]]  # 0.125, 0.0625
    fraction = num(row["detectable"], exact[0] if exact else 4)
    return f" Planted at {fraction} of {of} or more, it is detected here {calibration}; a smaller one is not shown."


def sentence(row) -> str:
    """One finding's line, chosen by its verdict."""
    v = row["verdict"]
    q, claim = _quantity(row), row["claim"]
    if row["quantity"] == "tested" and v in ("holds", "not detected"):
        said = f"**Holds**: {claim}" if v == "holds" else f"**Not detected**: the test does not show that {claim}"
        return f"- {said}. {_stage_test(row)}.{_detectable(row)}"
    if v in ("holds", "reversed", "not distinguished"):
        level = f"{num(row['adj_level'], 1)}% interval, {row['family_kind']} family of {int(row['m'])}"
        d = _digits(row["estimate"])
        shown = f"{q} = {num(row['estimate'], d)} {interval(row['adj_low'], row['adj_high'], d)} ({level})"
        if v == "holds":
            head = f"**Holds**: {claim}. {shown}."
        elif v == "reversed":
            head = f"**Reversed**: the opposite of the claim ({claim}) is shown. {shown}."
        else:
            head = (
                f"**Not distinguished**: {claim} is not shown, nor its opposite. {shown}; with these "
                f"{int(row['n_pairs'])} {_counted(row)} the test detects a true effect of "
                f"{num(row['mde'], _digits(row['mde']))} or more "
                f"with power {num(row['power'])}, and cannot tell a smaller one from 0."
            )
        support = _support(row)
        return f"- {head} {support[0].upper()}{support[1:]}."
    if v == "estimate":
        level = f"{num(row['level'], 0)}%, {row['interval']}"
        d = _digits(row["estimate"])
        shown = f"{num(row['estimate'], d)} {interval(row['low'], row['high'], d)} ({level})"
        return f"- {claim}: {q} = {shown}; {_support(row)}."
    if v == "not defined":
        den = f"{num(row['den_estimate'])} {interval(row['den_low'], row['den_high'])} ({num(row['level'], 0)}%)"
        if row["quantity"] == "category":
            return f"- {claim}: not categorised: its TE, {den}, does not lie above 0; {_support(row)}."
        return f"- {claim}: not defined: the denominator, {den}, does not exclude 0; {_support(row)}."
    return f"- {claim}: not computed ({row['note']})."


def findings_page(contrasts: pd.DataFrame, model: str) -> str:
    """The page of one model: how to read it (read from the table), then each family's findings
    under its title, in the table's order."""
    if len(contrasts) == 0:
        return f"# Findings: {model}\n\nNo declared finding applies to this model.\n"
    first = contrasts.iloc[0]
    counts = contrasts["verdict"].value_counts()
    verdicts = ("holds", "reversed", "not distinguished", "not detected")
    tally = ", ".join(f"{v} {int(counts[v])}" for v in verdicts if v in counts)
    lines = [
        f"# Findings: {model}",
        "",
        "Generated from `findings/contrasts.csv` (every number below is a value of that table), for the "
        "findings that `config/findings.yaml` declares for this model.",
        "",
        f"How to read it: every interval comes from {int(first['resamples'])} bootstrap resamples (seed "
        f"{int(first['seed'])}) of whole clusters of pairs (pairs that share a prompt resample together); a "
        "difference is paired, pair by pair over the pairs both quantities have. A verdict is a test at "
        f"level {num(first['alpha'])} within the finding's family (Holm for a confirmatory family, "
        "Benjamini-Hochberg for a screening list), and the interval shown beside it is at the level of the "
        "step that decided it, so it excludes 0 exactly where the verdict says holds or reversed (a stage's "
        "own test, below, excepted). An "
        "object chosen after the run (a best layer, a block, a category) is chosen on one half of the pairs "
        "and measured on the other (cross-fitted); an object the run chose itself (its MLP circuit, its "
        "categorised heads) is measured on the pairs that chose it, and the line says so.",
        *(
            [
                "",
                "A section that names its stage's own test (the nested T = 100 test's bootstrap over the "
                "numbers, the digit lens's null) reads each line's estimate, interval and p from that stage's "
                "table: the interval is the stage's, at its own level and not adjusted for the family, and the "
                "verdict is the stage's p against the Holm step printed beside it (holds only where the "
                "interval also lies on the claim's side). Such a claim of detection is either shown or not "
                "detected (a useless term's held-out increment lies slightly below 0: no opposite is claimed).",
            ]
            if contrasts["quantity"].eq("tested").any()
            else []
        ),
        "",
        f"Verdicts: {tally}." if tally else "No tested finding.",
    ]
    for _, part in contrasts.groupby("family", sort=False):
        lines += ["", f"## {part['family_title'].iloc[0]}", ""]
        own = part.loc[part["quantity"].eq("tested"), "interval"].dropna().unique()
        for method in own:
            lines += [f"The stage's test: {method}.", ""]
        lines += [sentence(row) for _, row in part.iterrows()]
    return "\n".join(lines) + "\n"

"""The numbers that ``compat: authors`` changes, per mode, and the table that sets the two
modes side by side (docs/differences.md, "Differences from the authors' code").

Each run writes ``results/{model}/compat/{mode}.json`` for its own mode; a run in the other
mode adds the other file, and ``compat_effects.csv`` lists every number under each mode found.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .quantities import last_token


def _row(table: pd.DataFrame, task: str = "a+b") -> dict:
    row = table[table["task"] == task]
    return {} if row.empty else {k: float(row[k].iloc[0]) for k in ("Full", "PCA", "Helix", "Circle", "Poly")}


def compat_numbers(
    tab01: pd.DataFrame,
    best: pd.DataFrame,
    peaks: pd.DataFrame,
    spectrum_main: int,
    head_topk: pd.DataFrame,
    mlp_topk: pd.DataFrame,
    mixed: pd.DataFrame,
    categories: pd.DataFrame,
    last_token_table: pd.DataFrame,
) -> dict:
    """The affected numbers of one run (item numbers of the README table in brackets), at the
    paper's reading of tables read at several positions (answers of several tokens)."""
    head_topk, mlp_topk, mixed = last_token(head_topk), last_token(mlp_topk), last_token(mixed)
    categories, last_token_curves = last_token(categories), last_token(last_token_table)
    out = {f"tab01 a+b {k} [1]": v for k, v in _row(tab01).items()}
    for r in best[best["method"] == "helix"].itertuples():
        out[f"fig04 helix periods k={r.k} [5]"] = r.periods
    main = peaks[peaks["n_numbers"] == spectrum_main].sort_values("rank")
    out["fig02 six strongest periods [7]"] = ", ".join(f"{p:.3g}" for p in main["period"].head(6))
    for name, topk in (("figD3 heads", head_topk), ("figD8 MLPs", mlp_topk)):
        out[f"{name}: smallest k, largest-effect normalisation [8]"] = int(topk["smallest_k"].iloc[0])
        out[f"{name}: smallest k, all-components normalisation [8]"] = int(topk["smallest_k_all"].iloc[0])
    out["figD5 smallest m [2]"] = int(mixed["smallest_m"].iloc[0])
    used = int(mixed["m_used"].iloc[0])
    at = mixed.loc[mixed["m"] == used, "fraction"]
    out[f"figD5 fraction at m={used} [2]"] = float(at.iloc[0]) if len(at) else float("nan")
    out["tabD1 categories [2]"] = ", ".join(f"{n}:{c}" for n, c in zip(categories["name"], categories["category"]))
    curves = last_token_curves[last_token_curves["block_output"] >= 0]
    for fit in dict.fromkeys(curves["fit"]):
        part = curves[curves["fit"] == fit]
        best_row = part.loc[part["ld_mean"].idxmax()]
        out[f"fig05 best layer {fit} [4]"] = int(best_row["block_output"])
        out[f"fig05 max LD {fit} [4]"] = float(best_row["ld_mean"])
    return out


def write_numbers(path, numbers: dict, compat: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"compat": compat, "numbers": numbers}, indent=2) + "\n")


def compat_effects(paths) -> pd.DataFrame:
    """quantity, corrected, authors (each mode whose file exists)."""
    modes = {}
    for path in paths:
        if Path(path).exists():
            data = json.loads(Path(path).read_text())
            modes[data["compat"]] = data["numbers"]
    keys = list(dict.fromkeys(k for numbers in modes.values() for k in numbers))
    return pd.DataFrame(
        {"quantity": keys, **{m: [modes[m].get(k) for k in keys] for m in ("corrected", "authors") if m in modes}}
    )

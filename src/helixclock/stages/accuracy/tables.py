"""Tables A1 and C1, from the accuracy sweeps (pandas only)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...prompts.tasks import get_task


def accuracy_grid(df: pd.DataFrame) -> np.ndarray:
    """Correctness of a+b as a [100, 100] grid indexed [a, b]."""
    grid = np.full((100, 100), np.nan)
    grid[df["a"].to_numpy(), df["b"].to_numpy()] = df["correct"].to_numpy(dtype=float)
    return grid


def summary_row(df: pd.DataFrame, model: str, template: str) -> dict:
    task = get_task(str(df["task"].iloc[0]))
    return {
        "model": model,
        "task": task.label,
        "domain": task.domain,
        "prompt": template,
        "n": int(len(df)),
        "accuracy": float(df["correct"].mean()),
    }


def prompts_accuracy_table(frames: dict[str, pd.DataFrame], templates: dict[str, str]) -> pd.DataFrame:
    """tabA1: one row per model for a+b."""
    rows = [summary_row(df, m, templates[m]) for m, df in frames.items()]
    return pd.DataFrame(rows)[["model", "task", "prompt", "n", "accuracy"]]


def other_tasks_accuracy_table(model: str, frames: dict[str, pd.DataFrame], prompts: dict[str, str]) -> pd.DataFrame:
    """tabC1: the five other tasks of one model."""
    rows = [summary_row(df, model, prompts[t]) for t, df in frames.items() if t != "add"]
    return pd.DataFrame(rows)[["task", "domain", "prompt", "n", "accuracy"]]

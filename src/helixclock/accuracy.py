"""Accuracy sweeps (paper section 3, appendix A): every prompt of every task.

For each prompt the model's top token, whether it is the answer, the answer's logit
and its rank among all tokens are recorded.  These tables decide which prompts the
later stages use ("all patching experiments only use prompts the model can
successfully complete").
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from .models import LoadedModel
from .patching import PatchingEngine
from .tasks import Positions, Task, check_task_tokens, get_task

COLUMNS = ["task", "a", "b", "answer", "answer_token", "pred_token", "pred", "correct",
           "answer_logit", "rank"]


def prompt_ids(tokenizer, prompts: list[str]) -> torch.Tensor:
    return torch.tensor(tokenizer(prompts, add_special_tokens=True)["input_ids"], dtype=torch.long)


def check_all_tasks(tokenizer, model_name: str, prompts: dict[str, str], tasks) -> dict[str, Positions]:
    """Tokenisation check of every task before any forward pass; positions per task."""
    return {t: check_task_tokens(tokenizer, model_name, get_task(t), prompts[t]).positions for t in tasks}


def task_accuracy(model: LoadedModel, task: Task, template: str, engine: PatchingEngine) -> pd.DataFrame:
    """Run every prompt of ``task``; one row per prompt (see :data:`COLUMNS`)."""
    problems = task.problems()
    found = check_task_tokens(model.tokenizer, model.name, task, template, problems)
    answer_ids = found.answer_ids
    ids = torch.from_numpy(found.input_ids)
    answers = torch.from_numpy(answer_ids).to(model.device)
    pred, logit, rank = [], [], []
    start = 0
    for chunk in engine.iter_collect(ids, [], logits=True, desc=f"accuracy {task.name}"):
        last = chunk["logits"]
        ans = answers[start: start + last.shape[0]]
        start += last.shape[0]
        a_logit = last.gather(1, ans[:, None])
        pred.append(last.argmax(-1))
        logit.append(a_logit[:, 0])
        rank.append((last > a_logit).sum(-1))
    pred_t = torch.cat(pred).cpu().numpy()
    df = pd.DataFrame({
        "task": task.name,
        "a": problems.a,
        "b": problems.b,
        "answer": problems.answer,
        "answer_token": answer_ids,
        "pred_token": pred_t,
        "pred": [model.tokenizer.decode([int(t)]).strip() for t in pred_t],
        "correct": pred_t == answer_ids,
        "answer_logit": torch.cat(logit).cpu().numpy(),
        "rank": torch.cat(rank).cpu().numpy(),
    })
    return df[COLUMNS]


def accuracy_grid(df: pd.DataFrame) -> np.ndarray:
    """Correctness of a+b as a [100, 100] grid indexed [a, b]."""
    grid = np.full((100, 100), np.nan)
    grid[df["a"].to_numpy(), df["b"].to_numpy()] = df["correct"].to_numpy(dtype=float)
    return grid


def summary_row(df: pd.DataFrame, model: str, template: str) -> dict:
    task = get_task(str(df["task"].iloc[0]))
    return {"model": model, "task": task.label, "domain": task.domain, "prompt": template,
            "n": int(len(df)), "accuracy": float(df["correct"].mean())}


def prompts_accuracy_table(frames: dict[str, pd.DataFrame], templates: dict[str, str]) -> pd.DataFrame:
    """tabA1: one row per model for a+b."""
    rows = [summary_row(df, m, templates[m]) for m, df in frames.items()]
    return pd.DataFrame(rows)[["model", "task", "prompt", "n", "accuracy"]]


def other_tasks_table(model: str, frames: dict[str, pd.DataFrame], prompts: dict[str, str]) -> pd.DataFrame:
    """tabC1: the five other tasks of one model."""
    rows = [summary_row(df, model, prompts[t]) for t, df in frames.items() if t != "add"]
    return pd.DataFrame(rows)[["task", "domain", "prompt", "n", "accuracy"]]

"""Accuracy sweeps (paper section 3, appendix A): every prompt of every task.

For each prompt the model's top token, whether it is the answer, the answer's logit
and its rank among all tokens are recorded.  These tables decide which prompts the
later stages use ("all patching experiments only use prompts the model can
successfully complete").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .tasks import Positions, Task, check_task_tokens, get_task

if TYPE_CHECKING:
    import torch

    from .models import LoadedModel
    from .patching import PatchingEngine

COLUMNS = ["task", "a", "b", "answer", "answer_token", "pred_token", "pred", "correct",
           "answer_logit", "rank"]


def check_all_tasks(tokenizer, model_name: str, prompts: dict[str, str], tasks) -> dict[str, Positions]:
    """Tokenisation check of every task before any forward pass; positions per task."""
    return {t: check_task_tokens(tokenizer, model_name, get_task(t), prompts[t]).positions for t in tasks}


def task_accuracy(model: LoadedModel, task: Task, template: str, engine: PatchingEngine) -> pd.DataFrame:
    """Run every prompt of ``task``; one row per prompt (see :data:`COLUMNS`)."""
    import torch

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

"""Accuracy sweeps (paper section 3, appendix A, table C1): every prompt of every task.

For each prompt the model's top token, whether it is the answer, the answer's logit
and its rank among all tokens are recorded.  These tables decide which prompts the
later stages use ("all patching experiments only use prompts the model can
successfully complete").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...io import to_numpy
from ...tasks import N_ANSWERS, Task, check_task_tokens

if TYPE_CHECKING:
    from ...models import LoadedModel
    from ...patching import PatchingEngine

COLUMNS = ["task", "a", "b", "answer", "answer_token", "pred_token", "pred", "correct", "answer_logit", "rank"]


ANSWER_NUMBERS = np.arange(N_ANSWERS)  # the answers of a+b: logits of these tokens are kept


def task_accuracy(
    model: LoadedModel, task: Task, template: str, engine: PatchingEngine, keep: np.ndarray | None = None
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Run every prompt of ``task``; one row per prompt (see :data:`COLUMNS`).

    With ``keep`` (numbers, each an answer of the task), the last-token logits of those
    numbers' tokens are returned too, [n_prompts, len(keep)] float16 (App. F reads them)."""
    import torch

    problems = task.problems()
    found = check_task_tokens(model.tokenizer, model.name, task, template, problems)
    answer_ids = found.answer_ids
    ids = torch.from_numpy(found.input_ids)
    answers = torch.from_numpy(answer_ids).to(model.device)
    keep_ids = None
    if keep is not None:
        first = {int(n): int(t) for n, t in zip(problems.answer, answer_ids)}
        keep_ids = torch.tensor([first[int(n)] for n in keep], device=model.device)
    pred, logit, rank, kept = [], [], [], []
    start = 0
    for chunk in engine.iter_collect(ids, [], logits=True, desc=f"accuracy {task.name}"):
        last = chunk["logits"]
        ans = answers[start : start + last.shape[0]]
        start += last.shape[0]
        a_logit = last.gather(1, ans[:, None])
        pred.append(last.argmax(-1))
        logit.append(a_logit[:, 0])
        rank.append((last > a_logit).sum(-1))
        if keep_ids is not None:
            kept.append(last[:, keep_ids])
    pred_t = to_numpy(torch.cat(pred))
    df = pd.DataFrame(
        {
            "task": task.name,
            "a": problems.a,
            "b": problems.b,
            "answer": problems.answer,
            "answer_token": answer_ids,
            "pred_token": pred_t,
            "pred": [model.tokenizer.decode([int(t)]).strip() for t in pred_t],
            "correct": pred_t == answer_ids,
            "answer_logit": to_numpy(torch.cat(logit)),
            "rank": to_numpy(torch.cat(rank)),
        }
    )
    return df[COLUMNS], (to_numpy(torch.cat(kept), "float16") if keep_ids is not None else None)


def save_answer_logits(path, logits: np.ndarray, numbers: np.ndarray, token_ids: np.ndarray, template: str) -> None:
    """``logits`` [n_prompts, len(numbers)] (rows as in the task's accuracy table) to HDF5."""
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("logits", data=logits.astype(np.float16), compression="gzip")
        f["logits"].attrs["numbers"] = numbers
        f["logits"].attrs["token_ids"] = token_ids
        f.attrs["numbers"] = numbers
        f.attrs["template"] = template
        f.attrs["what"] = "final last-token logits of the tokens of the numbers 0..198, rows as in add.csv"

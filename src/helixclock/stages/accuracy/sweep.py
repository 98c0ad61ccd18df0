"""Accuracy sweeps (paper section 3, appendix A, table C1): every prompt of every task.

For each prompt the model's top token, whether it is the answer, the answer's logit
and its rank among all tokens are recorded.  These tables decide which prompts the
later stages use ("all patching experiments only use prompts the model can
successfully complete").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import h5py
import numpy as np
import pandas as pd
import torch

from ...project.io import to_numpy
from ...prompts.tasks import N_ANSWERS, Task, check_all_tasks, check_task_tokens, get_task
from .greedy import greedy_accuracy

if TYPE_CHECKING:
    from ...lm.models import LoadedModel
    from ...patching import PatchingEngine

COLUMNS = ["task", "a", "b", "answer", "answer_token", "pred_token", "pred", "correct", "answer_logit", "rank"]


ANSWER_NUMBERS = np.arange(N_ANSWERS)  # the answers of a+b: logits of these tokens are kept


def task_accuracy(
    model: LoadedModel, task: Task, template: str, engine: PatchingEngine, keep: np.ndarray | None = None
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Run every prompt of ``task``; one row per prompt (see :data:`COLUMNS`).

    With ``keep`` (numbers, each an answer of the task), the last-token logits of those
    numbers' tokens are returned too, [n_prompts, len(keep)] float16 (App. F reads them)."""
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


def model_accuracy(model: LoadedModel, spec: dict, tasks, engine: PatchingEngine, paths):
    """(task, path, table, answer logits or None) for every task of a model, after the
    tokenisation check of all of them: the top token decides with one-token numbers, bounded
    greedy decoding with numbers of several tokens (:mod:`.greedy`, whose models have no
    answer logits over the tokens 0..198)."""
    prompts = spec["prompts"]
    several = model.tokens.several
    if not several:
        check_all_tasks(model.tokenizer, model.name, prompts, tasks)
    for task, path in zip(tasks, paths):
        if several:
            yield task, path, greedy_accuracy(model, get_task(task), prompts[task], engine), None
        else:
            keep = ANSWER_NUMBERS if task == "add" else None
            yield task, path, *task_accuracy(model, get_task(task), prompts[task], engine, keep=keep)


NO_ANSWER_LOGITS = (
    "not defined for numbers of several tokens: the answers 0..198 are not tokens of the vocabulary, so there "
    "are no final logits over them (App. F's Figs. F5 and F6 read these)"
)


def save_answer_logits(path, logits: np.ndarray | None, accuracy: pd.DataFrame, numbers: np.ndarray, template: str):
    """``logits`` [n_prompts, len(numbers)] (rows as in the task's accuracy table) to HDF5,
    with the token ids of the numbers; None (numbers of several tokens) writes an empty file
    whose attribute ``not_defined`` says why."""
    with h5py.File(path, "w") as f:
        f.attrs["numbers"] = numbers
        f.attrs["template"] = template
        if logits is None:
            f.attrs["not_defined"] = NO_ANSWER_LOGITS
            return
        token_ids = accuracy.drop_duplicates("answer").set_index("answer").loc[numbers, "answer_token"].to_numpy()
        f.create_dataset("logits", data=logits.astype(np.float16), compression="gzip")
        f["logits"].attrs["numbers"] = numbers
        f["logits"].attrs["token_ids"] = token_ids
        f.attrs["what"] = "final last-token logits of the tokens of the numbers 0..198, rows as in add.csv"

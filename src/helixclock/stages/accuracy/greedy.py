"""Accuracy with answers of several tokens: bounded greedy decoding (helixclock's extension of
section 3; docs/several-tokens.md, "Numbers of several tokens").

With the paper's models an answer is one token and the top token at the last position decides
(:mod:`.sweep`).  When a tokenizer splits numbers, the model writes the answer digit by digit:
each prompt is decoded greedily until the first token that is not a digit (at most two tokens
past the answer's own count, so that an answer one digit too long, 95 for 9 + 86, is read as
written), and the digits are compared with the true value.  The logits are
the model's own output (a family with a final soft-cap, Gemma-2, applies it in its forward).  The shared
prompt prefix is run once; prompts of one token layout are decoded together, each step one
forward pass of one token per row with the key/value cache, reading only the last logits.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch
from transformers import DynamicCache

from ...project.io import to_numpy
from ...prompts.layout import boundaries, group_at
from ...prompts.numbers import digit_tokens, ordered, padded, several_task_tokens

if TYPE_CHECKING:
    from ...lm.models import LoadedModel
    from ...patching import PatchingEngine
    from ...prompts.tasks import Task


def _forward(engine, ids, cache):
    """Logits of the last position [rows, V] and the grown cache (only the last logits are
    made where the model's forward can skip the others)."""
    hf = engine.model.hf
    kwargs = engine.prefix.cache_kwargs(cache)
    if "logits_to_keep" in inspect.signature(hf.forward).parameters:
        kwargs["logits_to_keep"] = 1
    out = hf(ids, **kwargs)  # logits already soft-capped where the family caps them
    return out.logits[:, -1].float(), out.past_key_values


@dataclass
class _Rows:
    """The prompts of a task in decoding order (grouped by token layout, :func:`...numbers.ordered`):
    ``order`` the task's row of each, ``ids`` [n, seq] padded, ``first`` [n] the answer's first
    token, ``bound`` [n] the tokens each row may write (the answer's count + 2)."""

    order: np.ndarray
    groups: list
    ids: torch.Tensor
    first: torch.Tensor
    bound: torch.Tensor


@dataclass
class _Decoded:
    """What the decoding found, per row in decoding order: the first decoded token, the answer's
    first token's logit and rank at the last prompt token, and the digits written."""

    pred_token: torch.Tensor
    logit: torch.Tensor
    rank: torch.Tensor
    written: list[list[int]]


def greedy_accuracy(model: LoadedModel, task: Task, template: str, engine: PatchingEngine) -> pd.DataFrame:
    """Every prompt of ``task`` decoded greedily; one row per prompt with the columns of
    :data:`.sweep.COLUMNS`: ``pred`` is the decoded digits (or the first token's text when it is
    not a digit), ``pred_token`` the first decoded token, ``answer_token`` the answer's first
    token, ``answer_logit`` and ``rank`` those of the answer's first token at the last prompt
    token, ``correct`` whether the digits equal the answer, ``truncated`` whether the decoding
    was cut at its bound (a digit still coming)."""
    problems = task.problems()
    tokens = several_task_tokens(model.tokenizer, model.name, task, template, problems)
    rows = _decoding_rows(tokens, model.device)
    digits = torch.from_numpy(digit_tokens(model.tokenizer, model.adapter.vocab_size)).to(model.device)
    decoded = _decode(engine, rows, digits, f"greedy {task.name}")
    return _accuracy_table(model.tokenizer, task, problems, tokens.answer_lengths(), rows, decoded)


def _decoding_rows(tokens, device) -> _Rows:
    """The task's prompts grouped by token layout, with what the decoding reads of each answer."""
    order, groups, _ = ordered(tokens)
    ids = torch.from_numpy(padded([tokens.ids[i] for i in order])).to(device)
    first = torch.tensor([tokens.answers[i][0] for i in order], device=device)
    bound = torch.as_tensor(tokens.answer_lengths()[order] + 2, device=device)  # tokens per row
    return _Rows(order, groups, ids, first, bound)


def _decode(engine: PatchingEngine, rows: _Rows, digits: torch.Tensor, desc: str) -> _Decoded:
    """Every row decoded greedily, batch by batch within one token layout; the shared prompt
    prefix is run once and each batch starts from its key/value cache."""
    ids, groups = rows.ids, rows.groups
    steps = int(rows.bound.max())
    prefix = engine.prefix.get(ids, engine.prefix.length([ids], [], groups))
    n = len(rows.order)
    out = _Decoded(
        torch.empty(n, dtype=torch.long, device=ids.device),
        torch.empty(n, device=ids.device),
        torch.empty(n, dtype=torch.long, device=ids.device),
        [[] for _ in range(n)],
    )

    def step(start: int, stop: int) -> None:
        length = group_at(groups, start).layout.length
        cache = engine.prefix.expand(prefix[1], stop - start) if prefix[0] else DynamicCache()
        logit, rank, pred, written = _decode_batch(
            engine,
            ids[start:stop, prefix[0] : length],
            cache,
            rows.first[start:stop],
            rows.bound[start:stop],
            digits,
            steps,
        )
        out.logit[start:stop], out.rank[start:stop], out.pred_token[start:stop] = logit, rank, pred
        for r, seq in enumerate(written.tolist()):
            out.written[start + r] = [t for t in seq if t >= 0]

    engine.batches(n, step, desc, boundaries(groups))
    return out


def _decode_batch(
    engine: PatchingEngine,
    prompt: torch.Tensor,
    cache,
    first: torch.Tensor,
    bound: torch.Tensor,
    digits: torch.Tensor,
    steps: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One batch of rows of one layout (``prompt`` [B, s]: the tokens after the cached prefix):
    the answer's first token's logit and rank at the last prompt token, the first decoded token,
    and the tokens written [B, <= steps] (-1 once a row has stopped: at a non-digit or its
    ``bound``).  Each step is one forward pass of one token per row still decoding with the
    key/value cache: a row that stopped leaves the batch and its cache."""
    with torch.no_grad():
        last, cache = _forward(engine, prompt, cache)
        ans = last.gather(1, first[:, None])
        logit, rank = ans[:, 0], (last > ans).sum(1)
        pred = last.argmax(-1)
        out = torch.full((prompt.shape[0], steps), -1, dtype=torch.long, device=prompt.device)
        rows = torch.arange(prompt.shape[0], device=prompt.device)  # the rows still decoding
        tok = pred
        for i in range(steps):
            live = digits[tok] & (i < bound[rows])
            rows, tok = rows[live], tok[live]
            out[rows, i] = tok
            if not len(rows) or i == steps - 1:
                break
            if not live.all():
                cache.batch_select_indices(live.nonzero()[:, 0])
            last, cache = _forward(engine, tok[:, None], cache)
            tok = last.argmax(-1)
    return logit, rank, pred, out[:, : i + 1]


def _accuracy_table(
    tokenizer, task: Task, problems, answer_tokens: np.ndarray, rows: _Rows, decoded: _Decoded
) -> pd.DataFrame:
    """The accuracy table (:data:`.sweep.COLUMNS`), rows back in the task's order: ``pred`` the
    digits written, or the first decoded token's text where no digit was written; ``truncated``
    marks the rows cut at the bound (their answer's token count + 2, every one a digit): what
    they would have written is not known, so they are no numeric prediction (App. F's error
    offsets leave them out); an answer one digit longer than the true one that stops there (105
    for 95) is a numeric prediction, the +10 errors App. F counts."""
    texts = [tokenizer.decode(w).replace(" ", "") for w in decoded.written]
    cut = np.array([len(w) for w in decoded.written]) == answer_tokens[rows.order] + 2
    first_text = [tokenizer.decode([int(t)]).strip() for t in to_numpy(decoded.pred_token)]
    back = np.argsort(rows.order)  # rows back in the task's order
    pred = np.array([t if t else f for t, f in zip(texts, first_text)], dtype=object)[back]
    answers = problems.answer
    return pd.DataFrame(
        {
            "task": task.name,
            "a": problems.a,
            "b": problems.b,
            "answer": answers,
            "answer_token": to_numpy(rows.first)[back],
            "pred_token": to_numpy(decoded.pred_token)[back],
            "pred": pred,
            "correct": np.array([p == str(int(x)) for p, x in zip(pred, answers)]),
            "answer_logit": to_numpy(decoded.logit)[back],
            "rank": to_numpy(decoded.rank)[back],
            "answer_tokens": answer_tokens,
            "truncated": cut[back],
        }
    )

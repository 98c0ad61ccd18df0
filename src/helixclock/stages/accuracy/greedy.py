"""Accuracy with answers of several tokens: bounded greedy decoding (helixclock's extension of
section 3; README, "Numbers of several tokens").

With the paper's models an answer is one token and the top token at the last position decides
(:mod:`.sweep`).  When a tokenizer splits numbers, the model writes the answer digit by digit:
each prompt is decoded greedily until the first token that is not a digit (at most one token
past the answer's own count), and the digits are compared with the true value.  The logits are
the model's own output (a family with a final soft-cap, Gemma-2, applies it in its forward).  The shared
prompt prefix is run once; prompts of one token layout are decoded together, each step one
forward pass of one token per row with the key/value cache, reading only the last logits.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ...io import to_numpy
from ...layout import boundaries, group_at
from ...numbers import ordered, padded, several_task_tokens

if TYPE_CHECKING:
    from ...models import LoadedModel
    from ...patching import PatchingEngine
    from ...tasks import Task


def digit_tokens(tokenizer, vocab_size: int) -> torch.Tensor:
    """[vocab] bool: tokens that decode (stripped of spaces) to one or more of the digits
    0-9.  Other Unicode digits (Gemma-3's vocabulary has 448: "²", "٣", "१८", ...) are not
    how an answer is spelled, so they end the decoding like any other non-digit."""
    flags = torch.zeros(vocab_size, dtype=torch.bool)
    for token, i in tokenizer.get_vocab().items():
        if i < vocab_size:
            text = tokenizer.convert_tokens_to_string([token]).strip()
            flags[i] = bool(text) and text.isascii() and text.isdigit()
    return flags


def _forward(engine, ids, cache):
    """Logits of the last position [rows, V] and the grown cache (only the last logits are
    made where the model's forward can skip the others)."""
    hf = engine.model.hf
    kwargs = engine.prefix.cache_kwargs(cache)
    if "logits_to_keep" in inspect.signature(hf.forward).parameters:
        kwargs["logits_to_keep"] = 1
    out = hf(ids, **kwargs)  # logits already soft-capped where the family caps them
    return out.logits[:, -1].float(), out.past_key_values


def greedy_accuracy(model: LoadedModel, task: Task, template: str, engine: PatchingEngine) -> pd.DataFrame:
    """Every prompt of ``task`` decoded greedily; one row per prompt with the columns of
    :data:`.sweep.COLUMNS`: ``pred`` is the decoded digits (or the first token's text when it is
    not a digit), ``pred_token`` the first decoded token, ``answer_token`` the answer's first
    token, ``answer_logit`` and ``rank`` those of the answer's first token at the last prompt
    token, ``correct`` whether the digits equal the answer."""
    from transformers import DynamicCache

    problems = task.problems()
    tokens = several_task_tokens(model.tokenizer, model.name, task, template, problems)
    order, groups, _ = ordered(tokens)
    ids = torch.from_numpy(padded([tokens.ids[i] for i in order])).to(model.device)
    first = torch.tensor([tokens.answers[i][0] for i in order], device=model.device)
    bound = torch.as_tensor(tokens.answer_lengths()[order] + 1, device=model.device)  # tokens per row
    steps = int(bound.max())
    digits = digit_tokens(model.tokenizer, model.adapter.vocab_size).to(model.device)
    prefix = engine.prefix.get(ids, engine.prefix.length([ids], [], groups))
    n = len(order)
    pred_tok = torch.empty(n, dtype=torch.long, device=model.device)
    logit = torch.empty(n, device=model.device)
    rank = torch.empty(n, dtype=torch.long, device=model.device)
    written: list[list[int]] = [[] for _ in range(n)]

    def step(start: int, stop: int) -> None:
        length = group_at(groups, start).layout.length
        rows = ids[start:stop, prefix[0] : length]
        cache = engine.prefix.expand(prefix[1], stop - start) if prefix[0] else DynamicCache()
        with torch.no_grad():
            last, cache = _forward(engine, rows, cache)
            ans = last.gather(1, first[start:stop, None])
            logit[start:stop], rank[start:stop] = ans[:, 0], (last > ans).sum(1)
            live = torch.ones(stop - start, dtype=torch.bool, device=ids.device)
            out = []
            for i in range(steps):
                tok = last.argmax(-1)
                if i == 0:
                    pred_tok[start:stop] = tok
                live &= digits[tok] & (i < bound[start:stop])
                out.append(torch.where(live, tok, -1))
                if not live.any() or i == steps - 1:
                    break
                last, cache = _forward(engine, tok[:, None], cache)
        for r, seq in enumerate(torch.stack(out, 1).tolist()):
            written[start + r] = [t for t in seq if t >= 0]

    engine.batches(n, step, f"greedy {task.name}", boundaries(groups))
    texts = [model.tokenizer.decode(w).replace(" ", "") for w in written]
    first_text = [model.tokenizer.decode([int(t)]).strip() for t in to_numpy(pred_tok)]
    back = np.argsort(order)  # rows back in the task's order
    pred = np.array([t if t else f for t, f in zip(texts, first_text)], dtype=object)[back]
    answers = problems.answer
    df = pd.DataFrame(
        {
            "task": task.name,
            "a": problems.a,
            "b": problems.b,
            "answer": answers,
            "answer_token": to_numpy(first)[back],
            "pred_token": to_numpy(pred_tok)[back],
            "pred": pred,
            "correct": np.array([p == str(int(x)) for p, x in zip(pred, answers)]),
            "answer_logit": to_numpy(logit)[back],
            "rank": to_numpy(rank)[back],
            "answer_tokens": tokens.answer_lengths(),
        }
    )
    return df

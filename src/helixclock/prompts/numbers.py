"""Numbers of several tokens: where each number lies in each prompt (helixclock's extension).

The paper studies models whose tokenizers keep every number of its tasks whole (GPT-J up to 361,
Llama-3.1 up to 999; section 3) and names the other case as a limitation: "Gemma-2-9B tokenizes
each digit of a number separately and must use additional algorithms to collate digit tokens".
Most open models split numbers, into digits (Gemma, SmolLM2, Mistral, Llama 2) or into chunks.
For such a model (registry ``number_tokens: several``) this module finds, in every prompt, the
token span of each operand and the tokens of the answer, checked through the tokenizer's
character offsets:

* an operand's tokens are the tokens overlapping its characters; together they must spell the
  number (a leading space, as in BPE vocabularies, is allowed) and nothing else;
* the answer's tokens are what tokenising ``prompt + answer`` adds after the prompt's own
  tokens (which it must keep), spelling the answer.

A number's *representation* is the residual stream at the last token of its span: the only
position whose residual can hold the whole number in a causal model (docs/several-tokens.md, "Numbers of
several tokens").  Prompts then fall into *length classes* (the token counts of a, b and the
answer); :func:`layouts` turns each prompt into a :class:`~helixclock.prompts.layout.Layout`
that the patching engine resolves roles with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .layout import Group, Layout, groups_of, layout_order
from .tasks import Decoder, Problems, Task, TokenisationError, operand_spans, require_placeholders, token_strings

NUMBER_TOKENS = ("one", "several")  # registry key number_tokens


@dataclass
class PromptTokens:
    """Token ids of prompts and where their numbers lie.

    ids: each prompt's token ids (lengths may differ); spans: operand -> [n, 2] token
    [start, end) of its number; answers: each answer's tokens after its prompt (None when
    not asked for); end: the token that ends each answer where the prompt's format fixes one
    (registry ``answer_end``: the few-shot prefix's newline), else None."""

    ids: list[list[int]]
    spans: dict[str, np.ndarray]
    answers: list[list[int]] | None = None
    end: list[int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(x) for x in self.ids], dtype=np.int64)

    def answer_lengths(self) -> np.ndarray:
        return np.array([len(x) for x in self.answers], dtype=np.int64) if self.answers else np.ones(len(self), int)

    def widths(self) -> dict[str, int]:
        """The widest span of each operand over the prompts."""
        return {op: int((s[:, 1] - s[:, 0]).max()) for op, s in self.spans.items()}

    def layouts(self, teacher_forced: bool = False) -> list[Layout]:
        """Each prompt's layout.  ``teacher_forced``: the prompt followed by its answer's tokens
        but the last, the answer scored at its k positions; where an ``end`` token is known,
        followed by all of its tokens, scored at k + 1 positions, the last predicting the end.
        The ``answer`` role is as wide as the most answer tokens of these prompts."""
        k = self.answer_lengths() if teacher_forced else np.ones(len(self), int)
        e = int(teacher_forced and self.end is not None)
        width = tuple(self.widths().items()) + ((("answer", int(k.max())),) if teacher_forced else ())
        out = []
        for i, n in enumerate(self.lengths):
            spans = tuple((op, int(s[i, 0]), int(s[i, 1])) for op, s in self.spans.items())
            out.append(Layout(int(n + k[i] - 1 + e), spans, int(k[i]) + e, width, e))
        return out

    def sequences(self, teacher_forced: bool = False) -> list[list[int]]:
        """Token ids of each row: the prompt, and when teacher-forced its answer's tokens but the
        last (all of them where an ``end`` token is known)."""
        if not teacher_forced:
            return self.ids
        return [ids + (ans if self.end is not None else ans[:-1]) for ids, ans in zip(self.ids, self.answers)]

    def targets(self) -> list[list[int]]:
        """The tokens each teacher-forced row is scored on: the answer's, then the end token."""
        if self.end is None:
            return [list(a) for a in self.answers]
        return [list(a) + [e] for a, e in zip(self.answers, self.end)]

    def classes(self) -> pd.DataFrame:
        """Length classes: the token counts of each operand and of the answer, with how many
        prompts fall into each."""
        cols = {f"{op}_tokens": s[:, 1] - s[:, 0] for op, s in self.spans.items()}
        if self.answers is not None:
            cols["answer_tokens"] = self.answer_lengths()
        df = pd.DataFrame(cols).assign(prompt_length=self.lengths)
        keys = list(df.columns)
        return df.groupby(keys).size().rename("count").reset_index()


def several_task_tokens(
    tokenizer,
    model: str,
    task: Task,
    template: str,
    problems: Problems | None = None,
    answers: bool = True,
    answer_end: str | None = None,
) -> PromptTokens:
    """The tokens of every prompt of ``task`` and where its numbers lie (see the module
    docstring), with the token of ``answer_end`` (text, e.g. "\\n") that ends each answer;
    :class:`TokenisationError` names the first number or answer that breaks a rule."""
    problems = problems if problems is not None else task.problems()
    require_placeholders(model, task, template)
    prompts = problems.prompts(template)
    enc = tokenizer(prompts, return_offsets_mapping=True, add_special_tokens=True)
    values = {"a": problems.a, "b": problems.b}
    chars = operand_spans(template, values, task.operands)
    decode = Decoder(tokenizer)
    spans = {}
    for op, (start, end) in chars.items():
        spans[op] = np.empty((len(prompts), 2), dtype=np.int64)
        for i, (ids, offs) in enumerate(zip(enc["input_ids"], enc["offset_mapping"])):
            toks = [t for t, (s, e) in enumerate(offs) if e > s and s < end[i] and e > start[i]]
            text = "".join(decode(np.asarray([ids[t] for t in toks]))) if toks else ""
            number = str(int(values[op][i]))
            if not toks or toks != list(range(toks[0], toks[-1] + 1)) or text.replace(" ", "") != number:
                raise TokenisationError(
                    f"model {model!r}: number {number} (operand {op} of task {task.name!r}, prompt "
                    f"{prompts[i]!r}) is not spelled by its own tokens: tokens "
                    f"{token_strings(tokenizer, [ids[t] for t in toks])}"
                )
            spans[op][i] = (toks[0], toks[-1] + 1)
    answer_ids = _answer_tokens(tokenizer, model, task, prompts, problems.answer, enc["input_ids"]) if answers else None
    end_ids = None
    if answers and answer_end is not None:
        end_ids = _end_tokens(
            tokenizer, model, task, prompts, problems.answer, answer_ids, enc["input_ids"], answer_end
        )
    return PromptTokens([list(x) for x in enc["input_ids"]], spans, answer_ids, end_ids)


def _answer_tokens(tokenizer, model: str, task: Task, prompts, answers, prompt_ids) -> list[list[int]]:
    full = tokenizer([p + str(int(x)) for p, x in zip(prompts, answers)], add_special_tokens=True)["input_ids"]
    out = []
    for i, (ids, head) in enumerate(zip(full, prompt_ids)):
        tail = list(ids[len(head) :])
        spelled = tokenizer.decode(tail).replace(" ", "") if tail else ""
        if list(ids[: len(head)]) != list(head) or spelled != str(int(answers[i])):
            raise TokenisationError(
                f"model {model!r}: answer {int(answers[i])} of task {task.name!r} (prompt {prompts[i]!r}) is not "
                f"spelled by tokens after the prompt's own: tokens {token_strings(tokenizer, ids)}"
            )
        out.append(tail)
    return out


def _end_tokens(tokenizer, model: str, task: Task, prompts, answers, answer_ids, prompt_ids, end: str) -> list[int]:
    """The one token that ``end`` adds after each prompt and its answer (registry
    ``answer_end``); the prompt's and the answer's tokens must stay as they were."""
    full = tokenizer([p + str(int(x)) + end for p, x in zip(prompts, answers)], add_special_tokens=True)["input_ids"]
    out = []
    for i, (ids, head, ans) in enumerate(zip(full, prompt_ids, answer_ids)):
        kept = list(head) + list(ans)
        tail = list(ids[len(kept) :])
        if list(ids[: len(kept)]) != kept or len(tail) != 1:
            raise TokenisationError(
                f"model {model!r}: the answer end {end!r} after answer {int(answers[i])} of task {task.name!r} "
                f"(prompt {prompts[i]!r}) is not one token of its own: tokens {token_strings(tokenizer, ids)}"
            )
        out.append(int(tail[0]))
    return out


def ordered(tokens: PromptTokens, teacher_forced: bool = False) -> tuple[np.ndarray, list[Group], list[Layout]]:
    """The row order that makes each layout contiguous (the identity with one layout), the
    groups of the rows in that order and each ordered row's layout."""
    layouts = tokens.layouts(teacher_forced)
    order = layout_order(layouts)
    in_order = [layouts[i] for i in order]
    return order, groups_of(in_order), in_order


def padded(rows: Sequence[Sequence[int]], pad: int = 0) -> np.ndarray:
    """Token ids of rows of different lengths, right-padded into one [n, longest] array (a
    batch cuts its rows to their layout's length, so the padding is never run)."""
    longest = max(len(r) for r in rows)
    out = np.full((len(rows), longest), pad, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def rows_tokens(tokenizer, template: str, rows: pd.DataFrame, answers: bool = True, end: str | None = None):
    """:class:`PromptTokens` of the prompts of ``rows`` (columns a, b, answer; b = -1 for
    one-operand tasks), with the answer-ending token ``end``."""
    ops = ("a", "b") if (rows["b"] >= 0).any() else ("a",)
    task = Task("rows", "rows", ops, "", lambda: [], lambda *x: 0)
    problems = Problems(task, rows["a"].to_numpy(), rows["b"].to_numpy(), rows["answer"].to_numpy())
    return several_task_tokens(tokenizer, "model", task, template, problems, answers, answer_end=end)


def token_shapes(tokens: PromptTokens) -> list[tuple]:
    """Each prompt's shape: the token counts of its operands, then of its answer (pairs share
    one)."""
    counts = [tuple(int(s[i, 1] - s[i, 0]) for s in tokens.spans.values()) for i in range(len(tokens))]
    return [c + (int(k),) for c, k in zip(counts, tokens.answer_lengths())]


def prompt_shapes(tokenizer, template: str, rows: pd.DataFrame) -> list[tuple]:
    """Each prompt's shape with numbers of several tokens (the token counts of its operands and
    of its answer): the ``shape`` that pair counting (:mod:`helixclock.prompts.sampling`) groups
    partners by.  Needs a tokenizer only, not the model, so a light job can count pairs."""
    return token_shapes(rows_tokens(tokenizer, template, rows))


def task_shapes(tokenizer, prompts: dict[str, str], accuracy: dict[str, pd.DataFrame]) -> dict[str, list[tuple]]:
    """Per task (name -> accuracy table), the token shape of each correctly answered prompt
    (:func:`prompt_shapes`): what counts a task's pairs exactly before its model is loaded."""
    return {
        task: prompt_shapes(tokenizer, prompts[task], acc[acc["correct"].astype(bool)])
        for task, acc in accuracy.items()
    }


def number_prompt_tokens(tokenizer, model: str, template: str, numbers: Sequence[int]) -> PromptTokens:
    """Bare numbers in the registry's ``number_prompt`` (``{a}`` alone by default, or after a
    prefix), each number's span found as for an operand."""
    bare = Task("number", "number", ("a",), "", lambda: [(int(n),) for n in numbers], lambda a: a)
    return several_task_tokens(tokenizer, model, bare, template, answers=False)


def describe_classes(tokens: PromptTokens) -> list[dict]:
    """The model card's record of a task's length classes: per class the operands' and the
    answer's token counts, the prompt length, how many prompts, and one prompt's spans (the
    operands', and the answer's tokens written after the prompt)."""
    out = []
    layouts = tokens.layouts()
    keys = [tuple(int(s[i, 1] - s[i, 0]) for s in tokens.spans.values()) for i in range(len(tokens))]
    k = tokens.answer_lengths()
    lengths = tokens.lengths  # once: the property builds the array anew on each read
    seen: dict = {}
    for i, key in enumerate(keys):
        entry = seen.get(key)
        if entry is None:
            entry = seen[key] = {
                **{f"{op}_tokens": int(n) for op, n in zip(tokens.spans, key)},
                "prompt_lengths": set(),
                "answer_tokens": set(),
                "count": 0,
                "example_spans": {op: [int(s[i, 0]), int(s[i, 1])] for op, s in tokens.spans.items()},
                "example_last": int(layouts[i].length - 1),
                "example_answer_span": [int(lengths[i]), int(lengths[i] + k[i])],
            }
        entry["count"] += 1
        entry["prompt_lengths"].add(int(lengths[i]))
        entry["answer_tokens"].add(int(k[i]))
    for entry in seen.values():
        entry["prompt_lengths"] = sorted(entry["prompt_lengths"])
        entry["answer_tokens"] = sorted(entry["answer_tokens"])
        out.append(entry)
    return out


def digit_tokens(tokenizer, vocab_size: int) -> np.ndarray:
    """[vocab] bool: tokens that decode (stripped of spaces) to one or more of the digits 0-9,
    the tokens that continue an answer in greedy decoding (docs/several-tokens.md, "Numbers of several
    tokens").  Other Unicode digits (Gemma-3's vocabulary has 448: "²", "٣", "१८", ...) are not
    how an answer is spelled, so they end the decoding like any other non-digit."""
    flags = np.zeros(vocab_size, dtype=bool)
    for token, i in tokenizer.get_vocab().items():
        if i < vocab_size:
            text = tokenizer.convert_tokens_to_string([token]).strip()
            flags[i] = bool(text) and text.isascii() and text.isdigit()
    return flags


PLACE_NAMES = ("units", "tens", "hundreds", "thousands")


def changed_places(clean: Sequence[int], corrupted: Sequence[int]) -> list[str]:
    """Which decimal digits a corruption changes, per pair: the places whose digit differs,
    highest first, joined by "+" ("units", "tens", "tens+units", "hundreds+units", ...).  The
    strata of Table 1 and Fig. 4 for numbers of several tokens: in the "units" stratum a's
    last token, its units digit, is all that changes, so a patch of it restores a's tens only
    if that token has gathered them."""
    clean, corrupted = np.asarray(clean, dtype=np.int64), np.asarray(corrupted, dtype=np.int64)
    out = []
    for x, y in zip(clean, corrupted):
        places = [p for p in range(len(PLACE_NAMES)) if (x // 10**p) % 10 != (y // 10**p) % 10]
        if max(x, y) >= 10 ** len(PLACE_NAMES):
            raise ValueError(f"numbers {x}, {y}: more than {len(PLACE_NAMES)} digits")
        out.append("+".join(PLACE_NAMES[p] for p in reversed(places)) or "none")
    return out

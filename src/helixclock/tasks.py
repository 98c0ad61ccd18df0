"""Task families of the paper: prompts, answers, and the tokenisation checks.

The paper studies ``a+b`` for a, b in [0, 99] (section 3) and five other numerical
tasks (section 4.5, table C1).  Every task is a fixed prompt template in which the
operands appear as single tokens and whose answer is a single token, so all prompts
of a task have the same length and the same token positions for a, b and the last
token.  :func:`check_task_tokens` verifies this against a model's tokenizer before any
forward pass and :class:`TokenisationError` says which number broke it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Task:
    """One task family: its operands, domain and answer function."""

    name: str  # file-safe id used in paths and config
    label: str  # the paper's name, used in tables and figures
    operands: tuple[str, ...]
    domain: str  # human-readable domain, as in table C1
    _values: Callable[[], list[tuple[int, ...]]]
    _answer: Callable[..., int]

    def operand_values(self) -> list[tuple[int, ...]]:
        return self._values()

    def answer(self, *operands: int) -> int:
        return self._answer(*operands)

    def problems(self) -> "Problems":
        vals = np.array(self.operand_values(), dtype=np.int64)
        a = vals[:, 0]
        b = vals[:, 1] if vals.shape[1] > 1 else np.full(len(vals), -1, dtype=np.int64)
        ans = np.array([self.answer(*row) for row in vals], dtype=np.int64)
        return Problems(self, a, b, ans)


@dataclass
class Problems:
    """All problems of a task as arrays (b is -1 for one-operand tasks)."""

    task: Task
    a: np.ndarray
    b: np.ndarray
    answer: np.ndarray

    def __len__(self) -> int:
        return len(self.a)

    def prompts(self, template: str) -> list[str]:
        return [render(template, int(a), int(b)) for a, b in zip(self.a, self.b)]

    def numbers(self) -> dict[str, np.ndarray]:
        out = {"a": self.a, "answer": self.answer}
        if "b" in self.task.operands:
            out["b"] = self.b
        return out


def render(template: str, a: int, b: int = -1) -> str:
    return template.replace("{a}", str(a)).replace("{b}", str(b))


def _grid(lo: int, hi: int, step: int = 1) -> Callable[[], list[tuple[int, ...]]]:
    return lambda: [(a,) for a in range(lo, hi + 1, step)]


TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        Task("add", "a+b", ("a", "b"), "a, b in [0, 99]",
             lambda: [(a, b) for a in range(100) for b in range(100)], lambda a, b: a + b),
        Task("sub23", "a-23", ("a",), "a in [23, 99]", _grid(23, 99), lambda a: a - 23),
        Task("div5", "a//5", ("a",), "a in [0, 99]", _grid(0, 99), lambda a: a // 5),
        Task("mul1p5", "a*1.5", ("a",), "even a in [0, 98]", _grid(0, 98, 2), lambda a: a * 3 // 2),
        Task("mod2", "a mod 2", ("a",), "a in [0, 99]", _grid(0, 99), lambda a: a % 2),
        Task("solve_x", "x-a=0, x=", ("a",), "a in [0, 99]", _grid(0, 99), lambda a: a),
    ]
}
TASK_NAMES: tuple[str, ...] = tuple(TASKS)
OTHER_TASKS: tuple[str, ...] = tuple(t for t in TASK_NAMES if t != "add")


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known tasks: {', '.join(TASK_NAMES)}")
    return TASKS[name]


class TokenisationError(ValueError):
    """A number of a task is not a single token for a model's tokenizer."""


@dataclass(frozen=True)
class Positions:
    """Token positions shared by every prompt of a task (``b`` is None without b)."""

    a: int
    b: int | None
    last: int
    length: int

    def as_dict(self) -> dict[str, int | None]:
        return {"a": self.a, "b": self.b, "last": self.last, "length": self.length}


def _token_strings(tokenizer, ids: Sequence[int]) -> list[str]:
    return [tokenizer.decode([i]) for i in ids]


def _is_number_token(tokenizer, token_id: int, number: int) -> bool:
    """The token spells the number (an unknown-token id covering it does not count)."""
    return tokenizer.decode([int(token_id)]).strip() == str(number)


def _span_token(offsets: Sequence[tuple[int, int]], start: int, end: int) -> list[int]:
    """Indices of the tokens that overlap the character span [start, end)."""
    return [i for i, (s, e) in enumerate(offsets) if e > s and s < end and e > start]


def check_task_tokens(tokenizer, model: str, task: Task, template: str,
                      problems: Problems | None = None) -> tuple[Positions, np.ndarray]:
    """Check every operand and answer of ``task`` is one token; return positions and answer ids.

    Operands are located in each prompt through the tokenizer's character offsets: the
    token that covers the number must cover exactly that number.  Answers are checked
    by tokenising ``prompt + answer``: it must add exactly one token to the prompt's.
    All prompts must share their length and the positions of a and b.
    """
    problems = problems if problems is not None else task.problems()
    for op in task.operands:
        if "{" + op + "}" not in template:
            raise TokenisationError(f"model {model!r}: template {template!r} of task "
                                    f"{task.name!r} has no {{{op}}} placeholder")
    prompts = problems.prompts(template)
    enc = tokenizer(prompts, return_offsets_mapping=True, add_special_tokens=True)
    positions: dict[str, int] = {}
    lengths = {len(ids) for ids in enc["input_ids"]}
    for i, prompt in enumerate(prompts):
        offsets = enc["offset_mapping"][i]
        ids = enc["input_ids"][i]
        values = {"a": int(problems.a[i]), "b": int(problems.b[i])}
        # operands appear in template order; locate each placeholder's rendered span
        spans = _operand_spans(template, values, task.operands)
        for op, (start, end) in spans.items():
            toks = _span_token(offsets, start, end)
            if (len(toks) != 1 or tuple(offsets[toks[0]]) != (start, end)
                    or not _is_number_token(tokenizer, ids[toks[0]], values[op])):
                shown = _token_strings(tokenizer, [ids[t] for t in toks])
                raise TokenisationError(
                    f"model {model!r}: number {values[op]} (operand {op} of task "
                    f"{task.name!r}, prompt {prompt!r}) is not a single token: "
                    f"tokens {shown}")
            pos = toks[0]
            if positions.setdefault(op, pos) != pos:
                raise TokenisationError(
                    f"model {model!r}: operand {op} of task {task.name!r} sits at token "
                    f"{pos} in prompt {prompt!r} but at {positions[op]} in another prompt")
    if len(lengths) != 1:
        raise TokenisationError(f"model {model!r}: prompts of task {task.name!r} have "
                                f"different token lengths {sorted(lengths)}")
    answer_ids = _answer_token_ids(tokenizer, model, task, prompts, problems.answer,
                                   enc["input_ids"])
    length = lengths.pop()
    return Positions(positions["a"], positions.get("b"), length - 1, length), answer_ids


def _operand_spans(template: str, values: dict[str, int], operands: Sequence[str]
                   ) -> dict[str, tuple[int, int]]:
    spans: dict[str, tuple[int, int]] = {}
    out = ""
    i = 0
    while i < len(template):
        hit = next((op for op in operands if template.startswith("{" + op + "}", i)), None)
        if hit is None:
            out += template[i]
            i += 1
            continue
        text = str(values[hit])
        if hit in spans:
            raise TokenisationError(f"template {template!r} repeats {{{hit}}}")
        spans[hit] = (len(out), len(out) + len(text))
        out += text
        i += len(hit) + 2
    return spans


def _answer_token_ids(tokenizer, model: str, task: Task, prompts: list[str],
                      answers: np.ndarray, prompt_ids: list[list[int]]) -> np.ndarray:
    full = tokenizer([p + str(int(x)) for p, x in zip(prompts, answers)],
                     add_special_tokens=True)["input_ids"]
    out = np.empty(len(prompts), dtype=np.int64)
    for i, (ids, base) in enumerate(zip(full, prompt_ids)):
        if (len(ids) != len(base) + 1 or ids[: len(base)] != base
                or not _is_number_token(tokenizer, ids[-1], int(answers[i]))):
            extra = ids[len(base):] if ids[: len(base)] == base else ids
            raise TokenisationError(
                f"model {model!r}: answer {int(answers[i])} of task {task.name!r} "
                f"(prompt {prompts[i]!r}) is not a single token after the prompt: tokens "
                f"{_token_strings(tokenizer, extra)}")
        out[i] = ids[-1]
    return out


def number_token_ids(tokenizer, model: str, numbers: Sequence[int]) -> list[list[int]]:
    """Token ids of bare numbers (with the tokenizer's special tokens); each must hold
    exactly one number token."""
    enc = tokenizer([str(n) for n in numbers], add_special_tokens=True,
                    return_offsets_mapping=True)
    out = []
    for n, ids, offs in zip(numbers, enc["input_ids"], enc["offset_mapping"]):
        body = [i for i, (s, e) in zip(ids, offs) if e > s]
        if len(body) != 1 or not _is_number_token(tokenizer, body[0], n):
            raise TokenisationError(f"model {model!r}: number {n} is not a single token: "
                                    f"tokens {_token_strings(tokenizer, body)}")
        out.append(list(ids))
    if len({len(x) for x in out}) != 1:
        raise TokenisationError(f"model {model!r}: bare numbers tokenise to different lengths")
    return out

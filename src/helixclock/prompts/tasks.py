"""Task families of the paper: prompts, answers, and the tokenisation checks.

The paper studies ``a+b`` for a, b in [0, 99] (section 3) and five other numerical
tasks (section 4.5, table C1).  Every task is a fixed prompt template in which the
operands appear as single tokens and whose answer is a single token, so all prompts
of a task have the same length and the same token positions for a, b and the last
token.  :func:`check_task_tokens` verifies this against a model's tokenizer before any
forward pass and :class:`TokenisationError` says which number broke it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

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

    def problems(self) -> Problems:
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


N_ANSWERS = 199  # the answers of a+b with a, b in 0..99: the numbers 0..198

TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        Task(
            "add",
            "a+b",
            ("a", "b"),
            "a, b in [0, 99]",
            lambda: [(a, b) for a in range(100) for b in range(100)],
            lambda a, b: a + b,
        ),
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


def token_strings(tokenizer, ids: Sequence[int]) -> list[str]:
    """Each token of ``ids`` as its own decoded text (for messages that show a split number)."""
    return [tokenizer.decode([int(i)]) for i in ids]


class Decoder:
    """Decoded, stripped text of token ids, memoised (prompts share few distinct tokens)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.cache: dict[int, str] = {}

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        out = []
        for i in ids.tolist():
            if i not in self.cache:
                self.cache[i] = self.tokenizer.decode([i]).strip()
            out.append(self.cache[i])
        return np.array(out, dtype=object)


def _segments(template: str, operands: Sequence[str]) -> list[tuple[str, str]]:
    """Split a template into ("text", s) and ("op", name) pieces."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(template):
        hits = [(template.find("{" + op + "}", i), op) for op in operands]
        hits = [(j, op) for j, op in hits if j >= 0]
        if not hits:
            out.append(("text", template[i:]))
            break
        j, op = min(hits)
        if j > i:
            out.append(("text", template[i:j]))
        out.append(("op", op))
        i = j + len(op) + 2
    seen = [name for kind, name in out if kind == "op"]
    for op in set(seen):
        if seen.count(op) > 1:
            raise TokenisationError(f"template {template!r} repeats {{{op}}}")
    return out


def operand_spans(
    template: str, values: dict[str, np.ndarray], operands: Sequence[str]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Character span [start, end) of each operand in every rendered prompt."""
    n = len(next(iter(values.values())))
    cursor = np.zeros(n, dtype=np.int64)
    spans = {}
    for kind, piece in _segments(template, operands):
        if kind == "text":
            cursor = cursor + len(piece)
        else:
            length = np.array([len(str(int(v))) for v in values[piece]], dtype=np.int64)
            spans[piece] = (cursor, cursor + length)
            cursor = cursor + length
    return spans


def require_placeholders(model: str, task: Task, template: str) -> None:
    """A template must hold every operand of its task ({a}, and {b} for a+b)."""
    for op in task.operands:
        if "{" + op + "}" not in template:
            raise TokenisationError(
                f"model {model!r}: template {template!r} of task {task.name!r} has no {{{op}}} placeholder"
            )


@dataclass
class TaskTokens:
    """What the tokenisation check found: shared positions, the prompts' token ids
    [n, seq] and the answers' token ids [n] (None when answers were not checked)."""

    positions: Positions
    input_ids: np.ndarray
    answer_ids: np.ndarray | None


def check_task_tokens(
    tokenizer, model: str, task: Task, template: str, problems: Problems | None = None, answers: bool = True
) -> TaskTokens:
    """Check every operand (and answer) of ``task`` is one token; return what was found.

    Operands are located in each prompt through the tokenizer's character offsets: exactly
    one token may overlap the number, and it must spell the number (a leading space, as in
    BPE vocabularies, is allowed; an unknown-token id is not).  Answers are checked by
    tokenising ``prompt + answer``: it must add exactly one token, spelling the answer.
    All prompts must share their length and the positions of a and b.
    """
    problems = problems if problems is not None else task.problems()
    require_placeholders(model, task, template)
    prompts = problems.prompts(template)
    enc = tokenizer(prompts, return_offsets_mapping=True, add_special_tokens=True)
    lengths = np.array([len(x) for x in enc["input_ids"]])
    values = {"a": problems.a, "b": problems.b}
    spans = operand_spans(template, values, task.operands)
    if (lengths != lengths[0]).any():
        _refuse_unequal_lengths(tokenizer, model, task, prompts, enc, lengths, spans, values)
    ids = np.array(enc["input_ids"], dtype=np.int64)  # [n, S]
    offs = np.array(enc["offset_mapping"], dtype=np.int64)  # [n, S, 2]
    decode = Decoder(tokenizer)
    positions = _operand_positions(tokenizer, model, task, prompts, ids, offs, spans, values, decode)
    answer_ids = _answer_token_ids(tokenizer, model, task, prompts, problems.answer, ids, decode) if answers else None
    length = int(lengths[0])
    return TaskTokens(Positions(positions["a"], positions.get("b"), length - 1, length), ids, answer_ids)


def _refuse_unequal_lengths(
    tokenizer,
    model: str,
    task: Task,
    prompts: list[str],
    enc,
    lengths: np.ndarray,
    spans: dict[str, tuple[np.ndarray, np.ndarray]],
    values: dict[str, np.ndarray],
) -> NoReturn:
    """Prompts of different token lengths (section 3's prompts share one): name the number that is
    not a single token in the first prompt or the first prompt of another length (usually
    the cause), else the two lengths."""
    other = int(np.flatnonzero(lengths != lengths[0])[0])
    for i in (0, other):
        ids_i, offs_i = enc["input_ids"][i], enc["offset_mapping"][i]
        for op, (start, end) in spans.items():
            toks = [t for t, (a, b) in enumerate(offs_i) if b > a and a < end[i] and b > start[i]]
            number = int(values[op][i])
            if len(toks) != 1 or tokenizer.decode([ids_i[toks[0]]]).strip() != str(number):
                raise TokenisationError(
                    f"model {model!r}: number {number} (operand {op} of task {task.name!r}, "
                    f"prompt {prompts[i]!r}) is not a single token: tokens "
                    f"{token_strings(tokenizer, [ids_i[t] for t in toks])}"
                )
    raise TokenisationError(
        f"model {model!r}: prompts of task {task.name!r} have different token lengths "
        f"({lengths[0]} for {prompts[0]!r}, {lengths[other]} for {prompts[other]!r}: tokens "
        f"{token_strings(tokenizer, enc['input_ids'][other])})"
    )


def _operand_positions(
    tokenizer,
    model: str,
    task: Task,
    prompts: list[str],
    ids: np.ndarray,
    offs: np.ndarray,
    spans: dict[str, tuple[np.ndarray, np.ndarray]],
    values: dict[str, np.ndarray],
    decode: Decoder,
) -> dict[str, int]:
    """The token position of each operand, shared by every prompt (section 3): in each prompt
    exactly one token overlaps the operand's characters and spells it, at the same position
    in all prompts.  ids [n, S], offs [n, S, 2] the tokens' character offsets."""
    positions: dict[str, int] = {}
    rows = np.arange(len(prompts))
    for op, (start, end) in spans.items():
        s, e = offs[..., 0], offs[..., 1]
        overlap = (e > s) & (s < end[:, None]) & (e > start[:, None])
        count = overlap.sum(1)
        pos = overlap.argmax(1)
        text = decode(ids[rows, pos])
        wanted = np.array([str(int(v)) for v in values[op]], dtype=object)
        bad = (count != 1) | (text != wanted)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            shown = token_strings(tokenizer, ids[i][overlap[i]])
            raise TokenisationError(
                f"model {model!r}: number {values[op][i]} (operand {op} of task {task.name!r}, "
                f"prompt {prompts[i]!r}) is not a single token: tokens {shown}"
            )
        if (pos != pos[0]).any():
            i = int(np.flatnonzero(pos != pos[0])[0])
            raise TokenisationError(
                f"model {model!r}: operand {op} of task {task.name!r} sits at token {pos[i]} "
                f"in prompt {prompts[i]!r} but at {pos[0]} in {prompts[0]!r}"
            )
        positions[op] = int(pos[0])
    return positions


def _answer_token_ids(
    tokenizer, model: str, task: Task, prompts: list[str], answers: np.ndarray, prompt_ids: np.ndarray, decode: Decoder
) -> np.ndarray:
    """[n] each answer's token: ``prompt + answer`` must add exactly one token to the prompt's,
    spelling the answer (section 3: answers are single tokens)."""
    full = tokenizer([p + str(int(x)) for p, x in zip(prompts, answers)], add_special_tokens=True)["input_ids"]
    S = prompt_ids.shape[1]
    ok = np.array([len(x) == S + 1 for x in full])
    last = np.array([x[-1] for x in full], dtype=np.int64)
    if ok.all():
        head = np.array([x[:S] for x in full], dtype=np.int64)
        ok &= (head == prompt_ids).all(1)
        ok &= decode(last) == np.array([str(int(x)) for x in answers], dtype=object)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        ids = full[i]
        extra = ids[S:] if list(ids[:S]) == list(prompt_ids[i]) else ids
        raise TokenisationError(
            f"model {model!r}: answer {int(answers[i])} of task {task.name!r} "
            f"(prompt {prompts[i]!r}) is not a single token after the prompt: tokens "
            f"{token_strings(tokenizer, extra)}"
        )
    return last


def number_token_ids(tokenizer, model: str, numbers: Sequence[int]) -> list[list[int]]:
    """Token ids of bare numbers (with the tokenizer's special tokens); each must hold
    exactly one number token."""
    enc = tokenizer([str(n) for n in numbers], add_special_tokens=True, return_offsets_mapping=True)
    out = []
    for n, ids, offs in zip(numbers, enc["input_ids"], enc["offset_mapping"]):
        body = [i for i, (s, e) in zip(ids, offs) if e > s]
        if len(body) != 1 or tokenizer.decode([int(body[0])]).strip() != str(n):
            raise TokenisationError(
                f"model {model!r}: number {n} is not a single token: tokens {token_strings(tokenizer, body)}"
            )
        out.append(list(ids))
    if len({len(x) for x in out}) != 1:
        raise TokenisationError(f"model {model!r}: bare numbers tokenise to different lengths")
    return out


def single_token_limit(tokenizer, upto: int) -> int:
    """The largest n <= ``upto`` such that every bare number 0..n is one token (-1: not even 0)."""
    enc = tokenizer([str(n) for n in range(upto + 1)], add_special_tokens=False)["input_ids"]
    for n, ids in enumerate(enc):
        if len(ids) != 1 or tokenizer.decode([int(ids[0])]).strip() != str(n):
            return n - 1
    return upto


def check_all_tasks(tokenizer, model: str, prompts: dict[str, str], tasks) -> dict[str, Positions]:
    """Tokenisation check of every task before any forward pass; positions per task."""
    return {t: check_task_tokens(tokenizer, model, get_task(t), prompts[t]).positions for t in tasks}

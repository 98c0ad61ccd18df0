"""The embedded default: small GPT-J- and Llama-architecture models trained here.

Without a GPU or the hub, the pipeline trains its own models so that every stage runs
end to end.  A toy model is a real Hugging Face model (``GPTJForCausalLM`` or
``LlamaForCausalLM``) saved with ``save_pretrained`` next to a word-level tokenizer in
which every number 0..number_limit (the registry's) and every word and symbol of the prompts is one token,
so it loads through exactly the code path of hub models.

The corpus uses the registry's prompt templates for all six task families and, in
addition, number tasks that give numbers the structure LLMs pick up in pretraining (the
units digit, a mod 5, a mod 100, parity, the tens and hundreds digit) over every number
token (:data:`NUMBER_TASKS`).  A seeded 20% of the a+b pairs is held out.  Training is
next-token prediction of the answer token only.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import GPTJConfig, GPTJForCausalLM, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from ..project.progress import progress as progress_bar
from ..prompts.tasks import TASKS, Problems, Task, render
from .sources import TOY_TRAINING_KEYS
from .sources import toy_settings as config_toy_settings

SPECIAL = ("<pad>", "<unk>", "<bos>", "<eos>")


@dataclass(frozen=True)
class NumberTask:
    """A task over every number token: its prompt after the instruction, its answer, its
    share of a training batch, and the structure it gives the numbers."""

    name: str
    suffix: str
    answer: Callable[[int], int]
    share: float
    why: str


NUMBER_TASKS = (
    NumberTask("units", "units digit of {a}=", lambda a: a % 10, 0.12, "a mod 10: the T = 10 circle"),
    NumberTask("mod5", "{a} mod 5=", lambda a: a % 5, 0.05, "a mod 5: the T = 5 circle"),
    NumberTask("parity", "parity of {a}=", lambda a: a % 2, 0.08, "a mod 2: the T = 2 feature"),
    NumberTask(
        "mod100",
        "last two digits of {a}=",
        lambda a: a % 100,
        0.08,
        "a mod 100: numbers 100 apart alike, the T = 100 circle",
    ),
    NumberTask("tens", "tens digit of {a}=", lambda a: (a // 10) % 10, 0.03, "the tens digit"),
    NumberTask("hundreds", "hundreds digit of {a}=", lambda a: a // 100, 0.02, "magnitude: the linear part"),
)
ADD_SHARE = 0.40  # a+b's share of a batch; the five other tasks share what the number tasks leave
_WORD = re.compile(r"[A-Za-z]+|[^\sA-Za-z0-9]")


def prompt_prefix(template: str) -> str:
    """Text of a template before its first placeholder or formula (the instruction)."""
    cut = template.find("\n")
    if cut < 0:
        cut = template.rfind(". ") + 1 if ". " in template else 0
    return template[: cut + 1]


def digit_templates(prompts: dict[str, str]) -> dict[str, str]:
    prefix = prompt_prefix(prompts.get("add", next(iter(prompts.values()))))
    return {t.name: prefix + t.suffix for t in NUMBER_TASKS}


def build_tokenizer(prompts: dict[str, str], number_limit: int, bos: bool, digits: bool = False):
    """Word-level tokenizer: numbers 0..number_limit, prompt words and symbols, specials; with
    ``digits``, numbers split into digit tokens 0..9 (as Gemma's and SmolLM2's tokenizers do:
    numbers of several tokens)."""
    words: list[str] = []
    for text in list(prompts.values()) + list(digit_templates(prompts).values()):
        for w in _WORD.findall(text.replace("{a}", " ").replace("{b}", " ")):
            if w not in words:
                words.append(w)
    vocab = {tok: i for i, tok in enumerate(SPECIAL)}
    for n in range(10 if digits else number_limit + 1):
        vocab[str(n)] = len(vocab)
    for w in words:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Digits(individual_digits=digits),
            pre_tokenizers.Punctuation(behavior="isolated"),
        ]
    )
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
        )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    fast.add_bos_token = bos
    return fast


def build_hf_model(family: str, arch: dict, vocab_size: int, tokenizer, seed: int):
    """A freshly initialised Hugging Face model of the toy architecture."""
    torch.manual_seed(seed)
    d, L, H = arch["d_model"], arch["n_layers"], arch["n_heads"]
    d_mlp = arch.get("d_mlp", 4 * d)
    ids = dict(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    if family == "gptj":
        cfg = GPTJConfig(
            vocab_size=vocab_size,
            n_positions=64,
            n_embd=d,
            n_layer=L,
            n_head=H,
            rotary_dim=max(2, (d // H) // 2),
            n_inner=d_mlp,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            activation_function="gelu",
            tie_word_embeddings=arch.get("tie_embeddings", False),
            **ids,
        )
        return GPTJForCausalLM(cfg)
    if family == "llama":
        cfg = LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=d,
            intermediate_size=d_mlp,
            num_hidden_layers=L,
            num_attention_heads=H,
            num_key_value_heads=arch.get("n_kv_heads", H),
            max_position_embeddings=64,
            tie_word_embeddings=arch.get("tie_embeddings", False),
            **ids,
        )
        return LlamaForCausalLM(cfg)
    raise ValueError(f"toy models come in families gptj and llama, not {family!r}")


@dataclass
class Split:
    """Token ids of one training task: prompts [n, seq] and answers [n]; with numbers of
    several tokens also each row's answer position ``last`` [n] (rows right-padded) and the
    problem it comes from ``problem`` [n]."""

    name: str
    ids: torch.Tensor
    answers: torch.Tensor
    last: torch.Tensor | None = None
    problem: torch.Tensor | None = None

    def rows(self, keep: torch.Tensor, name: str) -> Split:
        """The rows of the problems ``keep`` (a boolean mask over problems)."""
        if self.problem is None:
            return Split(name, self.ids[keep], self.answers[keep])
        rows = keep[self.problem]
        return Split(name, self.ids[rows], self.answers[rows], self.last[rows], self.problem[rows])


def _encode(tokenizer, prompts: list[str], answers: np.ndarray) -> Split:
    enc = tokenizer(prompts, add_special_tokens=True)["input_ids"]
    lens = {len(x) for x in enc}
    if len(lens) != 1:
        raise ValueError(f"toy prompts tokenise to different lengths {sorted(lens)}")
    ans = [tokenizer.convert_tokens_to_ids(str(int(x))) for x in answers]
    return Split("", torch.tensor(enc), torch.tensor(ans))


def _encode_digits(tokenizer, prompts: list[str], answers: np.ndarray) -> Split:
    """Numbers of several tokens, next-token prediction by teacher forcing: for an answer of
    digit tokens t1..tk, the rows prompt -> t1, prompt t1 -> t2, ..., prompt t1..tk -> <eos>
    (the end teaches the model where the number stops), right-padded, each with its answer
    position."""
    enc = tokenizer(prompts, add_special_tokens=True)["input_ids"]
    digits = tokenizer([str(int(x)) for x in answers], add_special_tokens=False)["input_ids"]
    eos = tokenizer.eos_token_id
    rows, targets, problem = [], [], []
    for i, (head, tail) in enumerate(zip(enc, digits)):
        tail = [*tail, eos]
        for j, target in enumerate(tail):
            rows.append(head + tail[:j])
            targets.append(target)
            problem.append(i)
    longest = max(len(r) for r in rows)
    ids = torch.full((len(rows), longest), tokenizer.pad_token_id, dtype=torch.long)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = torch.tensor(row)
    last = torch.tensor([len(r) - 1 for r in rows])
    return Split("", ids, torch.tensor(targets), last, torch.tensor(problem))


def holdout_mask(n_a: int, n_b: int, frac: float, seed: int) -> np.ndarray:
    """Boolean [n_a * n_b]: True for the held-out a+b pairs (seeded)."""
    rng = np.random.default_rng(seed)
    held = np.zeros(n_a * n_b, dtype=bool)
    held[rng.permutation(n_a * n_b)[: int(round(frac * n_a * n_b))]] = True
    return held


def build_corpus(
    tokenizer, prompts: dict[str, str], number_limit: int, holdout: float, seed: int, digits: bool = False
) -> tuple[dict[str, Split], dict[str, Split]]:
    """Training splits by task, and evaluation splits (held-out a+b and every task); with
    ``digits`` (numbers of several tokens) each answer digit is a row of its own."""
    encode = _encode_digits if digits else _encode
    train: dict[str, Split] = {}
    evals: dict[str, Split] = {}
    for name, template in prompts.items():
        task: Task = TASKS[name]
        probs: Problems = task.problems()
        split = encode(tokenizer, probs.prompts(template), probs.answer)
        if name == "add":
            held = torch.from_numpy(holdout_mask(100, 100, holdout, seed))
            train[name] = split.rows(~held, name)
            evals["add_heldout"] = split.rows(held, "add_heldout")
            evals["add"] = split.rows(torch.ones_like(held), "add")
        else:
            train[name] = split.rows(torch.ones(len(probs), dtype=torch.bool), name)
            evals[name] = train[name]
    numbers = np.arange(number_limit + 1)
    for task, template in zip(NUMBER_TASKS, digit_templates(prompts).values()):
        answers = np.array([task.answer(int(a)) for a in numbers])
        split = encode(tokenizer, [render(template, int(a)) for a in numbers], answers)
        train[task.name] = split.rows(torch.ones(len(numbers), dtype=torch.bool), task.name)
        evals[task.name] = train[task.name]
    return train, evals


# Share of each training batch (the tasks of the registry's prompts share what is left evenly)
MIX = {"add": ADD_SHARE, **{t.name: t.share for t in NUMBER_TASKS}}


def _batch(train: dict[str, Split], batch_size: int, rng: np.random.Generator, pad_id: int):
    others = [k for k in train if k not in MIX]
    rest = max(0.0, 1.0 - sum(MIX[k] for k in train if k in MIX))
    weights = {k: MIX.get(k, rest / max(1, len(others))) for k in train}
    counts = {k: int(round(w * batch_size)) for k, w in weights.items()}
    seq = max(s.ids.shape[1] for s in train.values())
    ids, last, ans = [], [], []
    for k, c in counts.items():
        if c == 0:
            continue
        s = train[k]
        pick = torch.from_numpy(rng.integers(0, s.ids.shape[0], c))
        x = torch.full((c, seq), pad_id, dtype=torch.long)
        x[:, : s.ids.shape[1]] = s.ids[pick]
        ids.append(x)
        last.append(s.last[pick] if s.last is not None else torch.full((c,), s.ids.shape[1] - 1, dtype=torch.long))
        ans.append(s.answers[pick])
    return torch.cat(ids), torch.cat(last), torch.cat(ans)


@torch.no_grad()
def evaluate(model, evals: dict[str, Split], batch_size: int = 2048) -> dict[str, float]:
    model.eval()
    out = {}
    for name, s in evals.items():
        correct = 0
        for i in range(0, s.ids.shape[0], batch_size):
            logits = model(s.ids[i : i + batch_size]).logits
            if s.last is None:
                logits = logits[:, -1]
            else:  # digit rows: the next token at each row's answer position
                logits = logits[torch.arange(logits.shape[0]), s.last[i : i + batch_size]]
            correct += (logits.argmax(-1) == s.answers[i : i + batch_size]).sum().item()
        out[name] = correct / s.ids.shape[0]
    model.train()
    return out


# The settings that decide a toy's weights, besides its registry entry's family, numbers,
# prompts and architecture (eval_every only adds evaluations; stop_after ends a run early)
TRAINING_KEYS = TOY_TRAINING_KEYS


def toy_settings(spec: dict, training: dict) -> dict:
    """Everything that decides a toy's weights: registry entry and training settings (those
    ``training`` lacks at :func:`train_toy`'s defaults; :func:`helixclock.lm.sources.toy_settings`)."""
    defaults = {k: p.default for k, p in inspect.signature(train_toy).parameters.items()}
    return config_toy_settings(spec, {k: training.get(k, defaults[k]) for k in TRAINING_KEYS})


def matching_checkpoint(directory: str | Path, spec: dict, training: dict) -> Path | None:
    """``directory`` if it holds a trained toy (``training.json`` and weights) whose settings
    are exactly these, else None: a committed checkpoint stands in for training only when
    training would have made it."""
    directory = Path(directory)
    record = directory / "training.json"
    if not record.exists() or not (directory / "model.safetensors").exists():
        return None
    saved = json.loads(record.read_text()).get("settings")
    return directory if saved == json.loads(json.dumps(toy_settings(spec, training))) else None


def install_checkpoint(source: str | Path, out_dir: str | Path) -> dict:
    """Copy a committed toy (weights, tokenizer, training.json) to ``out_dir``; training.json
    is written last, as a finished training writes it."""
    source, out_dir = Path(source), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in sorted(source.iterdir()):
        if f.is_file() and f.name != "training.json":
            shutil.copy2(f, out_dir / f.name)
    shutil.copy2(source / "training.json", out_dir / "training.json")
    return json.loads((out_dir / "training.json").read_text())


def train_toy(
    name: str,
    spec: dict,
    out_dir: str | Path,
    steps: int = 1500,
    batch_size: int = 256,
    lr: float = 2e-3,
    weight_decay: float = 0.1,
    warmup: int = 100,
    holdout: float = 0.2,
    seed: int = 0,
    eval_every: int = 0,
    progress: bool = True,
    threads: int = 2,
    stop_after: int | None = None,
) -> dict:
    """Train a toy model and save it (weights, tokenizer, training.json) to ``out_dir``.

    Training runs on ``threads`` CPU threads whatever the job was given: the float sums of a
    matrix product depend on how they are split across threads, so the same seed gives the
    same weights only with the same thread count.  ``stop_after`` ends the run after that many
    steps of the full run's schedule (its first steps are exactly the full run's: used to
    check a committed checkpoint's training on a reduced budget).
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    training = dict(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        warmup=warmup,
        holdout=holdout,
        seed=seed,
        threads=threads,
    )
    try:
        return _train(name, spec, out_dir, training, eval_every, progress, stop_after)
    finally:
        torch.set_num_threads(previous)


def _train(name, spec, out_dir, training, eval_every, progress, stop_after) -> dict:
    steps, batch_size, lr, weight_decay, warmup, holdout, seed = (
        training[k] for k in ("steps", "batch_size", "lr", "weight_decay", "warmup", "holdout", "seed")
    )
    family = spec["family"]
    number_limit = spec.get("number_limit", 399)
    digits = bool(spec["toy"].get("digits", False))  # numbers of several tokens
    tokenizer = build_tokenizer(spec["prompts"], number_limit, bos=(family == "llama"), digits=digits)
    train, evals = build_corpus(tokenizer, spec["prompts"], number_limit, holdout, seed, digits)
    model = build_hf_model(family, spec["toy"], len(tokenizer), tokenizer, seed)  # (training keys are ignored)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    rng = np.random.default_rng(seed)
    history = []
    t0 = time.time()
    run = steps if stop_after is None else min(steps, stop_after)
    bar = progress_bar(range(run), desc=f"train {name}", disable=not progress)
    for step in bar:
        ids, last, ans = _batch(train, batch_size, rng, tokenizer.pad_token_id)
        hidden = model.base_model(ids).last_hidden_state[torch.arange(ids.shape[0]), last]
        logits = model.lm_head(hidden)  # the answer position only
        loss = torch.nn.functional.cross_entropy(logits, ans)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if eval_every and (step + 1) % eval_every == 0:
            history.append({"step": step + 1, "loss": loss.item(), **evaluate(model, evals)})
    train_seconds = time.time() - t0
    if history and history[-1]["step"] == run:  # the last check was of these very weights
        accuracy = {k: v for k, v in history[-1].items() if k not in ("step", "loss")}
    else:
        accuracy = evaluate(model, evals)
    model.eval()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    record = {
        "model": name,
        "settings": toy_settings(spec, training),
        "steps_run": run,
        "train_seconds": round(train_seconds, 1),
        "torch": torch.__version__,
        "final_loss": float(loss.item()),
        "accuracy": accuracy,
        "history": history,
    }
    (out_dir / "training.json").write_text(json.dumps(record, indent=2))
    return record

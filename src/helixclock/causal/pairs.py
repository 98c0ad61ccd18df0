"""Clean/corrupted prompt pairs and prompt samples, drawn (seeded) from correct prompts.

"All patching experiments only use prompts the model can successfully complete": every draw
here starts from a task's accuracy table restricted to its correct rows.

A job's pairs are written beside its raw tables (:func:`pair_table`, ``raw/pairs.csv``: each
pair column's prompts, for the findings' clusters and the strata by answer length).  The choices
that decide what a job runs (the heads it screens and ranks, the order of the top-k sweeps, the
MLP circuit) are made on a *selection draw* (:class:`Selection`, :func:`selection_draw`): pairs
drawn with their own seed from the correct prompts that no measuring pair uses, so that an object
is never measured on the pairs that chose it (docs/findings.md, "Findings"); ``compat: authors`` keeps the
paper's choice on the measuring pairs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..lm.models import LoadedModel
from ..patching import Pairs
from ..prompts.layout import Group, groups_of, layout_order
from ..prompts.numbers import changed_places, digit_tokens, ordered, padded, rows_tokens, token_shapes
from ..prompts.sampling import pair_indices
from ..prompts.tasks import render
from ..stats.statistics import PAIR

log = logging.getLogger("helixclock")


def draw_pairs(
    correct: pd.DataFrame,
    n_pairs: int,
    seed: int,
    tokenizer,
    template: str,
    vary: Sequence[str] = ("a",),
    clean_a: Sequence[int] | None = None,
    device=None,
    several: bool = False,
    end: str | None = None,
) -> Pairs:
    """Clean/corrupted pairs drawn (seeded) from a task's correctly answered prompts.

    ``correct`` is a task's accuracy table restricted to correct rows (columns a, b,
    answer, answer_token).  The corrupted prompt changes the operands in ``vary`` and keeps
    the others (a'+b for vary=("a",), a+b' for ("b",), a'+b' for ("a", "b")); its answer
    differs from the clean one.  ``clean_a`` restricts the clean prompts' a (e.g. to a
    held-out test split).  Fewer pairs than asked is said in the log.

    With numbers of several tokens (``several``) the corrupted operands have the clean ones'
    token counts (the pair shares its token positions) and the corrupted answer has the clean
    answer's token count (so "is it 100 or more" is not what the pair changes), both prompts
    are followed by the clean answer's tokens (teacher forcing: all of them, scored with the
    token ``end`` that ends an answer in the prompt's format, or all but the last where it
    fixes none), the pairs are scored by log-probability (:mod:`helixclock.patching.metrics`;
    the paper's logit where every pair reads one position: one-token answers and no end token),
    ordered by token layout, and the log says how many pairs each length class gave.
    """
    tokens = rows_tokens(tokenizer, template, correct, end=end) if several else None
    shape = token_shapes(tokens) if several else None
    clean_idx, corrupt_idx = pair_indices(correct, n_pairs, seed, vary, clean_a, shape)
    if not clean_idx:
        raise ValueError(
            f"no clean/corrupted pairs with different answers among {len(correct)} correct prompts "
            f"(varying {', '.join(vary)})"
        )
    if len(clean_idx) < n_pairs:
        log.warning(
            "only %d clean/corrupted pairs of the %d asked for (varying %s; %d correct prompts)",
            len(clean_idx),
            n_pairs,
            ", ".join(vary),
            len(correct),
        )
    rows = correct.reset_index(drop=True)
    c, x = rows.iloc[clean_idx], rows.iloc[corrupt_idx]
    meta = {
        "clean_a": c["a"].to_numpy(),
        "clean_b": c["b"].to_numpy(),
        "clean_answer": c["answer"].to_numpy(),
        "corrupted_a": x["a"].to_numpy(),
        "corrupted_b": x["b"].to_numpy(),
        "corrupted_answer": x["answer"].to_numpy(),
        "vary": tuple(vary),
        "seed": seed,
    }
    if several:
        return _several_pairs(tokens, clean_idx, corrupt_idx, meta, device, _digit_ids(tokenizer, device))
    return Pairs(
        prompt_ids(tokenizer, template, c, device),
        prompt_ids(tokenizer, template, x, device),
        torch.tensor(c["answer_token"].to_numpy(), device=device),
        torch.tensor(x["answer_token"].to_numpy(), device=device),
        meta,
        shared_layout(tokenizer, template, c),
    )


def shared_layout(tokenizer, template: str, rows: pd.DataFrame) -> list[Group]:
    """Every row of ``rows`` in one group, where every number is one token (the paper's case):
    the prompts of a task share one token layout, that of the first row, whose roles ("a", "b",
    "last") resolve to the positions the model card records, as each prompt's own layout does
    where numbers take several tokens (:mod:`helixclock.prompts.layout`)."""
    layout = rows_tokens(tokenizer, template, rows.iloc[:1], answers=False).layouts()[0]
    length = int(prompt_ids(tokenizer, template, rows.iloc[:1]).shape[1])
    if layout.length != length:
        raise ValueError(
            f"the prompt {render(template, int(rows['a'].iloc[0]), int(rows['b'].iloc[0]))!r} is {length} tokens "
            f"and its layout {layout.length}: the tokenizer splits it otherwise than its numbers' spans say"
        )
    return [Group(0, len(rows), layout)]


def model_pairs(
    model: LoadedModel,
    correct: pd.DataFrame,
    n_pairs: int,
    seed: int,
    template: str,
    vary: Sequence[str] = ("a",),
    clean_a: Sequence[int] | None = None,
) -> Pairs:
    """:func:`draw_pairs` for a loaded model: its tokenizer and device, and with numbers of
    several tokens its registry's ``answer_end``."""
    several = model.tokens.several
    return draw_pairs(
        correct, n_pairs, seed, model.tokenizer, template, vary, clean_a, model.device, several, answer_end(model)
    )


def answer_end(model: LoadedModel) -> str | None:
    """The token text that ends an answer in the model's prompts (registry ``answer_end``), read
    where numbers take several tokens; a one-token answer is read at the last token alone (the
    paper's), whatever the registry says."""
    return model.info.get("answer_end") if model.tokens.several else None


def _several_pairs(
    tokens, clean_idx: list[int], corrupt_idx: list[int], meta: dict, device, digits: torch.Tensor
) -> Pairs:
    """Pairs of prompts with numbers of several tokens, teacher-forced on the clean answer,
    scored by log-probability and ordered by token layout (see :func:`draw_pairs`)."""
    forced = tokens.layouts(teacher_forced=True)
    spans = [lay.spans for lay in tokens.layouts()]
    shapes = token_shapes(tokens)
    for i, j in zip(clean_idx, corrupt_idx):
        if spans[i] != spans[j] or len(tokens.ids[i]) != len(tokens.ids[j]):
            raise ValueError(
                f"clean prompt row {i} and its corrupted partner row {j} have different token positions "
                f"(spans {spans[i]} vs {spans[j]}, {len(tokens.ids[i])} vs {len(tokens.ids[j])} tokens)"
            )
    order = layout_order([forced[i] for i in clean_idx])
    clean_rows = [clean_idx[k] for k in order]
    corrupt_rows = [corrupt_idx[k] for k in order]
    meta = {k: v[order] if isinstance(v, np.ndarray) else v for k, v in meta.items()}
    meta["classes"] = pd.Series([str(shapes[i]) for i in clean_rows]).value_counts().to_dict()
    # the first answer token the clean and the corrupted answer do not share (-1: none), and the
    # corrupted answer's token there: where the reading at the first differing token reads
    # (helixclock.causal.experiments.first_difference_pairs)
    first = [_first_difference(tokens.answers[i], tokens.answers[j]) for i, j in zip(clean_rows, corrupt_rows)]
    meta["first_difference"] = np.array(first, dtype=np.int64)
    meta["first_difference_token"] = np.array(
        [tokens.answers[j][t] if t >= 0 else -1 for j, t in zip(corrupt_rows, first)], dtype=np.int64
    )
    log.info("pairs per length class (token counts of the operands and the answer): %s", meta["classes"])
    seqs, targets = tokens.sequences(teacher_forced=True), tokens.targets()
    pad = int(tokens.ids[0][0])  # never run: a batch stops at its layout's length
    clean = padded([seqs[i] for i in clean_rows], pad)
    # the corrupted prompt followed by the clean answer's tokens
    corrupt = padded([tokens.ids[j] + seqs[i][len(tokens.ids[i]) :] for i, j in zip(clean_rows, corrupt_rows)], pad)
    scored = padded([targets[i] for i in clean_rows], 0)  # columns past a row's positions are never read
    # the paper's LD where every pair reads one position (one-token answers, no end token)
    scoring = "logit" if scored.shape[1] == 1 else "logprob"
    return Pairs(
        torch.tensor(clean, device=device),
        torch.tensor(corrupt, device=device),
        torch.tensor(scored[:, 0], device=device),
        torch.tensor([tokens.answers[j][0] for j in corrupt_rows], device=device),
        meta,
        groups_of([forced[i] for i in clean_rows]),
        torch.tensor(scored, device=device),
        scoring=scoring,
        digits=digits,
    )


def _first_difference(clean: Sequence[int], corrupted: Sequence[int]) -> int:
    """The index of the first token where two answers differ (-1 where they are the same)."""
    for t, (x, y) in enumerate(zip(clean, corrupted)):
        if x != y:
            return t
    return -1 if len(clean) == len(corrupted) else min(len(clean), len(corrupted))


def prompt_ids(tokenizer, template: str, rows: pd.DataFrame, device=None) -> torch.Tensor:
    """Token ids [n, seq] of the prompts of ``rows`` (columns a, b)."""
    text = [render(template, int(a), int(b)) for a, b in zip(rows["a"], rows["b"])]
    return torch.tensor(tokenizer(text, add_special_tokens=True)["input_ids"], device=device)


def prompt_rows(tokenizer, template: str, rows: pd.DataFrame, device=None, several: bool = False):
    """Token ids of the prompts of ``rows`` for collecting values at roles ("a", "last"):
    (ids [n, seq], groups, order), the rows being ``rows.iloc[order]``; one-token numbers
    keep the rows' order in one group (:func:`shared_layout`), numbers of several tokens are
    ordered by token layout (ids right-padded)."""
    if not several:
        ids = prompt_ids(tokenizer, template, rows, device)
        return ids, shared_layout(tokenizer, template, rows), np.arange(len(rows))
    tokens = rows_tokens(tokenizer, template, rows, answers=False)
    order, groups, _ = ordered(tokens)
    ids = padded([tokens.ids[i] for i in order], int(tokens.ids[0][0]))
    return torch.tensor(ids, device=device), groups, order


def forced_rows(model: LoadedModel, rows: pd.DataFrame, template: str):
    """Token ids of the prompts of ``rows`` (columns a, b, answer) followed by their own answers'
    tokens, as pairs run them (teacher forcing, with the registry's ``answer_end``: :func:`answer_end`;
    one-token answers: the prompts alone, the answer read at the last token), for
    collecting values at role "answer": (ids [n, seq], groups, order, answer token counts), the
    rows being ``rows.iloc[order]``, ordered by token layout."""
    tokens = rows_tokens(model.tokenizer, template, rows, end=answer_end(model))
    order, groups, _ = ordered(tokens, teacher_forced=True)
    seqs = tokens.sequences(teacher_forced=True)
    ids = padded([seqs[i] for i in order], int(tokens.ids[0][0]))
    return torch.tensor(ids, device=model.device), groups, order, tokens.answer_lengths()[order]


def same_forced_pairs(model: LoadedModel, rows: pd.DataFrame, template: str) -> Pairs:
    """Each prompt of ``rows`` (columns a, b, answer) paired with itself, teacher-forced with its
    answer and scored as :func:`draw_pairs` scores numbers of several tokens (ordered by token
    layout; ``meta`` in that order): for ablations, where the metric compares a patched run with
    the unpatched one.  One-token answers: the prompts alone, in their order, scored by the
    answer's logit at the last token (the paper's)."""
    tokens = rows_tokens(model.tokenizer, template, rows, end=answer_end(model))
    idx = list(range(len(rows)))
    meta = {f"{side}_{k}": rows[k].to_numpy() for side in ("clean", "corrupted") for k in ("a", "b", "answer")}
    return _several_pairs(tokens, idx, idx, meta, model.device, _digit_ids(model.tokenizer, model.device)).same()


def _digit_ids(tokenizer, device) -> torch.Tensor:
    """The token ids that continue an answer under greedy decoding (spelled by 0-9)."""
    return torch.from_numpy(np.flatnonzero(digit_tokens(tokenizer, max(tokenizer.get_vocab().values()) + 1))).to(device)


# -- the pairs a job ran, and the selection draw --------------------------------------------------
MEASURE = "measure"  # pairs.csv's draw of the pairs that measure (the raw tables' pair columns)
SELECT = "selection"  # ... of the pairs that chose what the job runs (ranked by activation patching)
SCREEN = "screen"  # ... of the larger selection draw that an attribution screen reads
SPLITS = {True: "separate draw", False: "same pairs"}  # pairs.csv's split: the choices against the measuring pairs
SELECTION_SEED = 7_919  # added to the config's seed: the selection draw's own stream


def pair_table(pairs: Pairs, draw: str | None = None, split: str | None = None) -> pd.DataFrame:
    """The pairs of ``pairs``, one row per pair column (``pair``): clean and corrupted a and b,
    the answer's token count and which digits of a the corruption changes
    (:func:`helixclock.prompts.numbers.changed_places`, the strata of
    :func:`helixclock.stages.helix.tables.strata_table`); with ``draw`` which draw they are
    (:data:`MEASURE`, :data:`SELECT`) and with ``split`` how the job's choices were made
    (:data:`SPLITS`)."""
    m = pairs.meta
    table = pd.DataFrame(
        {
            "pair": [f"{PAIR}{i}" for i in range(len(pairs))],
            "clean_a": m["clean_a"],
            "corrupted_a": m["corrupted_a"],
            "clean_b": m["clean_b"],
            "corrupted_b": m["corrupted_b"],
            "answer_tokens": pairs.answer_tokens().cpu().numpy(),
            "stratum": changed_places(m["clean_a"], m["corrupted_a"]),
        }
    )
    if draw is not None:
        table.insert(1, "draw", draw)
    if split is not None:
        table["split"] = split
    return table


@dataclass
class SelectionDraw:
    """A job's selection draw: ``screen``, the pairs an attribution screen reads (one forward and
    backward pass a batch: cheap, so more of them), and ``pairs``, those of them, spread over
    every token layout, on which components are ranked by activation patching."""

    screen: Pairs
    pairs: Pairs


def job_pairs(measured: Pairs, selected: SelectionDraw | Pairs | None = None) -> pd.DataFrame:
    """A job's ``raw/pairs.csv``: its measuring pairs and, where its choices were made on a
    selection draw, that draw's pairs (column ``draw``: :data:`SELECT` the ranked ones,
    :data:`SCREEN` the screen's; a job that ranks without a screen, :func:`ranking_draw`, has the
    ranked ones only), each row with the job's ``split``."""
    split = SPLITS[selected is not None]
    parts = [pair_table(measured, MEASURE, split)]
    if isinstance(selected, SelectionDraw):
        parts += [pair_table(selected.pairs, SELECT, split), pair_table(selected.screen, SCREEN, split)]
    elif selected is not None:
        parts.append(pair_table(selected, SELECT, split))
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class Selection:
    """Where the choices that decide what a job runs are made (docs/findings.md, "Findings"): on a separate
    draw of ``n_pairs`` pairs (config key ``clock.selection_pairs``; an attribution screen reads
    ``attribution_pairs``, config key ``clock.selection_attribution_pairs``, of which the
    ``n_pairs`` are a part), or, under ``compat: authors`` or with ``n_pairs`` 0, on the pairs
    that measure them (the paper's)."""

    compat: str = "corrected"
    n_pairs: int = 50
    attribution_pairs: int = 200

    @property
    def separate(self) -> bool:
        return self.compat != "authors" and self.n_pairs > 0


def used_prompts(pairs: Pairs) -> set[tuple[int, int]]:
    """The (a, b) of every prompt, clean or corrupted, of ``pairs``."""
    m = pairs.meta
    sides = [("clean_a", "clean_b"), ("corrupted_a", "corrupted_b")]
    return {(int(a), int(b)) for x, y in sides for a, b in zip(m[x], m[y])}


def unused_rows(correct: pd.DataFrame, used: set[tuple[int, int]]) -> pd.DataFrame:
    """The rows of ``correct`` (columns a, b) whose prompt is not in ``used``."""
    keep = [(int(a), int(b)) not in used for a, b in zip(correct["a"], correct["b"])]
    return correct[np.array(keep, dtype=bool)]


def draw_apart(
    model: LoadedModel,
    correct: pd.DataFrame,
    other: Pairs,
    n_pairs: int,
    seed: int,
    template: str,
    vary: Sequence[str] = ("a",),
) -> Pairs:
    """:func:`model_pairs` of ``n_pairs`` pairs with the seed ``seed + SELECTION_SEED`` from the
    correct prompts that no pair of ``other`` uses (clean or corrupted), so the two draws share
    no prompt; where those prompts give no pair, from every correct prompt (the draws may then
    share prompts; said in the log)."""
    pool = unused_rows(correct, used_prompts(other))
    try:
        return model_pairs(model, pool, n_pairs, seed + SELECTION_SEED, template, tuple(vary))
    except ValueError:
        log.warning(
            "a draw apart: the %d correct prompts no other pair uses give no pair; drawn from all %d correct "
            "prompts (it may share prompts with the other draw)",
            len(pool),
            len(correct),
        )
        return model_pairs(model, correct, n_pairs, seed + SELECTION_SEED, template, tuple(vary))


def selection_draw(
    model: LoadedModel,
    correct: pd.DataFrame,
    measured: Pairs,
    selection: Selection,
    seed: int,
    template: str,
    vary: Sequence[str] = ("a",),
) -> SelectionDraw | None:
    """The selection draw of a job whose measuring pairs are ``measured``: the larger of
    ``selection.attribution_pairs`` and ``n_pairs`` apart from them (:func:`draw_apart`), the
    screen's, and ``n_pairs`` of them spread over its layouts, the ranked ones; None where
    ``selection`` keeps the choices on the measuring pairs (``compat: authors``)."""
    if not selection.separate:
        return None
    n = max(selection.n_pairs, selection.attribution_pairs)
    screen = draw_apart(model, correct, measured, n, seed, template, vary)
    return SelectionDraw(screen, screen.spread(selection.n_pairs))


def ranking_draw(
    model: LoadedModel,
    correct: pd.DataFrame,
    measured: Pairs,
    selection: Selection,
    seed: int,
    template: str,
    vary: Sequence[str] = ("a",),
) -> Pairs | None:
    """The selection draw of a job that chooses by a sweep, not a screen (Table 1's best layer,
    Fig. 5's best block: the findings choose them on it, docs/findings.md): ``selection.n_pairs``
    pairs apart from the measuring pairs (:func:`draw_apart`); None where ``selection`` keeps
    the choices on the measuring pairs (``compat: authors``, or ``n_pairs`` 0)."""
    if not selection.separate:
        return None
    return draw_apart(model, correct, measured, selection.n_pairs, seed, template, vary)

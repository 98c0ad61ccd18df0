"""The model's scores of the answers 0..198 for numbers of several tokens (App. F, Figs. F5, F6).

The paper reads the final logits of the answer tokens 0..198.  Where an answer is several
tokens (a digit tokenizer), the score of a number n after a prompt is its log-likelihood

    L(n) = sum_j log p(n_j | prompt, n_<j) + log p(end | prompt, n),

the last term where the prompt's format fixes the token that ends an answer (registry
``answer_end``); without it L(n) would also count n as the prefix of a longer number.  The 199
candidates share prefixes: :func:`answer_log_likelihoods` walks their trie level by level with
the key/value cache of the prompt, feeding each trie node's token once (199 tokens a prompt for
a digit tokenizer, against 199 whole runs), every node's rows reading its parent's cache.  For
one-token answers (no end term) L(n) = logit(n) - logsumexp(logits): the paper's logits up to a
constant per prompt, so the slopes' signs and the periods of Fig. F6 are the paper's.

A digit tokenizer builds period 10 into L(n) by itself (the units digit is one term of the
sum).  :func:`independent_digits` is the control: each position's digit distribution kept (the
model's own, averaged over the prefixes it would write there), their dependence dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import h5py
import numpy as np
import pandas as pd
import torch

from ...patching.metrics import log_softmax_at
from ...project.progress import progress as progress_bar
from ...prompts.numbers import rows_tokens
from ...prompts.tasks import N_ANSWERS

ANSWER_NUMBERS = np.arange(N_ANSWERS)


@dataclass(frozen=True)
class Trie:
    """The candidates' token sequences as a trie, level by level.  ``levels[d]`` holds the
    token of each node at depth d + 1 and ``parents[d]`` the index of its parent among the
    nodes of depth d (depth 0 is the prompt: one node); ``leaf[c]`` is candidate c's node
    (depth, index), ``paths[c]`` the (depth, parent index, token) of each of its tokens."""

    levels: list[np.ndarray]
    parents: list[np.ndarray]
    leaf: list[tuple[int, int]]
    paths: list[list[tuple[int, int, int]]]

    @classmethod
    def of(cls, candidates: list[list[int]]) -> Trie:
        index: list[dict[tuple, int]] = []  # per depth: prefix -> node index
        for seq in candidates:
            for d in range(1, len(seq) + 1):
                if len(index) < d:
                    index.append({})
                index[d - 1].setdefault(tuple(seq[:d]), len(index[d - 1]))
        levels = [np.array([p[-1] for p in nodes], dtype=np.int64) for nodes in index]
        parents = [np.array([0 if d == 0 else index[d - 1][p[:-1]] for p in nodes], dtype=np.int64)
                   for d, nodes in enumerate(index)]  # fmt: skip
        leaf = [(len(seq), index[len(seq) - 1][tuple(seq)]) for seq in candidates]
        paths = [
            [(d, 0 if d == 0 else index[d - 1][tuple(seq[:d])], int(seq[d])) for d in range(len(seq))]
            for seq in candidates
        ]
        return cls(levels, parents, leaf, paths)


@dataclass
class NodeScores:
    """Per prompt, the log-probability at every trie node (depth 0: the prompt) of each token
    of ``alphabet`` (the candidates' tokens and the end token): ``logp[d]`` [prompts, nodes at
    depth d, len(alphabet)]."""

    alphabet: np.ndarray
    logp: list[np.ndarray]

    def column(self, token: int) -> int:
        return int(np.flatnonzero(self.alphabet == token)[0])


def answer_candidates(tokenizer, template: str, prompts: pd.DataFrame, numbers=ANSWER_NUMBERS, end: str | None = None):
    """The tokens of each number of ``numbers`` as an answer after the prompts of ``prompts``
    (columns a, b), and the token of ``end``: (candidates, end id or None), the same after every
    prompt (a ValueError names a prompt after which a number is spelled otherwise)."""
    rows = pd.DataFrame(
        {
            "a": np.repeat(prompts["a"].to_numpy(), len(numbers)),
            "b": np.repeat(prompts["b"].to_numpy(), len(numbers)),
            "answer": np.tile(np.asarray(numbers), len(prompts)),
        }
    )
    tokens = rows_tokens(tokenizer, template, rows, end=end)
    first = tokens.answers[: len(numbers)]
    for i in range(len(prompts)):
        got = tokens.answers[i * len(numbers) : (i + 1) * len(numbers)]
        if got != first:
            n = next(int(x) for x, g, f in zip(numbers, got, first) if g != f)
            raise ValueError(
                f"answer {n} is spelled by other tokens after the prompt of a={int(prompts['a'].iloc[i])}, "
                f"b={int(prompts['b'].iloc[i])} than after the first prompt: one trie cannot score them"
            )
    ends = None if tokens.end is None else sorted(set(tokens.end))
    if ends is not None and len(ends) != 1:
        raise ValueError(f"the answer end {end!r} is not one token after every answer: tokens {ends}")
    return [list(map(int, c)) for c in first], (None if ends is None else int(ends[0]))


def node_scores(
    hf, prompt_ids: list[list[int]], trie: Trie, end: int | None, max_rows: int = 512, progress: bool = True
) -> NodeScores:
    """Log-probabilities at every node of ``trie`` after each prompt (:class:`NodeScores`):
    one cached run of the prompts (batched by length, so no row is padded), then per depth one
    token per node, each node's rows reading its parent's cache.  ``max_rows``: rows of the
    widest level per forward pass."""
    alphabet = np.unique(np.concatenate([*trie.levels, [] if end is None else [end]])).astype(np.int64)
    cols = torch.from_numpy(alphabet)
    widest = max(len(level) for level in trie.levels)
    depths = len(trie.levels) + (end is not None)  # nodes of the last depth are fed only for the end
    lengths = np.array([len(ids) for ids in prompt_ids])
    out = [np.empty((len(prompt_ids), 1 if d == 0 else len(trie.levels[d - 1]), len(alphabet))) for d in range(depths)]
    device = next(hf.parameters()).device
    batch = max(1, max_rows // widest)
    chunks = [
        idx[i : i + batch]
        for n in np.unique(lengths)
        for idx in [np.flatnonzero(lengths == n)]
        for i in range(0, len(idx), batch)
    ]
    with torch.no_grad():
        for rows in progress_bar(chunks, desc="answer log-likelihoods", disable=not progress):
            ids = torch.tensor([prompt_ids[r] for r in rows], device=device)
            res = hf(input_ids=ids, use_cache=True, logits_to_keep=1)
            cache, B = res.past_key_values, len(rows)
            out[0][rows] = _columns(res.logits[:, -1], cols)[:, None]
            for d in range(1, depths):
                tokens, parents = torch.from_numpy(trie.levels[d - 1]), torch.from_numpy(trie.parents[d - 1])
                width = 1 if d == 1 else len(trie.levels[d - 2])
                select = (
                    torch.arange(B)[:, None] * width + parents[None]
                ).flatten()  # each node reads its parent's row
                cache.batch_select_indices(select.to(device))
                feed = tokens.repeat(B)[:, None].to(device)
                res = hf(input_ids=feed, past_key_values=cache, use_cache=True)
                cache = res.past_key_values
                out[d][rows] = _columns(res.logits[:, -1], cols).reshape(B, len(tokens), -1)
    return NodeScores(alphabet, out)


def _columns(logits: torch.Tensor, cols: torch.Tensor) -> np.ndarray:
    return log_softmax_at(logits.float(), cols).double().cpu().numpy()


def log_likelihoods(scores: NodeScores, trie: Trie, end: int | None) -> np.ndarray:
    """L(n) of every candidate after every prompt, [prompts, candidates] float64."""
    out = np.zeros((scores.logp[0].shape[0], len(trie.paths)))
    for c, path in enumerate(trie.paths):
        for d, parent, token in path:
            out[:, c] += scores.logp[d][:, parent, scores.column(token)]
        if end is not None:
            depth, node = trie.leaf[c]
            out[:, c] += scores.logp[depth][:, node, scores.column(end)]
    return out


def independent_digits(scores: NodeScores, trie: Trie, end: int | None) -> np.ndarray:
    """The control of L(n) [prompts, candidates]: at each depth the model's distribution of the
    next token averaged over the prefixes of that depth, each weighted by its probability under
    the model (renormalised over the candidates' prefixes), so every position keeps its digit
    distribution (and the end's) and no position depends on the digits before it.  For
    one-token answers without an end token it is L(n) itself.  Computed in log space."""
    n_prompts = scores.logp[0].shape[0]
    log_weight = [np.zeros((n_prompts, 1))]  # log P(prefix) of each node, depth by depth
    for d, (tokens, parents) in enumerate(zip(trie.levels, trie.parents)):
        cols = [scores.column(t) for t in tokens]
        log_weight.append(log_weight[d][:, parents] + scores.logp[d][:, parents, cols])  # [prompts, nodes]
    marginal = []
    for d in range(len(scores.logp)):
        w = log_weight[d] - _logsumexp(log_weight[d], 1)[:, None]  # renormalised over the depth's prefixes
        marginal.append(_logsumexp(w[:, :, None] + scores.logp[d], 1))  # [prompts, alphabet]
    out = np.zeros((n_prompts, len(trie.paths)))
    for c, path in enumerate(trie.paths):
        for d, _, token in path:
            out[:, c] += marginal[d][:, scores.column(token)]
        if end is not None:
            out[:, c] += marginal[trie.leaf[c][0]][:, scores.column(end)]
    return out


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    top = x.max(axis, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis, keepdims=True))).squeeze(axis)


def answer_scores(
    model, accuracy: pd.DataFrame, template: str, n_prompts: int, seed: int, max_rows: int = 512
) -> dict[str, np.ndarray]:
    """Rule answer_scores: L(n) of the answers 0..198 (``scores``) and its control
    (``control``, :func:`independent_digits`), [prompts, 199] each, after a seeded sample of
    ``n_prompts`` of the a+b prompts of ``accuracy`` (all of them, right or wrong, as Fig. F6
    reads), whose rows of ``accuracy`` are ``rows``."""
    rows = np.sort(np.random.default_rng(seed).choice(len(accuracy), size=min(n_prompts, len(accuracy)), replace=False))
    prompts = accuracy.iloc[rows]
    candidates, end = answer_candidates(model.tokenizer, template, prompts, end=model.info.get("answer_end"))
    ids = rows_tokens(model.tokenizer, template, prompts.assign(answer=0), answers=False).ids
    trie = Trie.of(candidates)
    scores = node_scores(model.hf, ids, trie, end, max_rows)
    return {
        "rows": rows,
        "scores": log_likelihoods(scores, trie, end),
        "control": independent_digits(scores, trie, end),
    }


def save_answer_scores(path, out: dict[str, np.ndarray], template: str) -> None:
    """:func:`answer_scores`'s arrays to HDF5 (what :func:`.wrong_answers.read_answer_scores` reads:
    the table job that reads them imports no torch)."""
    with h5py.File(path, "w") as f:
        for name, values in out.items():
            f.create_dataset(name, data=values)
        f.attrs["numbers"] = ANSWER_NUMBERS
        f.attrs["template"] = template
        f.attrs["what"] = (
            "log-likelihood L(n) of each answer n = 0..198 (its tokens and the answer's end) after the a+b prompts "
            "of add.csv's rows `rows`, and the independent-digits control"
        )

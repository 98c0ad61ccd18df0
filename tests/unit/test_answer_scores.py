"""The model's scores of the answers 0..198 (App. F, Figs. F5, F6) for numbers of several
tokens: the trie walk with the key/value cache equals a plain teacher-forced run of every
candidate, reduces to the paper's logits for one-token answers, and its control keeps each
digit's distribution while dropping their dependence."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.families import tiny_hf_model
from helpers.prompts import GPTJ_PROMPTS, digit_splitting_tokenizer

from helixclock.causal.pairs import prompt_ids
from helixclock.stages.mistakes.answer_scores import (
    NodeScores,
    Trie,
    answer_candidates,
    independent_digits,
    log_likelihoods,
    node_scores,
)

ADD = GPTJ_PROMPTS["add"]  # "Output ONLY a number.\n{a}+{b}="
PROMPTS = pd.DataFrame({"a": [3, 45, 7, 88, 12], "b": [5, 21, 60, 9, 34]})  # prompts of 3 token lengths


def plain_scores(hf, prompt: list[int], candidates: list[list[int]], end: int | None) -> np.ndarray:
    """L(n) of each candidate from a whole run of the prompt followed by it (no cache)."""
    out = []
    with torch.no_grad():
        for seq in candidates:
            tail = seq + ([end] if end is not None else [])
            ids = torch.tensor([prompt + tail[:-1]])
            logp = torch.log_softmax(hf(input_ids=ids).logits[0].double(), -1)
            first = len(prompt) - 1
            out.append(sum(float(logp[first + j, t]) for j, t in enumerate(tail)))
    return np.array(out)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_the_trie_walk_equals_a_run_of_every_candidate(family):
    """Every L(n), n = 0..198 with the answer-ending token, equals the sum of log-probabilities
    of a plain run of the prompt followed by n's digits and the end (Gemma-3: a cache with
    sliding-window layers), for prompts of three token lengths batched apart, several prompts a
    pass (the rows of a depth are prompt-major: each reads its parent's row of its own prompt)."""
    tok = digit_splitting_tokenizer()
    hf = tiny_hf_model(family, len(tok), seed=4, initializer_range=0.2)
    candidates, end = answer_candidates(tok, ADD, PROMPTS, end=".")
    assert candidates[7] == [tok.convert_tokens_to_ids("7")] and len(candidates[198]) == 3
    trie = Trie.of(candidates)
    assert [len(level) for level in trie.levels] == [10, 90, 99]  # one node per candidate: 199 tokens fed
    ids = [list(map(int, tok(f"Output ONLY a number.\n{a}+{b}=")["input_ids"])) for a, b in PROMPTS.to_numpy()]
    assert len({len(x) for x in ids}) == 3
    scores = node_scores(hf, ids, trie, end, max_rows=512, progress=False)  # up to 5 prompts a pass
    got = log_likelihoods(scores, trie, end)
    for i in range(len(ids)):
        np.testing.assert_allclose(got[i], plain_scores(hf, ids[i], candidates, end), rtol=1e-5, atol=1e-4)
    assert np.ptp(got) > 1.0  # the scores differ


def test_one_token_answers_give_the_papers_logits_up_to_a_constant_per_prompt(tokenizer):
    """One-token answers, no end: L(n) = logit(n) - logsumexp, so L(n) - logit(n) is one
    number per prompt and the line's slope and the detrended periods are the paper's."""
    hf = tiny_hf_model("gptj", len(tokenizer), seed=5)
    prompts = PROMPTS.assign(b=PROMPTS["b"] % 50)
    candidates, end = answer_candidates(tokenizer, ADD, prompts)
    assert end is None and all(len(c) == 1 for c in candidates)
    ids = prompt_ids(tokenizer, ADD, prompts)
    trie = Trie.of(candidates)
    L = log_likelihoods(node_scores(hf, ids.tolist(), trie, end, progress=False), trie, end)
    with torch.no_grad():
        logits = hf(input_ids=ids).logits[:, -1].double().numpy()[:, [c[0] for c in candidates]]
    offset = L - logits
    assert np.abs(offset - offset[:, :1]).max() < 1e-4
    assert np.ptp(offset[:, 0]) > 0  # the constant is the prompt's own


def test_the_control_keeps_each_digits_distribution_and_drops_their_dependence():
    """Synthetic node scores over the candidates 0..19 (tokens = digits, end = 10): where the
    model's next digit does not depend on the digits before it the control is L(n) itself;
    where it does (after a 1 the units digit is always 3), the control spreads that digit
    over what the units position writes on average."""
    candidates = [[int(d) for d in str(n)] for n in range(20)]
    trie = Trie.of(candidates)
    end = 10
    alphabet = np.arange(11)
    rng = np.random.default_rng(0)

    def normalise(x):
        return x - np.log(np.exp(x).sum(-1, keepdims=True))

    root = normalise(rng.normal(size=(2, 1, 11)))
    units = normalise(rng.normal(size=(2, 1, 11)))
    after_units = normalise(rng.normal(size=(2, 1, 11)))
    independent = NodeScores(alphabet, [root, np.repeat(units, 10, 1), np.repeat(after_units, 10, 1)])
    L = log_likelihoods(independent, trie, end)
    np.testing.assert_allclose(independent_digits(independent, trie, end), L, atol=1e-12)
    dependent = np.repeat(units, 10, 1).copy()
    dependent[:, 1] = normalise(np.where(np.arange(11) == 3, 5.0, -5.0))[None]  # after "1": almost surely 3
    scores = NodeScores(alphabet, [root, dependent, np.repeat(after_units, 10, 1)])
    L, control = log_likelihoods(scores, trie, end), independent_digits(scores, trie, end)
    assert L[0, 13] > control[0, 13] and L[0, 12] < control[0, 12]  # the dependence is gone from the control
    # by hand: the units position's distribution is the depth-1 nodes' averaged with weights
    # P("d") = exp(root[d]) over the first digits 0..9 (the candidates' prefixes), renormalised
    w = np.exp(root[:, 0, :10]) / np.exp(root[:, 0, :10]).sum(1, keepdims=True)  # [prompts, nodes]
    units_marginal = np.log(np.einsum("pn,pnt->pt", w, np.exp(scores.logp[1])))
    want = root[:, 0, 1] + units_marginal[:, 3] + after_units[:, 0, end]
    np.testing.assert_allclose(control[:, 13], want, rtol=1e-12)
    want_one = root[:, 0, 7] + units_marginal[:, end]  # "7": the end's marginal after one digit
    np.testing.assert_allclose(control[:, 7], want_one, rtol=1e-12)


def test_fig_f6_reads_the_two_digit_answers_apart_from_the_steps_of_token_count():
    """A planted L(n): a step down at 10 and 100 (one more digit to write) and a period-10 ripple
    over the two-digit answers.  Over 0..198 the steps decide the top period; over 10..99 alone
    (one token count) the ripple does, and only in L(n): the control is the steps alone."""
    from helixclock.stages.mistakes.wrong_answers import logit_line_fourier

    n = np.arange(199)
    steps = -8.0 * (n >= 10) - 8.0 * (n >= 100)
    ripple = np.where((n >= 10) & (n < 100), 0.5 * np.cos(2 * np.pi * n / 10), 0.0)
    L = np.stack([steps + ripple, steps + 1.3 * ripple])
    prompts = pd.DataFrame({"a": [3, 4], "b": [5, 6], "answer": [8, 10], "correct": [True, True]})
    table = logit_line_fourier(L, prompts, control=np.stack([steps, steps]))
    assert not np.isclose(table["top_period"], 10).any()
    assert np.allclose(table["two_digit_top_period"], 10)
    assert not np.isclose(table["control_two_digit_top_period"], 10).any()

"""Task families and the tokenisation checks."""

import pytest
from helpers.prompts import GPTJ_PROMPTS, digit_splitting_tokenizer

from helixclock.prompts.tasks import TASKS, Positions, TokenisationError, check_task_tokens, get_task, number_token_ids


def test_domains_and_answers_match_the_paper():
    sizes = {t: len(TASKS[t].problems()) for t in TASKS}
    assert sizes == {"add": 10000, "sub23": 77, "div5": 100, "mul1p5": 50, "mod2": 100, "solve_x": 100}
    p = TASKS["mul1p5"].problems()
    assert (p.answer == p.a * 3 // 2).all() and (p.a % 2 == 0).all() and p.a.max() == 98
    assert TASKS["sub23"].problems().answer.min() == 0
    assert get_task("add").answer(57, 68) == 125
    with pytest.raises(KeyError, match="known tasks: add, sub23"):
        get_task("mul")


def test_positions_are_derived_from_the_tokenizer(tokenizer, bos_tokenizer):
    found = check_task_tokens(tokenizer, "toy", TASKS["add"], GPTJ_PROMPTS["add"])
    pos, answers = found.positions, found.answer_ids
    assert pos == Positions(a=5, b=7, last=8, length=9)
    assert found.input_ids.shape == (10000, 9)
    assert tokenizer.decode([int(found.input_ids[1234, 5])]) == "12"
    assert tokenizer.decode([int(answers[0])]) == "0" and tokenizer.decode([int(answers[-1])]) == "198"
    # a BOS token shifts every position by one
    pos_bos = check_task_tokens(bos_tokenizer, "toy", TASKS["add"], GPTJ_PROMPTS["add"]).positions
    assert (pos_bos.a, pos_bos.b, pos_bos.last) == (6, 8, 9)
    pos_x = check_task_tokens(tokenizer, "toy", TASKS["solve_x"], GPTJ_PROMPTS["solve_x"]).positions
    assert pos_x.a == 7 and pos_x.b is None


def test_a_tokenizer_that_splits_numbers_is_refused():
    tok = digit_splitting_tokenizer()
    with pytest.raises(TokenisationError) as err:
        check_task_tokens(tok, "digit-model", TASKS["add"], GPTJ_PROMPTS["add"])
    msg = str(err.value)
    assert "digit-model" in msg and "number 10" in msg and "['1', '0']" in msg


def test_a_multi_token_answer_is_refused(tokenizer):
    # numbers above the vocabulary's 399 are unknown: 2-token answers cannot happen, so
    # build a template whose answer collides with the next token instead
    from helixclock.prompts.tasks import Task

    task = Task("big", "a*10", ("a",), "a in [0, 99]", lambda: [(a,) for a in range(0, 100)], lambda a: a * 10)
    with pytest.raises(TokenisationError, match=r"answer 400 .* not a single token"):
        check_task_tokens(tokenizer, "toy", task, GPTJ_PROMPTS["sub23"].replace("-23", "*1.5"))


def test_missing_placeholder_is_refused(tokenizer):
    with pytest.raises(TokenisationError, match="no \\{b\\} placeholder"):
        check_task_tokens(tokenizer, "toy", TASKS["add"], "Output ONLY a number.\n{a}+=")


def test_bare_numbers_must_each_be_one_token(tokenizer):
    ids = number_token_ids(tokenizer, "toy", range(361))
    assert len(ids) == 361 and all(len(x) == 1 for x in ids)
    with pytest.raises(TokenisationError, match="number 400 is not a single token"):
        number_token_ids(tokenizer, "toy", [399, 400])

"""One switch for numbers of several tokens: helixclock.prompts.layout.NumberTokens, read from registry key
number_tokens of a registry entry or a model card, and carried by the loaded model; each rule's library entry point chooses the paper's path or
the several-token path by it, and no script chooses (docs/several-tokens.md, "Numbers of several tokens")."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from helpers.paths import REPO
from helpers.prompts import GPTJ_PROMPTS, digit_splitting_tokenizer

import helixclock.lm.model_card as card_module
import helixclock.stages.heads.jobs as head_jobs
from helixclock.lm.models import LoadedModel
from helixclock.prompts.layout import NumberTokens
from helixclock.prompts.numbers import task_shapes

ADD = GPTJ_PROMPTS["add"]


def engine_of(number_tokens: str | None, tokenizer=None) -> SimpleNamespace:
    """An engine as the entry points read it: its model's typed switch (the registry entry's key)."""
    info = {} if number_tokens is None else {"number_tokens": number_tokens}
    return SimpleNamespace(model=SimpleNamespace(info=info, tokens=NumberTokens.of(info), tokenizer=tokenizer))


def test_the_switch_reads_the_key_of_an_entry_or_a_card_and_the_loaded_model_carries_it():
    """A registry entry or a model card (mappings): "several" is the only value that switches, an
    entry without the key is the paper's, and any other value is refused by name; a loaded model's
    ``tokens`` is its registry key's (wrap_model's ``number_tokens``).  The readings follow: the
    paper's last token alone, or beside it the answer positions and the first differing token; the
    places of an answer's tokens: the whole number alone, or the digits'."""
    assert NumberTokens.of({"number_tokens": "several"}).several
    for entry in ({}, {"number_tokens": "one"}, {"positions": {}}):
        assert not NumberTokens.of(entry).several
    with pytest.raises(ValueError, match="number_tokens is 'digits': allowed one, several"):
        NumberTokens.of({"number_tokens": "digits"})
    for value, several in (("one", False), ("several", True)):
        model = LoadedModel("m", None, None, None, None, torch.device("cpu"), info={"number_tokens": value})
        assert model.tokens == NumberTokens(several)
    assert NumberTokens(False).readings == ("last",)
    assert NumberTokens(True).readings == ("last", "answer", "differ")
    assert NumberTokens(False).places == ("number",)  # one-token answers: the whole number, one place
    assert NumberTokens(True).places == ("units", "tens", "hundreds")


def spy(monkeypatch, module, *names) -> list:
    """Replace ``names`` in ``module`` by recorders of their calls; returns the record."""
    calls = []
    for name in names:
        monkeypatch.setattr(module, name, lambda *a, _name=name, **k: calls.append((_name, a, k)) or _name)
    return calls


NEURON_STAGE = REPO / "src" / "helixclock" / "stages" / "neurons"


@pytest.mark.parametrize("module", sorted(NEURON_STAGE.glob("*.py")), ids=lambda p: p.name)
def test_the_neuron_stage_never_reads_the_switch_itself(module):
    """The neuron stage has one implementation (issue 52): its units' places come from the model's
    token layout (``NumberTokens.places``, read once in ``places.place_attribution``), and nothing
    in it branches on ``several`` or asks a table whether it has a place."""
    tree = ast.parse(module.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr != "several", f"{module.name}:{node.lineno} reads the switch"
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            left = node.left
            assert not (isinstance(left, ast.Constant) and left.value in ("place", "reading")), (
                f"{module.name}:{node.lineno} asks a table for its {left.value}"
            )


def test_the_head_entry_point_has_one_path_whatever_the_switch(monkeypatch, tokenizer):
    """One-token numbers and several tokens alike: the sample's rows themselves go to the one
    implementation (heads.readings.head_readings, whose readings are the model's), the job's
    pairs table beside its tables."""
    calls = []
    monkeypatch.setattr(head_jobs, "head_readings", lambda *a, **k: calls.append(a) or {})
    monkeypatch.setattr(head_jobs, "job_pairs", lambda pairs, select: "their pairs")
    sample = pd.DataFrame({"a": [12, 40, 7], "b": [3, 55, 19]})
    for switch in ("one", "several"):
        engine = engine_of(switch, tokenizer)
        out = head_jobs.head_patching(engine, "pairs", sample, ADD)
        assert out == {"pairs": "their pairs"}  # the job's pairs table beside the path's tables
        got_engine, pairs, rows, template, _, select = calls[-1]
        assert got_engine is engine and pairs == "pairs" and rows is sample and template == ADD and select is None
    assert len(calls) == 2


def test_token_shapes_come_from_the_tokenizer_only_for_several_tokens(monkeypatch):
    """other_tasks_left_out counts pairs of one token shape: a one-token entry loads no tokenizer
    (None), an entry of several tokens gets each task's shapes from its tokenizer."""
    digits = digit_splitting_tokenizer()
    loaded = []
    monkeypatch.setattr(card_module, "load_tokenizer", lambda name, spec, resources: loaded.append(name) or digits)
    frames = {
        "add": pd.DataFrame({"a": [3, 45, 7], "b": [8, 21, 60], "answer": [11, 66, 67], "correct": [True, True, False]})
    }
    spec = {"source": "toy", "prompts": {"add": ADD}}
    assert card_module.tokenizer_task_shapes("one", spec, frames) is None and loaded == []
    got = card_module.tokenizer_task_shapes("digits", {**spec, "number_tokens": "several"}, frames)
    assert loaded == ["digits"] and got == task_shapes(digits, {"add": ADD}, frames)
    assert len(got["add"]) == 2 and got["add"][0] != got["add"][1]  # 3+8 and 45+21 differ in shape


SWITCH_WORDS = ("several", "scoring", "shape", "number_tokens")


@pytest.mark.parametrize("script", sorted((REPO / "scripts").glob("*.py")), ids=lambda p: p.name)
def test_no_script_chooses_the_path(script):
    """start -> job -> entry point -> write: no script branches (``if``, a conditional expression)
    on the switch or on what follows from it, compares them, or imports the switch."""
    tree = ast.parse(script.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.Compare)):
            test = node if isinstance(node, ast.Compare) else node.test
            words = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
            words |= {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)}
            words |= {str(n.value) for n in ast.walk(test) if isinstance(n, ast.Constant)}
            assert not [w for w in words if any(s in w for s in SWITCH_WORDS)], f"{script.name}:{node.lineno}"
        if isinstance(node, ast.ImportFrom):
            assert "NumberTokens" not in {a.name for a in node.names}, f"{script.name}:{node.lineno}"


def test_the_script_guard_finds_a_planted_branch(tmp_path):
    """The guard above fails on the kind of branch the scripts used to hold."""
    planted = tmp_path / "planted.py"
    planted.write_text("if job.pairs.scoring == 'logprob':\n    out = 1\n")
    with pytest.raises(AssertionError, match="planted.py:1"):
        test_no_script_chooses_the_path(planted)


@pytest.mark.parametrize("which", ["toy", "gpt-j"])
def test_one_token_pairs_carry_the_layout_whose_roles_are_the_cards_positions(which, tokenizer, monkeypatch):
    """Numbers of one token are the one-place case: a task's prompts share one token layout, and
    its roles a, b and last resolve to the positions the model card's check finds (the toy's
    word-level tokenizer and GPT-J's real BPE, every task of the paper's prompts); so the pairs
    and the rows a role is collected at need no integer positions beside them.  A tokenizer that
    writes a prompt otherwise than its numbers' spans say is refused by name."""
    from helpers.gpt2_tokenizer import gpt2_tokenizer

    import helixclock.causal.pairs as pairs_module
    from helixclock.causal.pairs import draw_pairs, prompt_ids, prompt_rows, shared_layout
    from helixclock.prompts.tasks import TASKS, check_task_tokens, get_task

    tok = tokenizer if which == "toy" else gpt2_tokenizer()
    for name, template in GPTJ_PROMPTS.items():
        found = check_task_tokens(tok, "m", get_task(name), template, answers=False).positions
        rows = pd.DataFrame({"a": [3, 45, 97], "b": [8, 21, 60] if name == "add" else -1})
        rows["answer"] = rows["a"]  # any one-token answer: the prompt's layout does not read it
        layout = shared_layout(tok, template, rows)[0].layout
        assert layout.resolve("a") == (found.a,) and layout.resolve("last") == (found.last,), name
        if name == "add":
            assert layout.resolve("b") == (found.b,)
        ids, groups, order = prompt_rows(tok, template, rows)
        assert (
            groups[0].layout == layout and (groups[0].start, groups[0].stop) == (0, 3) and order.tolist() == [0, 1, 2]
        )
    assert TASKS  # every task above is a registered one
    correct = pd.DataFrame({"a": [3, 45, 7, 60], "b": 8})
    correct["answer"] = correct["a"] + correct["b"]
    correct["answer_token"] = [tok.convert_tokens_to_ids(str(n)) for n in correct["answer"]]
    pairs = draw_pairs(correct, 4, 0, tok, ADD, ("a",))
    assert pairs.groups[0].layout.resolve("last") == (pairs.clean.shape[1] - 1,)
    # a tokenizer whose prompt ids are one token longer than the spans it gives the numbers
    monkeypatch.setattr(
        pairs_module, "prompt_ids", lambda *a, **k: torch.nn.functional.pad(prompt_ids(*a, **k), (0, 1))
    )
    with pytest.raises(ValueError, match="splits it otherwise than its numbers' spans say"):
        shared_layout(tok, ADD, correct)

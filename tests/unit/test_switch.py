"""One switch for numbers of several tokens: helixclock.layout.NumberTokens, read from registry key
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

import helixclock.model_card as card_module
import helixclock.stages.heads.jobs as head_jobs
from helixclock.layout import NumberTokens
from helixclock.models import LoadedModel
from helixclock.numbers import task_shapes
from helixclock.pairs import prompt_ids

ADD = GPTJ_PROMPTS["add"]
POSITIONS = {"a": 3, "b": 5, "last": 6}


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


def test_the_head_entry_point_fits_the_sample_on_the_papers_path(monkeypatch, tokenizer):
    """One-token numbers: the sample's prompts as token ids, with its a and b, at the card's
    positions; several tokens: the sample's rows themselves (their layouts are the engine's)."""
    calls = []
    for fn in ("last_token_heads", "head_patching_readings"):
        monkeypatch.setattr(head_jobs, fn, lambda *a, _name=fn, **k: calls.append((_name, a, k)) or {})
    monkeypatch.setattr(head_jobs, "job_pairs", lambda pairs, select: "their pairs")
    sample = pd.DataFrame({"a": [12, 40, 7], "b": [3, 55, 19]})
    out = head_jobs.head_patching(engine_of("one", tokenizer), "pairs", sample, ADD, POSITIONS)
    assert out == {"pairs": "their pairs"}  # the job's pairs table beside the path's tables
    name, (engine, pairs, ids, a, b, positions, _, select), _ = calls[-1]
    assert select is None  # no selection draw given: the paper's choice on the measuring pairs
    assert name == "last_token_heads" and positions == POSITIONS
    assert (
        torch.equal(ids, prompt_ids(tokenizer, ADD, sample)) and a.tolist() == [12, 40, 7] and b.tolist() == [3, 55, 19]
    )
    head_jobs.head_patching(engine_of("several", tokenizer), "pairs", sample, ADD, None)
    name, args, _ = calls[-1]
    assert name == "head_patching_readings" and args[2] is sample


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

"""GPT-J's real tokenizer (GPT-2's BPE, vendored in tests/data/gpt2/) through the model card,
the tokenisation checks of the accuracy sweep and one engine forward pass.

The model is a random-weight GPT-J with GPT-J's real vocabulary size, saved with
``save_pretrained`` into a local directory that the registry names as its ``source``, so it
loads exactly as a hub checkpoint would (config, weights and tokenizer from one directory).
"""

import numpy as np
import pytest
import torch
import yaml
from helpers.gpt2_tokenizer import (
    EOS_ID,
    GPT2_DIR,
    GPTJ_VOCAB_SIZE,
    MERGES,
    MERGES_HEADER,
    SHA256,
    gpt2_tokenizer,
    read_merges,
    save_tiny_gptj,
    sha256,
)
from helpers.paths import REPO

from helixclock.lm.model_card import model_card
from helixclock.prompts.tasks import TASK_NAMES, Problems, TokenisationError, check_task_tokens, get_task

REGISTRY = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
GPTJ_PROMPTS = REGISTRY["gptj"]["prompts"]  # the authors' GPT-J prompts: a newline before {a}
PYTHIA_PROMPTS = REGISTRY["pythia"]["prompts"]  # a space before {a}: " 12" is the operand token
PREFIX = ["Output", " ONLY", " a", " number", "."]  # "Output ONLY a number." in GPT-2 tokens
BARE_LIMIT = 520  # largest n with 0..n each one GPT-2 token (as the prompts hold them: no space)
SPACED_LIMIT = 361  # ... with a leading space: the paper's "[0, 361] (with a space)"


@pytest.fixture(scope="module")
def tok():
    return gpt2_tokenizer()


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return save_tiny_gptj(tmp_path_factory.mktemp("gptj-real-vocab") / "gptj", layers=2, d=32)


def gptj_spec(path, prompts=GPTJ_PROMPTS, number_limit=361):
    """The registry's gptj entry with a local directory as its source."""
    return {**REGISTRY["gptj"], "source": str(path), "prompts": prompts, "number_limit": number_limit}


def first_split(tok, prefix: str, stop: int = 1000) -> int:
    """The smallest n in [0, stop) whose ``prefix + str(n)`` is more than one token."""
    lengths = np.array([len(x) for x in tok([prefix + str(n) for n in range(stop)])["input_ids"]])
    return int(np.flatnonzero(lengths != 1)[0])


def test_vendored_files_are_gpt2s_own(tok):
    """Byte-identical to OpenAI's published files; the merges file has its version header."""
    for name, digest in SHA256.items():
        assert sha256(GPT2_DIR / name) == digest, name
    assert MERGES.read_text(encoding="utf-8").split("\n", 1)[0] == MERGES_HEADER
    assert len(read_merges()) == 50000
    assert len(tok) == 50257 and tok.eos_token_id == tok.bos_token_id == EOS_ID


def test_the_tokenizer_gives_gpt2s_known_token_ids(tok):
    assert tok("Hello world")["input_ids"] == [15496, 995]
    assert tok(" Hello world")["input_ids"] == [18435, 995]
    assert tok(" 12")["input_ids"] == [1105] and tok("12")["input_ids"] == [1065]
    assert tok.decode([1105]) == " 12"
    assert tok("Output ONLY a number.\n")["input_ids"] == [26410, 22224, 257, 1271, 13, 198]


def test_single_token_numbers_end_at_520_bare_and_361_spaced(tok):
    assert first_split(tok, "") == BARE_LIMIT + 1
    assert tok.convert_ids_to_tokens(tok("521")["input_ids"]) == ["5", "21"]
    assert first_split(tok, " ") == SPACED_LIMIT + 1
    assert [tok.decode([i]) for i in tok(" 362")["input_ids"]] == [" 36", "2"]
    # past the boundary, single tokens are sporadic: 522 is one, 521 and 527 are not
    assert len(tok("522")["input_ids"]) == 1 and len(tok("527")["input_ids"]) == 2


def test_the_model_card_finds_the_positions_in_the_authors_gptj_prompts(model_path, tok):
    card = model_card("gptj", gptj_spec(model_path), TASK_NAMES)
    assert card["family"] == "gptj" and card["path"] == str(model_path)
    assert (card["n_layers"], card["n_heads"], card["d_model"]) == (2, 4, 32)
    assert card["number_length"] == 1  # GPT-J adds no BOS: a bare number is one token
    pos = card["positions"]
    # "Output ONLY a number." "\n" {a} "+" {b} "=": five prefix tokens and the newline first
    assert pos["add"] == {"a": 6, "b": 8, "last": 9, "length": 10}
    L = pos["add"]["length"]
    assert (pos["add"]["a"], pos["add"]["b"], pos["add"]["last"]) == (L - 4, L - 2, L - 1)
    # one-operand tasks: a follows the newline, except in "x-{a}=0, x=" ("x", "-" first)
    assert {t: pos[t]["a"] for t in TASK_NAMES} == {t: 8 if t == "solve_x" else 6 for t in TASK_NAMES}
    assert all(pos[t]["b"] is None for t in TASK_NAMES if t != "add")
    assert all(pos[t]["last"] == pos[t]["length"] - 1 for t in TASK_NAMES)
    # the token at each position spells the operand of a sample prompt
    for t in TASK_NAMES:
        ids = tok(GPTJ_PROMPTS[t].replace("{a}", "46").replace("{b}", "57"))["input_ids"]
        assert len(ids) == pos[t]["length"] and tok.decode([ids[pos[t]["a"]]]) == "46", t
        assert tok.decode([ids[-1]]) == "=", t
    assert tok.decode([ids[pos["solve_x"]["a"] - 1]]) == "-"


def test_model_card_numbers_up_to_the_real_limit_and_not_past_it(model_path):
    one_task = {"sub23": GPTJ_PROMPTS["sub23"]}  # the bare numbers are the point here, not a+b
    card = model_card("gptj", gptj_spec(model_path, one_task, BARE_LIMIT), ["sub23"])
    assert card["number_length"] == 1 and card["number_limit"] == BARE_LIMIT
    # a registry entry claiming more than the tokenizer keeps: the card names 521 and its tokens
    with pytest.raises(
        TokenisationError,
        match=r"model 'gptj': number 521 is not a single token: "
        r"tokens \['5', '21'\]",
    ):
        model_card("gptj", gptj_spec(model_path, one_task, number_limit=600), ["sub23"])
    # an entry with no number_limit: the card finds the tokenizer's own limit
    spec = gptj_spec(model_path, one_task)
    del spec["number_limit"]
    assert model_card("gptj", spec, ["sub23"])["number_limit"] == BARE_LIMIT


def test_the_model_card_reads_a_space_prefixed_operand_as_the_number(model_path, tok):
    """Pythia's prompts put a space before a: the check takes " 46" as the number 46.
    (a+b with these prompts, answers included, is checked in the next test.)"""
    others = [t for t in TASK_NAMES if t != "add"]
    pos = model_card("gptj", gptj_spec(model_path, PYTHIA_PROMPTS), others)["positions"]
    assert {t: pos[t]["a"] for t in others} == {t: 7 if t == "solve_x" else 5 for t in others}  # no newline
    assert all(pos[t]["last"] == pos[t]["length"] - 1 and pos[t]["b"] is None for t in others)
    for t in others:
        ids = tok(PYTHIA_PROMPTS[t].replace("{a}", "46"))["input_ids"]
        assert len(ids) == pos[t]["length"], t
        assert tok.decode([ids[pos[t]["a"]]]) == (" 46" if t != "solve_x" else "46"), t  # "x-46": no space


@pytest.mark.parametrize("prompts,a_token,length", [(GPTJ_PROMPTS, "{}", 10), (PYTHIA_PROMPTS, " {}", 9)])
def test_add_prompts_tokenise_into_operand_and_answer_tokens(tok, prompts, a_token, length):
    """The accuracy sweep's path: every a+b prompt, answers appended; answer ids spell a+b.
    GPT-J's prompt has a newline token before a; Pythia's has " a" as one token."""
    task = get_task("add")
    problems = task.problems()
    found = check_task_tokens(tok, "gptj", task, prompts["add"], problems, answers=True)
    pos = found.positions
    assert pos.length == length
    assert (pos.a, pos.b, pos.last) == (pos.length - 4, pos.length - 2, pos.length - 1)
    assert found.input_ids.shape == (10000, pos.length)
    # operand tokens decode to the operands (with the template's space before a), answers to a+b
    texts = {
        i: tok.decode([i])
        for i in np.unique(
            np.concatenate([found.input_ids[:, pos.a], found.input_ids[:, pos.b], found.answer_ids])
        ).tolist()
    }
    decode = np.vectorize(texts.__getitem__, otypes=[object])
    assert (decode(found.input_ids[:, pos.a]) == np.array([a_token.format(a) for a in problems.a])).all()
    assert (decode(found.input_ids[:, pos.b]) == problems.b.astype(str).astype(object)).all()
    assert (decode(found.answer_ids) == problems.answer.astype(str).astype(object)).all()
    # the prefix is shared and is GPT-2's "Output ONLY a number."
    assert [tok.decode([i]) for i in found.input_ids[0, :5]] == PREFIX


def test_the_engine_on_the_saved_model_equals_a_plain_forward(model_path, tok):
    """load_model reads the local directory like a hub id; the engine's logits and residuals
    equal a plain transformers forward of the same prompts."""
    from transformers import AutoModelForCausalLM

    from helixclock.lm.models import load_model
    from helixclock.patching import PatchingEngine, Point

    # float32 here, so that the engine can be held to a plain forward at 1e-5 (the registry's
    # GPT-J runs in bfloat16, as the authors ran it: tests/unit/test_fidelity.py)
    spec = {**gptj_spec(model_path), "dtype": "float32"}
    model = load_model("gptj", spec, device="cpu", resources="unused-for-a-local-source")
    assert model.adapter.vocab_size == GPTJ_VOCAB_SIZE and model.source == str(model_path)
    assert model.tokenizer("Hello world")["input_ids"] == [15496, 995]  # the saved tokenizer round trips
    task = get_task("add")
    problems = task.problems()
    rows = np.array([12, 1234, 4657, 9999])  # (0,12), (12,34), (46,57), (99,99)
    sub = Problems(task, problems.a[rows], problems.b[rows], problems.answer[rows])
    found = check_task_tokens(model.tokenizer, "gptj", task, GPTJ_PROMPTS["add"], sub)
    ids = torch.from_numpy(found.input_ids)  # [4, 10]
    pos = found.positions
    points = [Point("resid_pre", l, (pos.a, pos.b, pos.last)) for l in range(3)]
    values, logits = PatchingEngine(model, progress=False).collect(ids, points)
    assert logits.shape == (4, GPTJ_VOCAB_SIZE)
    ref = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    with torch.no_grad():
        out = ref(ids, output_hidden_states=True)
    torch.testing.assert_close(logits, out.logits[:, -1], atol=1e-5, rtol=1e-5)
    for l in range(2):  # hidden_states[l] is the input of block l
        torch.testing.assert_close(
            values[points[l]], out.hidden_states[l][:, [pos.a, pos.b, pos.last]], atol=1e-5, rtol=1e-5
        )
    # different operands give different residuals at a (the prefix cache does not leak rows)
    assert (values[points[1]][:, 0].diff(dim=0).abs().amax(-1) > 1e-4).all()
    # the accuracy sweep end to end on a one-operand task: ranks agree with the plain logits
    from helixclock.stages.accuracy.sweep import task_accuracy

    df, _ = task_accuracy(model, get_task("sub23"), GPTJ_PROMPTS["sub23"], PatchingEngine(model, progress=False))
    assert len(df) == 77 and [tok.decode([t]) for t in df["answer_token"]] == df["answer"].astype(str).tolist()
    with torch.no_grad():
        plain = ref(torch.tensor(tok(get_task("sub23").problems().prompts(GPTJ_PROMPTS["sub23"]))["input_ids"])).logits[
            :, -1
        ]
    answer_logit = plain.gather(1, torch.tensor(df["answer_token"].to_numpy())[:, None])  # [77, 1]
    np.testing.assert_allclose(df["answer_logit"].to_numpy(), answer_logit[:, 0].numpy(), atol=1e-5)
    # ranks among 50,400 random logits: exact up to near-ties that float rounding may flip
    rank = df["rank"].to_numpy()
    assert ((plain > answer_logit + 1e-5).sum(-1).numpy() <= rank).all()
    assert (rank <= (plain > answer_logit - 1e-5).sum(-1).numpy()).all()
    pred_logit = plain.gather(1, torch.tensor(df["pred_token"].to_numpy())[:, None])[:, 0]
    torch.testing.assert_close(pred_logit, plain.amax(-1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("prompts", [GPTJ_PROMPTS, PYTHIA_PROMPTS], ids=["gptj", "pythia"])
def test_the_neuron_stages_prompts_of_one_token_numbers_are_the_sweeps(tok, prompts):
    """The neuron stage reads every model's prompts through the token layout (teacher-forced rows,
    helixclock.causal.pairs.forced_rows and same_forced_pairs); on the real tokenizer of a one-token model
    they are the accuracy sweep's prompts and answer tokens, in the rows' order, one position read
    (the last token: the paper's neurons)."""
    from types import SimpleNamespace

    import pandas as pd

    from helixclock.causal.pairs import forced_rows, same_forced_pairs
    from helixclock.prompts.layout import NumberTokens

    task = get_task("add")
    problems = Problems(
        task, np.array([0, 12, 99, 57, 8]), np.array([0, 88, 99, 3, 91]), np.array([0, 100, 198, 60, 99])
    )
    found = check_task_tokens(tok, "gptj", task, prompts["add"], problems, answers=True)
    rows = pd.DataFrame({"a": problems.a, "b": problems.b, "answer": problems.answer})
    model = SimpleNamespace(tokenizer=tok, tokens=NumberTokens(False), info={}, device=torch.device("cpu"))
    ids, groups, order, k = forced_rows(model, rows, prompts["add"])
    assert order.tolist() == list(range(5)) and k.tolist() == [1] * 5 and len(groups) == 1
    assert np.array_equal(ids.numpy(), found.input_ids)
    pairs = same_forced_pairs(model, rows, prompts["add"])
    assert np.array_equal(pairs.clean.numpy(), found.input_ids) and pairs.scoring == "logit"
    assert pairs.answers[:, 0].tolist() == found.answer_ids.tolist() and pairs.answers.shape == (5, 1)
    assert pairs.groups[0].layout.resolve("answer") == (found.positions.last,)

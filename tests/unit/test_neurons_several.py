"""The neuron stage (section 5.4, Figs. 8-10, D9-D13, F3, F4) for answers of several tokens: units
(layer, neuron, place) at the digits' places (docs/several-tokens.md, "Numbers of several tokens"),
each experiment held to known answers (tests/unit/test_neurons.py holds the same code to the
paper's definitions where numbers are one token)."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.digit_models import digit_engine, digit_model
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table

from helixclock.causal.pairs import draw_pairs, forced_rows, same_forced_pairs
from helixclock.patching import PatchingEngine, Point, direct_effects
from helixclock.stages.mistakes.logit_lens import digit_lens_period, digit_lens_tables, predicted_digit_period
from helixclock.stages.neurons.places import (
    ablation_means,
    by_slot,
    digit_lens,
    lens_tokens,
    place_ablation,
    place_attribution,
    place_grids,
    top_units,
    unit_direct_effects,
)
from helixclock.stats.statistics import pair_columns

ADD = GPTJ_PROMPTS["add"]


@pytest.fixture(scope="module")
def several():
    return digit_engine("llama", seed=5, name="d3", n_pairs=12)


def test_by_slot_lays_places_on_the_answer_slots():
    """Slot s of a row with k answer tokens holds place k - 1 - s (0: units); padded slots repeat
    slot 0, as the role's positions do; values shared by every row stay one row where every row
    has the same answer length (one-token numbers: [L, 1, 1, d], the paper's last token)."""
    per_place = torch.arange(3.0)[:, None, None, None].expand(3, 1, 3, 1).clone()  # value = place
    k = torch.tensor([1, 2, 3])
    out = by_slot(per_place, k, 3)[0, :, :, 0]
    assert out.tolist() == [[0, 0, 0], [1, 0, 1], [2, 1, 0]]
    shared = per_place[:, :, :1]  # one row for every prompt
    assert by_slot(shared, torch.tensor([2, 2, 2, 2]), 2).shape == (1, 1, 2, 1)  # one answer length: one row
    assert by_slot(shared, k, 3)[0, :, :, 0].tolist() == out.tolist()  # several: a row each, as above


def test_the_places_are_the_token_layouts_not_the_answers_lengths(tiny_gptj, tokenizer):
    """A unit's place comes from how the model writes numbers (NumberTokens.places): a one-token
    model's units are at the whole number ("number"), a digit model's at the units digit even
    where every answer of the pairs is one digit (one token, as a one-token model's)."""
    correct = correct_table([(a, b) for a in range(0, 60, 3) for b in range(0, 40, 5)])
    pairs = draw_pairs(correct, 16, 0, tokenizer, ADD, ("a", "b"))
    one = place_attribution(PatchingEngine(tiny_gptj, progress=False), pairs)
    assert set(one["place"]) == {"number"} and (one["pairs_with_place"] == len(pairs)).all()
    digits = digit_model("llama", name="d-one-digit", answer_end=None)
    small = correct_table([(a, b) for a in range(10) for b in range(10) if a + b <= 9])
    short = draw_pairs(small, 12, 0, digits.tokenizer, ADD, ("a", "b"), several=True)
    assert set(short.answer_tokens().tolist()) == {1}
    assert set(place_attribution(PatchingEngine(digits, progress=False), short)["place"]) == {"units"}


def test_a_units_places_de_sum_to_the_neurons_de_over_the_answer(several):
    """A write reaches the logits at its own position only: a neuron's DE over every answer
    position is the sum of its units' DEs over the places each pair has."""
    engine, pairs, _ = several
    scores = place_attribution(engine, pairs)
    assert set(scores["place"]) == {"units", "tens", "hundreds"}
    layer, neuron = 2, 7
    units = pd.DataFrame({"place": ["units", "tens", "hundreds"], "rank": 0, "layer": layer, "neuron": neuron})
    de = unit_direct_effects(engine, pairs, units)
    per_unit = de[pair_columns(de)].to_numpy(float)
    k = pairs.answer_tokens().numpy()
    assert (per_unit[2, k < 3] == 0).all() and (per_unit[2, k == 3] != 0).all()  # no hundreds: 0
    whole = direct_effects(engine, pairs, [Point("neuron_post", layer, ("answer",), index=neuron)])[0].numpy()
    assert np.allclose(per_unit.sum(0), whole, atol=1e-5)
    assert np.abs(whole).max() > 1e-4


def test_ablation_with_the_prompts_own_values_changes_nothing(several):
    """Mean ablation's invariants: every neuron kept changes nothing, and "means" equal to each
    prompt's own values change nothing whatever is kept; with the layout means it does change LD."""
    engine, _, correct = several
    prompts = same_forced_pairs(engine.model, correct.iloc[:10], ADD)
    scores = place_attribution(engine, draw_pairs(correct, 12, 0, engine.model.tokenizer, ADD, ("a", "b"),
                                                  several=True, end="."))  # fmt: skip
    sites = [Point("neuron_post", la, ("answer",)) for la in range(engine.adapter.n_layers)]
    own = torch.stack([engine.clean_values(prompts, [p])[p] for p in sites])  # [L, n, K, d]
    raw = place_ablation(engine, prompts, scores, own, [0, 5], readings=("live",))
    ld = raw[raw["measure"] == "ld"][pair_columns(raw)].to_numpy(float)
    assert np.abs(ld).max() < 1e-4
    means = ablation_means(engine, correct, ADD, prompts)
    assert means.shape == own.shape
    m = engine.adapter.d_mlp * engine.adapter.n_layers
    raw = place_ablation(engine, prompts, scores, means, [0, m], readings=("frozen",))
    ld = raw[raw["measure"] == "ld"].set_index("k")[pair_columns(raw)].astype(float)
    assert np.abs(ld.loc[m]).max() < 1e-4 and np.abs(ld.loc[0]).max() > 1e-3


def test_ablation_means_are_the_layouts_means_or_the_places(several, monkeypatch):
    """The ablated value of a prompt at a slot is the mean over the mean prompts of its layout, or,
    where its layout has fewer than MIN_LAYOUT_PROMPTS of them, the mean at its place over all."""
    from helixclock.stages.neurons import places

    engine, _, correct = several
    prompts = same_forced_pairs(engine.model, correct.iloc[:8], ADD)
    ids, groups, order, k = forced_rows(engine.model, correct, ADD)
    site = Point("neuron_post", 1, ("answer",))
    values = engine.collect(ids, [site], logits=False, groups=groups)[0][site].float()  # [m, K, d]
    g = prompts.groups[0]
    K = g.layout.answer_tokens
    same = [h for h in groups if h.layout == g.layout][0]
    assert same.stop - same.start < places.MIN_LAYOUT_PROMPTS  # 24 mean prompts: every layout falls back
    fallback = places.ablation_means(engine, correct, ADD, prompts)
    units = values[np.arange(len(ids)), torch.as_tensor(k - 1)].mean(0)  # each mean prompt's units slot
    assert torch.allclose(fallback[1, g.start, K - 1], units, atol=1e-6)
    monkeypatch.setattr(places, "MIN_LAYOUT_PROMPTS", 1)
    means = places.ablation_means(engine, correct, ADD, prompts)
    assert torch.allclose(means[1, g.start, :K], values[same.start : same.stop].mean(0)[:K], atol=1e-6)


def test_fitted_values_equal_to_the_actual_ones_are_the_actual_run(several):
    """Fig. 9's invariant: give the top units of every place their own N (gate and up) as "fitted"
    values and the fitted variant is the actual one, pair by pair, at every k."""
    from helixclock.stages.neurons.places import place_fit_evaluation

    engine, _, correct = several
    prompts = same_forced_pairs(engine.model, correct.iloc[:10], ADD)
    pairs = draw_pairs(correct, 12, 0, engine.model.tokenizer, ADD, ("a", "b"), several=True, end=".")
    top = top_units(place_attribution(engine, pairs), 3)
    rows = pd.DataFrame({"a": prompts.meta["clean_a"], "b": prompts.meta["clean_b"]}).assign(answer=lambda r: r.a + r.b)
    own = place_grids(engine, rows, ADD, top, ("neuron_pre", "neuron_up"))
    fitted = {"neuron_pre": np.nan_to_num(own["pre"]), "neuron_up": np.nan_to_num(own["up"])}
    means = ablation_means(engine, correct, ADD, prompts)
    raw = place_fit_evaluation(engine, prompts, top, fitted, means, [1, 3])
    ld = raw[raw["measure"] == "ld"]
    cols = pair_columns(raw)
    for k in (1, 3):
        part = ld[ld["k"] == k].set_index("preactivation")[cols].astype(float)
        assert np.allclose(part.loc["actual"], part.loc["fitted"], atol=1e-4)
    other = {kind: v + 1.0 for kind, v in fitted.items()}  # a wrong fit changes the run
    moved = place_fit_evaluation(engine, prompts, top, other, means, [3])
    part = moved[moved["measure"] == "ld"].set_index("preactivation")[cols].astype(float)
    assert np.abs(part.loc["actual"] - part.loc["fitted"]).max() > 1e-3


def test_grids_read_each_unit_at_its_place(several):
    """N(a, b) of a unit is its neuron's value at the position predicting its place's digit, NaN
    where a + b has no such digit."""
    engine, _, _ = several
    grid = correct_table([(a, b) for a in (4, 55, 99) for b in (3, 47, 99)])
    top = pd.DataFrame({"place": ["units", "tens", "hundreds"], "rank": 0, "layer": [0, 1, 2], "neuron": [3, 4, 5]})
    out = place_grids(engine, grid, ADD, top, ("neuron_pre",))
    pre = out["pre"]
    sums = grid["answer"].to_numpy()
    assert np.isnan(pre[1, sums < 10]).all() and np.isfinite(pre[1, sums >= 10]).all()
    assert np.isnan(pre[2, sums < 100]).all() and np.isfinite(pre[0]).all()
    ids, groups, order, k = forced_rows(engine.model, grid, ADD)
    point = Point("neuron_pre", 0, ("answer",))
    values, _ = engine.collect(ids, [point], logits=False, groups=groups)
    units = values[point][np.arange(len(ids)), torch.as_tensor(k - 1), 3].numpy()  # the last slot: units
    assert np.allclose(pre[0, order], units, atol=1e-6)


def test_the_digit_lens_is_the_write_through_the_final_norm(several):
    """The lens of a unit is its output column through the final norm and the unembedding, at the
    digit tokens and the answer's end; its period over the digits is read off its spectrum."""
    engine, _, _ = several
    labels, ids = lens_tokens(engine.model.tokenizer, ".")
    assert labels[-1] == "end" and len(ids) == 11
    top = pd.DataFrame({"layer": [1, 2], "neuron": [0, 9]})
    lens = digit_lens(engine, top, ids)
    w = engine.adapter.neuron_weights(engine.model.hf, 2)[9].float()
    want = engine.adapter.logits_from_final_residual(engine.model.hf, w[None]).float()[0, ids]
    assert np.allclose(lens[1], want.detach().numpy(), atol=1e-5)
    d = np.arange(10)
    planted = np.stack([np.cos(2 * np.pi * d / 5), np.cos(2 * np.pi * d / 2), np.cos(2 * np.pi * d / 10)])
    assert digit_lens_period(planted).tolist() == [5, 2, 10]


def test_a_fitted_period_predicts_the_lens_period_by_place():
    """At the units place T = 2, 5, 10 of a+b predict the same period over the digits; at the tens
    place T = 100 predicts period 10; everything else predicts nothing."""
    got = predicted_digit_period(
        ["units", "units", "units", "units", "tens", "tens", "hundreds"], [2, 5, 10, 100, 100, 10, 100]
    )
    assert np.array_equal(got, [2, 5, 10, np.nan, 10, np.nan, np.nan], equal_nan=True)
    d = np.arange(10)
    lens = np.stack([np.r_[np.cos(2 * np.pi * d / 5), 0], np.r_[np.cos(2 * np.pi * d / 10), 0]])
    neurons = pd.DataFrame(
        {
            "place": ["units", "tens"],
            "layer": [1, 2],
            "neuron": [0, 1],
            "de": [1.0, 1.0],
            "max_post": [1.0, 2.0],
            "max_a": [3, 50],
            "max_b": [4, 60],
            "top_variable": ["a+b", "a+b"],
            "top_period": [5, 100],
        }
    )
    out = digit_lens_tables(neurons, lens, [str(x) for x in d] + ["end"])
    periods = out["logit_lens_periods"]
    assert periods["matches"].tolist() == [True, True] and periods["predicted_period"].tolist() == [5, 10]
    assert out["logit_lens"]["token"].iloc[10] == "end" and len(out["logit_lens"]) == 22


def test_top_units_are_the_first_of_every_place():
    scores = pd.DataFrame(
        {"place": ["units"] * 3 + ["tens"] * 3, "rank": [0, 1, 2] * 2, "layer": 0, "neuron": range(6)}
    )
    assert top_units(scores, 2)["neuron"].tolist() == [0, 1, 3, 4]

"""The neuron stage's model side on tiny models: ablation limits, direct effects, grids."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.families import tiny_hf_model
from helpers.hooks import capture, replace_io
from helpers.prompts import GPTJ_PROMPTS, LAST, make_pairs

from helixclock.models import wrap_model
from helixclock.pairs import same_prompt_pairs
from helixclock.patching import PatchingEngine, Point, attribute, delta, direct_effects
from helixclock.stages.neurons.patching import (
    GATED_PREACTIVATIONS,
    RANKINGS,
    NeuronSettings,
    attribution_scores,
    fitted_name,
    keep_masks,
    mean_activations,
    n_top,
    neuron_ablation,
    neuron_direct_effects,
    powers_of_two,
    preactivation_grids,
    preactivation_kinds,
    preactivation_name,
    rank_neurons,
    sweep_counts,
)
from helixclock.statistics import pair_values

TEMPLATE = GPTJ_PROMPTS["add"]


def prompt_rows(tok, pairs):
    return pd.DataFrame(
        {
            "a": [a for a, _ in pairs],
            "b": [b for _, b in pairs],
            "answer": [a + b for a, b in pairs],
            "answer_token": [tok.convert_tokens_to_ids(str(a + b)) for a, b in pairs],
        }
    )


ROWS = [(3, 4), (12, 57), (99, 0), (41, 41), (7, 80), (60, 39), (25, 25), (8, 9)]


def test_ablating_nothing_is_the_clean_run_and_everything_the_mean_ablated_one(tiny_model):
    tok, ad, hf = tiny_model.tokenizer, tiny_model.adapter, tiny_model.hf
    engine = PatchingEngine(tiny_model, progress=False)
    prompts = same_prompt_pairs(tok, prompt_rows(tok, ROWS), TEMPLATE)
    means = mean_activations(engine, prompts.clean, LAST)
    order = attribution_scores(engine, make_pairs(tiny_model), LAST)
    total = int(means.numel())
    raw = neuron_ablation(engine, prompts, order, means, [0, 3, total], LAST)
    correct = pair_values(raw[raw["measure"] == "correct"])
    ld = pair_values(raw[raw["measure"] == "ld"])
    with torch.no_grad():
        logits = hf(prompts.clean).logits[:, -1]
    clean_correct = (logits.argmax(-1) == prompts.clean_answer).numpy()
    np.testing.assert_array_equal(correct[2], clean_correct)  # all kept: the model itself
    np.testing.assert_allclose(ld[2], 0, atol=1e-5)
    # none kept: every layer's last-token neurons replaced by their means, with plain hooks
    handles = []
    for layer in range(ad.n_layers):

        def put(x, layer=layer):
            y = x.clone()
            y[:, LAST] = means[layer]
            return y

        handles.append(replace_io(hf.get_submodule(ad.site("neuron_post", layer).path), "input", put))
    try:
        with torch.no_grad():
            ablated = hf(prompts.clean).logits[:, -1]
    finally:
        for h in handles:
            h.remove()
    answer = prompts.clean_answer[:, None]
    np.testing.assert_allclose(
        ld[0], (logits.gather(1, answer) - ablated.gather(1, answer))[:, 0].numpy(), atol=1e-4, rtol=1e-4
    )
    np.testing.assert_array_equal(correct[0], (ablated.argmax(-1) == prompts.clean_answer).numpy())
    assert np.abs(ld[0]).max() > 1e-3  # ablating everything changes the answer's logit
    # three kept: exactly the top three of the attribution order keep their values
    keep = keep_masks(order, 3, tuple(means.shape), means.device)
    assert keep.sum() == 3 and all(keep[int(r.layer), int(r.neuron)] for r in order.iloc[:3].itertuples())


def test_neuron_direct_effects_of_a_layer_add_up_to_the_mlp(tokenizer):
    """Every neuron's write is its post-activation times its column of W_out: the writes of all
    neurons of the last layer sum to the MLP's write, and with an identity final norm (the
    logit then linear in the residual) their DEs sum to the MLP's DE."""
    hf = tiny_hf_model("gptj", len(tokenizer), seed=5)
    hf.transformer.ln_f = torch.nn.Identity()
    model = wrap_model(hf, tokenizer, name="linear-readout")
    pairs = make_pairs(model)
    engine = PatchingEngine(model, progress=False)
    last = model.adapter.n_layers - 1
    m = model.adapter.d_mlp
    top = pd.DataFrame({"rank": np.arange(m), "layer": last, "neuron": np.arange(m)})
    de = pair_values(neuron_direct_effects(engine, pairs, top, LAST))  # [m, n]
    mlp = Point("mlp_out", last, (LAST,))
    writes = sum(delta(engine, pairs, Point("neuron_post", last, (LAST,), index=n)) for n in range(m))
    torch.testing.assert_close(writes, delta(engine, pairs, mlp), atol=1e-5, rtol=1e-4)
    mlp_de = direct_effects(engine, pairs, [mlp])[0].numpy()
    assert np.abs(mlp_de).max() > 1e-4
    np.testing.assert_allclose(de.sum(0), mlp_de, atol=1e-5, rtol=1e-4)


def test_grids_are_the_neurons_preactivations(tiny_model):
    tok, ad, hf = tiny_model.tokenizer, tiny_model.adapter, tiny_model.hf
    engine = PatchingEngine(tiny_model, batch_size=3, progress=False)
    rows = prompt_rows(tok, ROWS)
    ids = same_prompt_pairs(tok, rows, TEMPLATE).clean
    top = pd.DataFrame({"rank": [0, 1, 2], "layer": [1, 0, 1], "neuron": [5, 7, 0]})
    out = preactivation_grids(engine, ids, top, LAST)
    for i, r in enumerate(top.itertuples()):
        pre_site, post_site = ad.site("neuron_pre", r.layer), ad.site("neuron_post", r.layer)
        pre = capture(hf, pre_site.path, pre_site.io, ids)[:, LAST, r.neuron]
        post = capture(hf, post_site.path, post_site.io, ids)[:, LAST, r.neuron]
        np.testing.assert_allclose(out["pre"][i], pre.numpy(), atol=1e-5, rtol=1e-5)
        assert (
            np.isclose(out["post_max"][i], post.max().item(), atol=1e-5)
            and out["post_argmax"][i] == post.argmax().item()
        )


def test_top_share_counts_and_sweep_points_are_powers_of_two():
    assert n_top(458752, 0.01) == 4587  # GPT-J: 28 layers x 16,384 neurons
    assert n_top(1024, 0.001) == 1
    assert powers_of_two(20) == [1, 2, 4, 8, 16, 20] and powers_of_two(16) == [1, 2, 4, 8, 16]


def test_fit_evaluation_with_exact_fits_equals_the_actual_run(tiny_gptj):
    """Give the top neurons their true preactivations as "fits": the fitted variant then
    equals the actual one for every k (the nonlinearity of the model recomputes the same
    post-activations)."""
    from helixclock.stages.neurons.patching import fit_evaluation

    tok = tiny_gptj.tokenizer
    engine = PatchingEngine(tiny_gptj, progress=False)
    prompts = same_prompt_pairs(tok, prompt_rows(tok, ROWS), TEMPLATE)
    means = mean_activations(engine, prompts.clean, LAST)
    top = pd.DataFrame({"layer": [1, 0, 1, 0], "neuron": [3, 5, 11, 2]})
    pre = preactivation_grids(engine, prompts.clean, top.assign(rank=range(4)), LAST)["pre"]  # [n_top, n]
    raw = fit_evaluation(engine, prompts, top, torch.tensor(pre.T), means, [1, 2, 4], LAST)
    for measure in ("correct", "ld"):
        part = raw[raw["measure"] == measure]
        values = pair_values(part)
        actual, fitted = values[part["preactivation"] == "actual"], values[part["preactivation"] == "fitted"]
        np.testing.assert_allclose(actual, fitted, atol=1e-5)
    # a wrong fit moves the answer's logit
    raw_bad = fit_evaluation(engine, prompts, top, torch.tensor(pre.T) + 5.0, means, [4], LAST)
    ld = pair_values(raw_bad[raw_bad["measure"] == "ld"])
    assert np.abs(ld[1] - ld[0]).max() > 1e-3


# -- the ranking (paper section 5.4: which neurons are "top") -----------------------------------


def synthetic_scores(per_pair: np.ndarray) -> pd.DataFrame:
    """The attribution table of neurons whose per-pair attributions are the rows of per_pair."""
    n = len(per_pair)
    return pd.DataFrame(
        {
            "layer": 0,
            "neuron": np.arange(n),
            "attribution": per_pair.mean(1),
            "attribution_abs": np.abs(per_pair).mean(1),
        }
    )


def test_the_signed_ranking_drops_the_important_neurons_and_the_size_ranking_keeps_them():
    """Four neurons over eight pairs: a Clock-like neuron that raises the clean answer on half
    the pairs and lowers it on the others (signed mean 0, size 5), one with a large negative
    effect on every pair (-3), and two weak positive ones (+1, +0.5).  Mean-ablating a neuron
    costs what its effect is on each prompt, whatever the sign, so the first two matter most.
    The signed ranking keeps the two weak ones as its top 2 and drops both; ranked by size,
    the top 2 are exactly the important ones (mean |a|: both; |mean a|: the Clock neuron's
    effects cancel, which is why it is not the default)."""
    per_pair = np.array([[5, -5] * 4, [-3] * 8, [1] * 8, [0.5] * 8], dtype=float)
    scores = synthetic_scores(per_pair)
    top2 = {r: set(rank_neurons(scores, r)["neuron"].iloc[:2]) for r in RANKINGS}
    assert top2["signed"] == {2, 3}  # drops neurons 0 and 1
    assert top2["mean_abs"] == {0, 1}
    assert top2["abs_mean"] == {1, 2}
    ranked = rank_neurons(scores, "mean_abs")
    assert ranked["rank"].tolist() == [0, 1, 2, 3] and ranked["effect"].tolist() == [5.0, 3.0, 1.0, 0.5]
    assert ranked["attribution"].tolist() == [0.0, -3.0, 1.0, 0.5]  # the table keeps the signed mean (TE)
    with pytest.raises(ValueError, match="allowed: mean_abs, abs_mean, signed"):
        rank_neurons(scores, "size")


def test_attribution_scores_hold_the_signed_mean_and_the_mean_size(tiny_gptj):
    """One pass gives both reductions; they equal the mean and the mean |.| of the per-pair
    scores, and the ranking sorts by the mean size."""
    engine = PatchingEngine(tiny_gptj, batch_size=3, progress=False)
    pairs = make_pairs(tiny_gptj)
    sites = [Point("neuron_post", layer, (LAST,)) for layer in range(tiny_gptj.adapter.n_layers)]
    per_pair = attribute(engine, pairs, sites, reduce="none")
    both = attribute(engine, pairs, sites, reduce=("mean", "mean_abs"))
    for p in sites:
        torch.testing.assert_close(both["mean"][p], per_pair[p].mean(0), atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(both["mean_abs"][p], per_pair[p].abs().mean(0), atol=1e-6, rtol=1e-5)
    scores = attribution_scores(engine, pairs, LAST)
    table = scores.set_index(["layer", "neuron"])
    for p in sites:
        got = table.loc[p.layer].sort_index()
        np.testing.assert_allclose(got["attribution"], per_pair[p].mean(0)[0].numpy(), atol=1e-5, rtol=1e-4)
        np.testing.assert_allclose(got["attribution_abs"], per_pair[p].abs().mean(0)[0].numpy(), atol=1e-5, rtol=1e-4)
    assert (np.diff(scores["effect"].to_numpy()) <= 0).all()
    assert np.allclose(scores["effect"], scores["attribution_abs"])
    assert (scores["attribution"] < 0).any()  # negative signed scores rank by their size too
    with pytest.raises(ValueError, match="reduce="):
        attribute(engine, pairs, sites, reduce="max")


# -- figD9's two readings ----------------------------------------------------------------------


@pytest.mark.parametrize("family", ["gptj", "llama"])
def test_both_readings_equal_plain_hooks(family, tokenizer):
    """figD9's readings with plain hooks: every last-token neuron not kept set to its mean, the
    kept ones either set to their values in the unablated run (frozen) or left alone (live,
    computed in the ablated run).  Keeping every neuron live is the model itself; keeping none
    is the same under both readings.  (Weights at init scale 0.2, so that the readings differ
    measurably where they can: in a gated MLP the kept neurons' up projections read the
    ablated residual; in these random plain MLPs the difference stays ~1e-7.)"""
    hf = tiny_hf_model(family, len(tokenizer), initializer_range=0.2)
    model = wrap_model(hf, tokenizer, name=f"tiny-{family}")
    ad = model.adapter
    engine = PatchingEngine(model, progress=False)
    prompts = same_prompt_pairs(tokenizer, prompt_rows(tokenizer, ROWS), TEMPLATE)
    means = mean_activations(engine, prompts.clean, LAST)
    L, m = means.shape
    # kept first: five neurons of the last layer, whose inputs the ablation of earlier layers changes
    order = pd.DataFrame(
        {
            "layer": np.r_[np.full(5, L - 1), np.repeat(np.arange(L), m)],
            "neuron": np.r_[np.arange(5), np.tile(np.arange(m), L)],
        }
    ).drop_duplicates()
    total = int(means.numel())
    raw = neuron_ablation(engine, prompts, order, means, [0, 5, total], LAST)
    assert set(raw["reading"]) == {"frozen", "live"} and set(raw["fraction_kept"]) == {0.0, 5 / total, 1.0}
    ld = {r: pair_values(raw[(raw["measure"] == "ld") & (raw["reading"] == r)]) for r in ("frozen", "live")}
    np.testing.assert_allclose(ld["live"][2], 0, atol=1e-5)  # all kept live: the model itself
    np.testing.assert_allclose(ld["frozen"][2], 0, atol=1e-5)
    np.testing.assert_allclose(ld["live"][0], ld["frozen"][0], atol=1e-6)  # none kept: the same run
    keep = keep_masks(order, 5, tuple(means.shape), means.device)
    sites = [ad.site("neuron_post", layer) for layer in range(L)]
    unablated = [capture(hf, site.path, site.io, prompts.clean)[:, LAST] for site in sites]
    with torch.no_grad():
        clean = hf(prompts.clean).logits[:, -1]
    answer = prompts.clean_answer[:, None]
    for reading in ("frozen", "live"):
        handles = []
        for layer, site in enumerate(sites):

            def put(x, layer=layer, reading=reading):
                y = x.clone()
                kept = unablated[layer] if reading == "frozen" else y[:, LAST]
                y[:, LAST] = torch.where(keep[layer], kept, means[layer])
                return y

            handles.append(replace_io(hf.get_submodule(site.path), site.io, put))
        try:
            with torch.no_grad():
                ablated = hf(prompts.clean).logits[:, -1]
        finally:
            for h in handles:
                h.remove()
        expected = (clean.gather(1, answer) - ablated.gather(1, answer))[:, 0].numpy()
        np.testing.assert_allclose(ld[reading][1], expected, atol=1e-4, rtol=1e-4)
    if ad.gated:
        assert np.abs(ld["live"][1] - ld["frozen"][1]).max() > 1e-2  # the readings differ


def test_sweep_counts_include_the_papers_fractions():
    assert sweep_counts(2048) == [1, 2, 4, 8, 16, 20, 32, 41, 64, 102, 128, 205, 256, 410, 512, 1024, 2048]
    assert sweep_counts(10) == [1, 2, 4, 5, 8, 10]


# -- gated MLPs: what N(a, b) is ------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_llama(tokenizer):
    """A random gated-MLP model at init scale 0.2 (so that live and frozen values differ measurably)."""
    return wrap_model(tiny_hf_model("llama", len(tokenizer), initializer_range=0.2), tokenizer, name="tiny-llama")


def test_plain_and_gated_mlps_name_the_preactivations_they_fit(tiny_gptj, tiny_llama):
    for choice in GATED_PREACTIVATIONS:
        assert preactivation_kinds(tiny_gptj.adapter, choice) == ("neuron_pre",)
    assert preactivation_kinds(tiny_llama.adapter, "gate_and_up") == ("neuron_pre", "neuron_up")
    assert preactivation_kinds(tiny_llama.adapter, "gate") == ("neuron_pre",)
    assert preactivation_kinds(tiny_llama.adapter, "product") == ("neuron_post",)
    assert preactivation_name(False) == "preactivation" == fitted_name(False, "product")
    assert preactivation_name(True, "gate_and_up") == preactivation_name(True, "gate") == "gate preactivation"
    assert preactivation_name(True, "product") == "act(gate)·up"
    assert fitted_name(True, "gate_and_up") == "gate and up preactivations"
    assert NeuronSettings().gated_preactivation == "gate_and_up"
    with pytest.raises(ValueError, match="allowed: gate_and_up, gate, product"):
        preactivation_kinds(tiny_llama.adapter, "up")
    with pytest.raises(ValueError, match="neurons.ranking"):
        NeuronSettings(ranking="size")


def test_gated_fit_evaluation_is_exact_under_each_choice_where_it_can_be(tiny_llama):
    """Give the top neurons of a gated MLP their exact values as "fits".  With the gate and the
    up projection both fitted (the model's act(gate)·up then combining them), or with
    act(gate)·up itself, the fitted variant is the actual one for every k.  With the gate
    alone, the up projection stays live in the ablated run, so the "exact" fit still differs
    from the actual values once other neurons are ablated, and equals them only when every
    neuron is kept (nothing ablated)."""
    from helixclock.stages.neurons.patching import fit_evaluation

    tok, ad = tiny_llama.tokenizer, tiny_llama.adapter
    engine = PatchingEngine(tiny_llama, progress=False)
    prompts = same_prompt_pairs(tok, prompt_rows(tok, ROWS), TEMPLATE)
    means = mean_activations(engine, prompts.clean, LAST)
    L, m = means.shape
    top = pd.DataFrame({"layer": np.repeat(np.arange(L)[::-1], m), "neuron": np.tile(np.arange(m), L)})  # last first
    ranked = top.assign(rank=range(len(top)))
    ld = {}
    for choice in GATED_PREACTIVATIONS:
        kinds = preactivation_kinds(ad, choice)
        grids = preactivation_grids(engine, prompts.clean, ranked, LAST, kinds)
        assert ("up" in grids) == (choice == "gate_and_up")
        exact = {kinds[0]: torch.tensor(grids["pre"].T)} | (
            {"neuron_up": torch.tensor(grids["up"].T)} if "up" in grids else {}
        )
        raw = fit_evaluation(engine, prompts, top, exact, means, [4, len(top)], LAST)
        part = raw[raw["measure"] == "ld"]
        values = pair_values(part)
        ld[choice] = (
            values[(part["preactivation"] == "actual").to_numpy()],
            values[(part["preactivation"] == "fitted").to_numpy()],
        )
    for choice in ("gate_and_up", "product"):
        actual, fitted = ld[choice]
        np.testing.assert_allclose(actual, fitted, atol=1e-5)
    actual, fitted = ld["gate"]
    np.testing.assert_allclose(actual[1], fitted[1], atol=1e-5)  # all kept: up is the clean up
    assert np.abs(actual[0] - fitted[0]).max() > 1e-2  # 4 kept: up computed in the ablated run


def test_top_neuron_table_takes_de_over_te_in_the_rankings_terms():
    """A Clock-like neuron whose attributions and DEs both cancel over pairs has signed means
    ~0 and a meaningless ratio of them; its DE/TE is the ratio of the effect sizes the neurons
    are ranked by (mean |.| over pairs by default), and the signed means stay in the table."""
    from helixclock.stages.neurons.tables import cumulative_de, top_neuron_table, top_neurons_paper_table
    from helixclock.statistics import Resampling, raw_table

    attribution = rank_neurons(synthetic_scores(np.array([[5, -5] * 4, [-3] * 8], dtype=float)), "mean_abs")
    attribution = attribution.assign(ranking="mean_abs")
    de_pairs = np.array([[2, -2.0] * 4, [-1.5] * 8])  # rows in rank order: the Clock neuron, the negative one
    raw_de = raw_table(de_pairs, attribution[["rank", "layer", "neuron"]].to_dict("records"))
    fits = pd.DataFrame({"layer": [0, 0], "neuron": [0, 1], "nrmse": [0.1, 0.2], "quantity": "preactivation"})
    table = top_neuron_table(attribution, raw_de, fits, [0], Resampling(bootstrap=50))
    assert table["te"].tolist() == [0.0, -3.0] and table["effect"].tolist() == [5.0, 3.0]
    assert table["de"].tolist() == [0.0, -1.5] and table["de_effect"].tolist() == [2.0, 1.5]
    assert np.allclose(table["de_over_te"], [0.4, 0.5])
    paper = top_neurons_paper_table(table)
    assert "NRMSE of the preactivation fit" in paper.columns and "DE/TE (effects)" in paper.columns
    cum = cumulative_de(table)  # no positive DE (0 and -1.5): no running share, no count reached
    assert cum["cumulative_share"].isna().all() and (cum["reaches"] == "").all()

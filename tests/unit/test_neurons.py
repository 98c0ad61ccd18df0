"""The neuron stage's model side on tiny models whose numbers are one token: its one implementation
(units by place, helixclock.stages.neurons.places) held to section 5.4's definitions, written here
with plain PyTorch hooks at the last token (the paper's neurons): attribution patching of the
answer's logit, the top neurons by mean |score|, mean ablation, direct effects, the preactivation
grids over a, b in 0..99 and Fig. 9's fitted values.  A one-token answer has one place, the whole
number ("number"), read at the last token; each reference below reads the last token, so a
method that read another position fails here (tests/unit/test_neurons_several.py has the digits'
places)."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.families import tiny_hf_model
from helpers.hooks import capture, replace_io
from helpers.prompts import GPTJ_PROMPTS, LAST, add_prompt_ids, make_pairs

from helixclock.causal.pairs import same_forced_pairs
from helixclock.lm.models import wrap_model
from helixclock.patching import PatchingEngine, Point, delta, direct_effects
from helixclock.stages.neurons.patching import (
    GATED_PREACTIVATIONS,
    RANKINGS,
    NeuronSettings,
    fitted_name,
    n_top,
    powers_of_two,
    preactivation_kinds,
    preactivation_name,
    rank_neurons,
    sweep_counts,
)
from helixclock.stages.neurons.places import (
    ablation_means,
    place_ablation,
    place_attribution,
    place_fit_evaluation,
    place_grids,
    top_units,
    unit_direct_effects,
)
from helixclock.stats.statistics import pair_values

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


def units(layer, neuron) -> pd.DataFrame:
    """Top units of a one-token model (place "number"), ranked in the given order."""
    layer, neuron = np.broadcast_arrays(layer, neuron)
    return pd.DataFrame({"place": "number", "rank": np.arange(len(layer)), "layer": layer, "neuron": neuron})


def last_token_means(model, rows) -> list[torch.Tensor]:
    """The paper's ablation values: each layer's mean last-token post-activation over ``rows``."""
    ad, hf = model.adapter, model.hf
    ids = add_prompt_ids(model.tokenizer, list(zip(rows["a"], rows["b"])))
    sites = [ad.site("neuron_post", layer) for layer in range(ad.n_layers)]
    return [capture(hf, site.path, site.io, ids)[:, LAST].mean(0) for site in sites]


def test_one_token_prompts_are_the_papers_prompts_in_their_order(tiny_gptj):
    """The ablations' prompts of a one-token model: each a+b prompt as the paper runs it (no
    answer token after it), in the rows' order, scored by the answer's logit at the last token."""
    tok = tiny_gptj.tokenizer
    rows = prompt_rows(tok, ROWS)
    prompts = same_forced_pairs(tiny_gptj, rows, TEMPLATE)
    assert torch.equal(prompts.clean, add_prompt_ids(tok, ROWS)) and prompts.scoring == "logit"
    assert prompts.answers[:, 0].tolist() == rows["answer_token"].tolist() and prompts.answers.shape[1] == 1
    assert prompts.meta["clean_a"].tolist() == rows["a"].tolist() and prompts.answer_tokens().tolist() == [1] * 8


def test_ablating_nothing_is_the_clean_run_and_everything_the_mean_ablated_one(tiny_model):
    tok, ad, hf = tiny_model.tokenizer, tiny_model.adapter, tiny_model.hf
    engine = PatchingEngine(tiny_model, progress=False)
    rows = prompt_rows(tok, ROWS)
    prompts = same_forced_pairs(tiny_model, rows, TEMPLATE)
    means = ablation_means(engine, rows, TEMPLATE, prompts)
    want = last_token_means(tiny_model, rows)
    assert means.shape == (ad.n_layers, 1, 1, ad.d_mlp)  # one row and slot for every prompt
    for layer in range(ad.n_layers):
        torch.testing.assert_close(means[layer, 0, 0], want[layer], atol=1e-6, rtol=1e-5)
    order = place_attribution(engine, make_pairs(tiny_model))
    total = ad.n_layers * ad.d_mlp
    raw = place_ablation(engine, prompts, order, means, [0, 3, total])
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
            y[:, LAST] = want[layer]
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
    assert set(raw["fraction_kept"]) == {0.0, 3 / total, 1.0}


def test_neuron_direct_effects_of_a_layer_add_up_to_the_mlp(tokenizer):
    """Every neuron's write is its post-activation times its column of W_out: the writes of all
    neurons of the last layer sum to the MLP's write, and with an identity final norm (the
    logit then linear in the residual) the DEs of their units (place "number": the last token)
    sum to the MLP's DE at the last token."""
    hf = tiny_hf_model("gptj", len(tokenizer), seed=5)
    hf.transformer.ln_f = torch.nn.Identity()
    model = wrap_model(hf, tokenizer, name="linear-readout")
    pairs = make_pairs(model)
    engine = PatchingEngine(model, progress=False)
    last = model.adapter.n_layers - 1
    m = model.adapter.d_mlp
    de = pair_values(unit_direct_effects(engine, pairs, units(last, np.arange(m))))  # [m, n]
    mlp = Point("mlp_out", last, (LAST,))
    writes = sum(delta(engine, pairs, Point("neuron_post", last, (LAST,), index=n)) for n in range(m))
    torch.testing.assert_close(writes, delta(engine, pairs, mlp), atol=1e-5, rtol=1e-4)
    mlp_de = direct_effects(engine, pairs, [mlp])[0].numpy()
    assert np.abs(mlp_de).max() > 1e-4
    np.testing.assert_allclose(de.sum(0), mlp_de, atol=1e-5, rtol=1e-4)
    one = direct_effects(engine, pairs, [Point("neuron_post", last, (LAST,), index=3)])[0].numpy()
    np.testing.assert_allclose(de[3], one, atol=1e-6)  # a unit's DE: its neuron's at the last token


def test_grids_are_the_neurons_preactivations(tiny_model):
    tok, ad, hf = tiny_model.tokenizer, tiny_model.adapter, tiny_model.hf
    engine = PatchingEngine(tiny_model, batch_size=3, progress=False)
    rows = prompt_rows(tok, ROWS)
    ids = add_prompt_ids(tok, ROWS)
    top = units([1, 0, 1], [5, 7, 0])
    out = place_grids(engine, rows, TEMPLATE, top, ("neuron_pre",))
    for i, r in enumerate(top.itertuples()):
        pre_site, post_site = ad.site("neuron_pre", r.layer), ad.site("neuron_post", r.layer)
        pre = capture(hf, pre_site.path, pre_site.io, ids)[:, LAST, r.neuron]
        post = capture(hf, post_site.path, post_site.io, ids)[:, LAST, r.neuron]
        np.testing.assert_allclose(out["pre"][i], pre.numpy(), atol=1e-5, rtol=1e-5)
        assert (
            np.isclose(out["post_max"][i], post.max().item(), atol=1e-5)
            and out["post_argmax"][i] == post.argmax().item()
        )
    before = capture(hf, ad.site("neuron_pre", 1).path, ad.site("neuron_pre", 1).io, ids)[:, LAST - 1, 5]
    assert not np.allclose(out["pre"][0], before.numpy(), atol=1e-3)  # another position reads otherwise


def test_top_share_counts_and_sweep_points_are_powers_of_two():
    assert n_top(458752, 0.01) == 4587  # GPT-J: 28 layers x 16,384 neurons
    assert n_top(1024, 0.001) == 1
    assert powers_of_two(20) == [1, 2, 4, 8, 16, 20] and powers_of_two(16) == [1, 2, 4, 8, 16]


def test_fit_evaluation_with_exact_fits_equals_the_actual_run(tiny_gptj):
    """Give the top neurons their true preactivations as "fits": the fitted variant then
    equals the actual one for every k (the nonlinearity of the model recomputes the same
    post-activations)."""
    tok = tiny_gptj.tokenizer
    engine = PatchingEngine(tiny_gptj, progress=False)
    rows = prompt_rows(tok, ROWS)
    prompts = same_forced_pairs(tiny_gptj, rows, TEMPLATE)
    means = ablation_means(engine, rows, TEMPLATE, prompts)
    top = units([1, 0, 1, 0], [3, 5, 11, 2])
    pre = place_grids(engine, rows, TEMPLATE, top, ("neuron_pre",))["pre"]  # [n_top, n]
    raw = place_fit_evaluation(engine, prompts, top, {"neuron_pre": pre}, means, [1, 2, 4])
    for measure in ("correct", "ld"):
        part = raw[raw["measure"] == measure]
        values = pair_values(part)
        actual, fitted = values[part["preactivation"] == "actual"], values[part["preactivation"] == "fitted"]
        np.testing.assert_allclose(actual, fitted, atol=1e-5)
    # a wrong fit moves the answer's logit
    raw_bad = place_fit_evaluation(engine, prompts, top, {"neuron_pre": pre + 5.0}, means, [4])
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


def paper_attribution(model, pairs, position: int = LAST) -> np.ndarray:
    """Section 5.4's attribution patching with plain hooks: for each pair and neuron, the gradient
    of the corrupted run's logit of the clean answer with respect to the neuron's post-activation
    at ``position``, times its clean minus corrupted value there: [n_pairs, L, d_mlp]."""
    ad, hf = model.adapter, model.hf
    sites = [ad.site("neuron_post", layer) for layer in range(ad.n_layers)]
    clean = [capture(hf, site.path, site.io, pairs.clean)[:, position] for site in sites]
    got, handles = {}, []
    for layer, site in enumerate(sites):

        def keep(x, layer=layer):
            x.retain_grad()
            got[layer] = x
            return x

        handles.append(replace_io(hf.get_submodule(site.path), site.io, keep))
    embed = hf.get_input_embeddings()  # the graph starts at the embeddings (the weights are frozen)
    handles.append(embed.register_forward_hook(lambda mod, args, out: out.detach().requires_grad_(True)))
    try:
        logits = hf(pairs.corrupted).logits[:, -1]
        logits.gather(1, pairs.clean_answer[:, None]).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return torch.stack(
        [got[la].grad[:, position] * (clean[la] - got[la].detach()[:, position]) for la in range(ad.n_layers)], 1
    ).numpy()


def test_attribution_is_the_papers_at_the_last_token_and_ranks_by_the_mean_size(tiny_gptj):
    """A one-token model's units are its last-token neurons (one place, "number", every pair
    having it): their attribution is the mean over pairs of section 5.4's attribution patching
    (with plain hooks, :func:`paper_attribution`) and its mean size, ranked by the size; the top
    neurons are the first of that ranking.  Read at the position before, the scores differ."""
    engine = PatchingEngine(tiny_gptj, batch_size=3, progress=False)
    pairs = make_pairs(tiny_gptj)
    scores = place_attribution(engine, pairs)
    assert set(scores["place"]) == {"number"} and (scores["pairs_with_place"] == len(pairs)).all()
    per_pair = paper_attribution(tiny_gptj, pairs)  # [n, L, d]
    table = scores.set_index(["layer", "neuron"]).sort_index()
    np.testing.assert_allclose(table["attribution"], per_pair.mean(0).ravel(), atol=1e-6, rtol=1e-4)
    np.testing.assert_allclose(table["attribution_abs"], np.abs(per_pair).mean(0).ravel(), atol=1e-6, rtol=1e-4)
    assert (np.diff(scores["effect"].to_numpy()) <= 0).all() and scores["rank"].tolist() == list(range(len(scores)))
    assert np.allclose(scores["effect"], scores["attribution_abs"])
    assert (scores["attribution"] < 0).any()  # negative signed scores rank by their size too
    wanted = np.argsort(-np.abs(per_pair).mean(0).ravel(), kind="stable")[:5]
    top = top_units(scores, 5)
    assert (top["layer"] * tiny_gptj.adapter.d_mlp + top["neuron"]).tolist() == wanted.tolist()
    elsewhere = paper_attribution(tiny_gptj, pairs, LAST - 1)
    assert not np.allclose(table["attribution_abs"], np.abs(elsewhere).mean(0).ravel(), atol=1e-4)


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
    rows = prompt_rows(tokenizer, ROWS)
    prompts = same_forced_pairs(model, rows, TEMPLATE)
    means = ablation_means(engine, rows, TEMPLATE, prompts)  # [L, 1, 1, d]: the last token's, every prompt's
    L, m = means.shape[0], means.shape[-1]
    # kept first: five neurons of the last layer, whose inputs the ablation of earlier layers changes
    order = units(np.r_[np.full(5, L - 1), np.repeat(np.arange(L), m)], np.r_[np.arange(5), np.tile(np.arange(m), L)])
    order = order.drop_duplicates(["layer", "neuron"]).assign(rank=lambda o: np.arange(len(o)))
    total = L * m
    raw = place_ablation(engine, prompts, order, means, [0, 5, total])
    assert set(raw["reading"]) == {"frozen", "live"} and set(raw["fraction_kept"]) == {0.0, 5 / total, 1.0}
    ld = {r: pair_values(raw[(raw["measure"] == "ld") & (raw["reading"] == r)]) for r in ("frozen", "live")}
    np.testing.assert_allclose(ld["live"][2], 0, atol=1e-5)  # all kept live: the model itself
    np.testing.assert_allclose(ld["frozen"][2], 0, atol=1e-5)
    np.testing.assert_allclose(ld["live"][0], ld["frozen"][0], atol=1e-6)  # none kept: the same run
    keep = torch.zeros(L, m, dtype=torch.bool)
    keep[L - 1, :5] = True
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
                y[:, LAST] = torch.where(keep[layer], kept, means[layer, 0, 0])
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
    tok, ad = tiny_llama.tokenizer, tiny_llama.adapter
    engine = PatchingEngine(tiny_llama, progress=False)
    rows = prompt_rows(tok, ROWS)
    prompts = same_forced_pairs(tiny_llama, rows, TEMPLATE)
    means = ablation_means(engine, rows, TEMPLATE, prompts)
    L, m = means.shape[0], means.shape[-1]
    top = units(np.repeat(np.arange(L)[::-1], m), np.tile(np.arange(m), L))  # last layer first
    ld = {}
    for choice in GATED_PREACTIVATIONS:
        kinds = preactivation_kinds(ad, choice)
        grids = place_grids(engine, rows, TEMPLATE, top, kinds)
        assert ("up" in grids) == (choice == "gate_and_up")
        exact = {kinds[0]: grids["pre"]} | ({"neuron_up": grids["up"]} if "up" in grids else {})
        raw = place_fit_evaluation(engine, prompts, top, exact, means, [4, len(top)])
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
    from helixclock.stats.statistics import Resampling, raw_table

    attribution = rank_neurons(synthetic_scores(np.array([[5, -5] * 4, [-3] * 8], dtype=float)), "mean_abs")
    attribution = attribution.assign(ranking="mean_abs")
    attribution.insert(0, "place", "number")  # a one-token model's units: one place
    de_pairs = np.array([[2, -2.0] * 4, [-1.5] * 8])  # rows in rank order: the Clock neuron, the negative one
    raw_de = raw_table(de_pairs, attribution[["place", "rank", "layer", "neuron"]].to_dict("records"))
    fits = pd.DataFrame(
        {"layer": [0, 0], "neuron": [0, 1], "place": "number", "nrmse": [0.1, 0.2], "quantity": "preactivation"}
    )
    table = top_neuron_table(attribution, raw_de, fits, [0], Resampling(bootstrap=50))
    assert table["te"].tolist() == [0.0, -3.0] and table["effect"].tolist() == [5.0, 3.0]
    assert table["de"].tolist() == [0.0, -1.5] and table["de_effect"].tolist() == [2.0, 1.5]
    assert np.allclose(table["de_over_te"], [0.4, 0.5])
    paper = top_neurons_paper_table(table)
    assert "NRMSE of the preactivation fit" in paper.columns and "DE/TE (effects)" in paper.columns
    assert "place" not in paper.columns  # one place: Table D2 reads as the paper's neurons
    digits = pd.concat([table.assign(place="units"), table.assign(place="tens")], ignore_index=True)
    assert top_neurons_paper_table(digits)["place"].tolist() == ["units", "units", "tens", "tens"]
    cum = cumulative_de(table)  # no positive DE (0 and -1.5): no running share, no count reached
    assert cum["cumulative_share"].isna().all() and (cum["reaches"] == "").all()

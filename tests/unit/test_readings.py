"""One implementation of the last-token stages whatever the tokenizer (issue 52): on the paper's
case, numbers of one token, it is the paper's definitions (sections 5.1-5.3), and the readings of a
model whose numbers may take several tokens reduce to the paper's on one-token answers (issue 46
item 5); the answer positions of a draw whose answers are shorter than the longest correct
prompt's (item 6).

"A one-token answer keeps the paper's LD" needs every pair of the set to read one position: a set
of one-token answers and no end token is scored by the paper's logit difference
(helixclock.causal.pairs.draw_pairs), and then every reading - the heads' and the MLPs', Figs. 5 and 6 at
the answer positions and at the first differing token - must give the tables of the paper's one
reading.  One pair of several tokens in the set scores every pair by log-probability (the set's
``scoring``), and the reduction does not hold (nor is it claimed)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.digit_models import digit_engine, digit_model
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table

from helixclock.causal.experiments import answer_position_fits, answer_residuals
from helixclock.causal.first_difference import first_difference_pairs
from helixclock.causal.pairs import draw_pairs, forced_rows, prompt_ids
from helixclock.fitting.bases import SUM, Basis, clock_bases, sum_values
from helixclock.fitting.fits import fit_token
from helixclock.lm.config import ConfigError
from helixclock.lm.models import wrap_model
from helixclock.patching import Patch, PatchingEngine, Point, direct_effects
from helixclock.stages.heads.jobs import head_patching
from helixclock.stages.heads.patching import HeadSettings
from helixclock.stages.last_token.patching import (
    answer_position_curves,
    best_block_sweep,
    first_difference_curves,
    last_token_curves,
    layer_effects,
)
from helixclock.stages.mlps.patching import mlp_patching
from helixclock.stages.structure.number_bases import check_registry_layers
from helixclock.stats.strata import STRATA

ADD = GPTJ_PROMPTS["add"]
HEADS = HeadSettings(top_heads=4, mixed_heads=1, periods=(2, 10), pca_components=8)
TOL = {"rtol": 1e-4, "atol": 1e-5}  # the several-token engine skips the positions before the last (float rounding)


@pytest.fixture(scope="module")
def one_token():
    """One digit-tokenised Llama wrapped twice, on sums of one digit and no end token (every pair
    reads one position, the paper's LD): as a model whose numbers may take several tokens (its
    registry's switch: three readings) and as one whose numbers are one token (the paper's: the
    last token alone), with the correct prompts (``answer_token``: the answer's one token)."""
    several = digit_model("llama", name="d-one", answer_end=None)
    paper = wrap_model(several.hf, several.tokenizer, name="d-paper", family="llama")
    assert several.tokens.readings == ("last", "answer", "differ") and paper.tokens.readings == ("last",)
    correct = correct_table([(a, b) for a in range(10) for b in range(10) if a + b <= 9])
    correct["answer_token"] = [several.tokenizer.convert_tokens_to_ids(str(n)) for n in correct["answer"]]
    return several, paper, correct


def pairs_of(model, correct):
    several = model.tokens.several
    pairs = draw_pairs(correct, 16, 0, model.tokenizer, ADD, ("a", "b"), several=several)
    assert pairs.scoring == "logit" and len(pairs.groups) == 1
    return pairs


SEVERAL_ONLY = ("screen", "listed", "p_value")  # whose list a head came from; the screen at p*'s test (issue 54)


def same(got: pd.DataFrame, want: pd.DataFrame, name: str) -> None:
    drop = lambda t: t.drop(columns=[c for c in ("reading", *STRATA, *SEVERAL_ONLY) if c in t]).reset_index(drop=True)  # noqa: E731
    got, want = drop(got), drop(want)
    assert sorted(got.columns) == sorted(want.columns), name
    pd.testing.assert_frame_equal(got[list(want.columns)], want, check_dtype=False, **TOL)


def reading(table: pd.DataFrame, name: str) -> pd.DataFrame:
    return table[table["reading"] == name]


def test_the_heads_one_path_is_the_papers_definition_on_one_token_numbers(one_token):
    """Section 5.2's definitions on the paper's case (numbers of one token, one reading): each
    head's TE is the LD of patching its clean output at the last token (integer position, as the
    engine's hook-tested run does it), its DE the direct path of that output to the logits, its
    helix(a,b,a+b) fit the fit of its outputs at the last token over the fitted prompts patched
    in at the pairs' clean a+b; Fig. D6's attention is the attention weights from the last token.
    The same heads read at b's position (a plausible wrong reading) give other TEs."""
    _, paper, correct = one_token
    sample = correct.iloc[:40]
    pairs = pairs_of(paper, correct)
    out = head_patching(PatchingEngine(paper, progress=False), pairs, sample, ADD, HEADS)
    for name in ("screen", "effects", "fits", "topk", "mixed", "paths", "categories"):
        assert set(out[name]["reading"]) == {"last token"}, name
    effects = out["effects"]
    heads = effects[effects["effect"] == "te"][["layer", "head"]].to_numpy()
    last = pairs.groups[0].layout.length - 1
    engine = PatchingEngine(paper, progress=False)
    points = [Point("head_out", int(la), (last,), index=int(h)) for la, h in heads]
    te = engine.run(pairs, [[Patch(p)] for p in points]).metric.numpy()
    de = direct_effects(engine, pairs, points).numpy()
    cols = [c for c in effects.columns if c.startswith("pair_")]
    np.testing.assert_allclose(effects[effects["effect"] == "te"][cols].to_numpy(), te, **TOL)
    np.testing.assert_allclose(effects[effects["effect"] == "de"][cols].to_numpy(), de, **TOL)
    # the helix(a,b,a+b) fit of each head's output at the last token, patched in
    ids = prompt_ids(paper.tokenizer, ADD, sample)
    sites = [Point("head_out", layer, (last,)) for layer in range(paper.adapter.n_layers)]
    values, _ = engine.collect(ids, sites, logits=False)
    H = torch.stack([values[p][:, 0] for p in sites], 1)  # [n, L, H, dh]
    H = H.reshape(len(sample), -1, paper.adapter.d_head).transpose(0, 1).float()
    helix_all = clock_bases(HEADS.periods)[0]
    fits = fit_token(
        H, sum_values(sample["a"].to_numpy(), sample["b"].to_numpy()), [helix_all], HEADS.pca_components, dedupe=False
    )
    clean = sum_values(pairs.meta["clean_a"], pairs.meta["clean_b"])
    n_heads = paper.adapter.n_heads
    variants = [
        [Patch(p, fits.predict(helix_all, clean, layers=[p.layer * n_heads + p.index])[0][:, None])] for p in points
    ]
    fitted = out["fits"][out["fits"]["fit"] == "helix(a,b,a+b)"]
    np.testing.assert_allclose(fitted[cols].to_numpy(), engine.run(pairs, variants).metric.numpy(), **TOL)
    # the wrong reading: the same heads at b's position
    at_b = [Point("head_out", p.layer, (last - 1,), index=p.index) for p in points]
    assert np.abs(engine.run(pairs, [[Patch(p)] for p in at_b]).metric.numpy() - te).max() > 1e-2
    # Fig. D6: the mean attention from the last token to a, b and itself over the fitted prompts
    layout = forced_rows(paper, sample, ADD)[1][0].layout
    keys = {"a": layout.resolve("a")[0], "b": layout.resolve("b")[0], "last": last}
    with torch.no_grad():
        paper.hf.set_attn_implementation("eager")
        att = torch.stack(paper.hf.base_model(ids, output_attentions=True).attentions)[:, :, :, last]  # [L, n, H, S]
        paper.hf.set_attn_implementation(paper.attn_implementation)
    attention = out["attention"].query("position == 0")
    for key, pos in keys.items():
        np.testing.assert_allclose(
            attention[f"attn_{key}"], att[..., pos].mean(1).reshape(-1).numpy(), rtol=1e-4, atol=1e-6
        )


def test_the_heads_readings_reduce_to_the_last_token_on_one_token_answers(one_token):
    """A model whose numbers may take several tokens, on answers of one token: each of its three
    readings (the last token, the answer positions, the first differing token: p* is the last
    token) gives the paper's tables, those of the same weights read as a one-token model."""
    several, paper, correct = one_token
    sample = correct.iloc[:40]
    got = head_patching(PatchingEngine(several, progress=False), pairs_of(several, correct), sample, ADD, HEADS)
    want = head_patching(PatchingEngine(paper, progress=False), pairs_of(paper, correct), sample, ADD, HEADS)
    for name in ("screen", "effects", "fits", "topk", "mixed", "paths", "categories"):
        for r in ("last token", "answer positions"):
            same(reading(got[name], r), want[name], f"{name} at {r}")
    for name in ("effects", "fits"):
        at = reading(got[name], "first differing token")
        assert (at["answer_tokens"] == 1).all() and (at["p_star"] == 0).all()
        paper_rows = want[name] if name == "effects" else want[name].query("fit == 'helix(a,b,a+b)'")  # Fig. D4's fit
        same(at, paper_rows, f"{name} at the first differing token")
    # the screen at p* (p* is the last token): the last token's attribution, every head already measured
    at = reading(got["screen"], "first differing token")
    same(at.drop(columns="screened"), want["screen"].drop(columns="screened"), "screen at the first differing token")
    assert at["screened"].all()  # no screen at the last token: every head measured at p* too
    same(got["attention"], want["attention"], "attention")


def test_the_mlps_and_figs_5_and_6_reduce_to_the_papers_on_one_token_answers(one_token):
    """Figs. 5 and 6 and the MLP stage of a model whose numbers may take several tokens, on
    answers of one token: every reading gives the tables of the same weights read as a one-token
    model (the paper's last token alone); and the one-token MLP fits are the paper's definition,
    helix(a+b) fitted to each MLP's output at the last token and patched in."""
    several, paper, correct = one_token
    engine = PatchingEngine(several, progress=False)
    pairs = pairs_of(several, correct)
    L = engine.adapter.n_layers
    paper_engine, paper_pairs = PatchingEngine(paper, progress=False), pairs_of(paper, correct)
    paper_effects = layer_effects(paper_engine, paper_pairs)
    differ = first_difference_pairs(pairs)
    assert differ.pairs is pairs and differ.strata() == [(1, 0)]
    effects = {
        "last token": layer_effects(engine, pairs, "last"),
        "answer positions": layer_effects(engine, pairs, "answer"),
        "first differing token": differ.table(layer_effects(engine, differ.pairs, "last")),
    }
    for r, table in effects.items():
        same(table, paper_effects, f"Fig. 6 at {r}")
    # Fig. 5: the paper's fits of the residual cache's last token against the answer positions'
    fitted = correct.iloc[:45]
    residuals, ab, k = answer_residuals(engine, fitted, ADD)
    cache = SimpleNamespace(last=torch.stack([r[:, 0] for r in residuals], 1).numpy(), ab=ab, attrs={"n_layers": L})
    paper_fits = last_token_curves(paper_engine, paper_pairs, cache, (2, 10), 32)
    answer = answer_position_curves(engine, pairs, residuals, ab, k, (2, 10), 32)
    same(answer, paper_fits, "Fig. 5 at the answer positions")
    fits = answer_position_fits(torch.stack(residuals), ab, k, clock_bases((2, 10)), 32)
    same(first_difference_curves(engine, differ, fits, (2, 10), range(L + 1)), paper_fits, "Fig. 5 at p*")
    # the MLP stage: every reading of the several-token model against the one-token model's one
    raw = pd.concat([t.assign(reading=r) for r, t in effects.items()], ignore_index=True)
    got = mlp_patching(engine, pairs, fitted, ADD, raw, (2, 10), 8)
    want = mlp_patching(paper_engine, paper_pairs, fitted, ADD, paper_effects.assign(reading="last token"), (2, 10), 8)
    assert set(want["fits"]["reading"]) == {"last token"}
    for name in ("effects", "topk", "fits"):
        for r in ("last token", "answer positions"):
            same(reading(got[name], r), want[name], f"MLP {name} at {r}")
    for name in ("effects", "fits"):
        same(reading(got[name], "first differing token"), want[name], f"MLP {name} at p*")
    # the paper's definition: each MLP's output at the last token, helix(a+b) fitted and patched in
    last = paper_pairs.groups[0].layout.length - 1
    ids = prompt_ids(paper.tokenizer, ADD, fitted)
    sites = [Point("mlp_out", layer, (last,)) for layer in range(L)]
    values, _ = paper_engine.collect(ids, sites, logits=False)
    basis = Basis("helix", (2, 10), variables=(SUM,))
    H = torch.stack([values[p][:, 0] for p in sites]).float()
    helix = fit_token(H, sum_values(fitted["a"].to_numpy(), fitted["b"].to_numpy()), [basis], 8, dedupe=False)
    pred = helix.predict(basis, sum_values(paper_pairs.meta["clean_a"], paper_pairs.meta["clean_b"]))
    ld = paper_engine.run(paper_pairs, [[Patch(p, pred[i][:, None])] for i, p in enumerate(sites)]).metric.numpy()
    cols = [c for c in want["fits"].columns if c.startswith("pair_")]
    np.testing.assert_allclose(want["fits"][cols].to_numpy(), ld, **TOL)
    np.testing.assert_allclose(want["fits"]["r2_helix_sum"], helix.r2[0].numpy(), rtol=1e-5)
    wrong = paper_engine.run(paper_pairs, [[Patch(p, pred[i][:, None])] for i, p in enumerate(sites[::-1])]).metric
    assert np.abs(wrong.numpy() - ld).max() > 1e-3  # each MLP's fit patched into another MLP: not the table


def test_the_best_block_is_swept_on_the_selection_draw_as_fig5s_layer_patch(one_token):
    """fits_selection (what Fig. 5's best block is chosen by, README "Findings"): on a draw, the
    layer patch of every block at the last token and, where numbers may take several tokens, at
    the answer positions, equal to Fig. 5's own layer-patch rows on the same pairs; the paper's
    one-token model has the last token only, and no draw gives the labels and no rows."""
    several, paper, correct = one_token
    engine = PatchingEngine(several, progress=False)
    pairs = pairs_of(several, correct)
    residuals, ab, k = answer_residuals(engine, correct.iloc[:45], ADD)
    L = engine.adapter.n_layers
    cache = SimpleNamespace(last=torch.stack([r[:, 0] for r in residuals], 1).numpy(), ab=ab, attrs={"n_layers": L})
    fits = last_token_curves(engine, pairs, cache, (2, 10), 32)
    chosen_on = best_block_sweep(engine, pairs, 1, fits)
    assert set(chosen_on["reading"]) == {"last token", "answer positions"}
    layer_patch = fits[fits["fit"] == "layer patch"]
    same(reading(chosen_on, "last token"), layer_patch, "layer patch at the last token")
    answer = answer_position_curves(engine, pairs, residuals, ab, k, (2, 10), 32)
    same(reading(chosen_on, "answer positions"), answer[answer["fit"] == "layer patch"], "at the answer positions")
    paper_engine = PatchingEngine(paper, progress=False)
    assert set(best_block_sweep(paper_engine, pairs_of(paper, correct), 1, fits)["reading"]) == {"last token"}
    assert best_block_sweep(engine, None, 1, fits).empty


def test_a_draw_without_three_digit_answers_reads_every_answer_position():
    """Role "answer" is as wide as the most answer tokens among all correct prompts (here 3: 88 +
    56 = 144), a draw may have none so long (clean a <= 12: two-digit answers at most): the
    heads' and the MLPs' fits at the answer positions still patch every position of the role
    (the padding repeats the first position), and no table loses a reading."""
    engine, pairs, correct = digit_engine("llama", layers=2, name="d-short", n_pairs=8, clean_a=(3, 7, 12))
    assert int(pairs.answer_tokens().max()) == 2 and len(pairs.groups[0].layout.resolve("answer")) == 3
    heads = head_patching(engine, pairs, correct, ADD, HEADS)
    assert set(heads["fits"]["reading"]) == {"last token", "answer positions", "first differing token"}
    rows = [
        layer_effects(engine, pairs, p).assign(reading=r)
        for p, r in (("last", "last token"), ("answer", "answer positions"))
    ]
    mlps = mlp_patching(engine, pairs, correct, ADD, pd.concat(rows, ignore_index=True), (2, 10), 8)
    assert set(mlps["fits"]["reading"]) == {"last token", "answer positions", "first differing token"}
    # at the answer positions the padded third position repeats the first: as if it were not there
    point = Point("mlp_out", 1, ("answer",))
    assert len(engine.positions(point, 0, pairs.groups[0].layout)) == 3


def test_the_registry_sets_the_figure_layers_by_the_rule():
    """A several-token model's registry sets structure.layer and helix.figure_layer by the layer
    rule (number_bases_layer.csv); number_bases checks them against the rule's layer: equal
    passes, another value (or a value where the rule names no layer) is an error naming the key,
    and an entry that sets neither passes."""
    rule = pd.DataFrame([{"share": 0.5, "layer": 5, "gain": 0.17}])
    check_registry_layers(rule, {"structure": {"layer": 5}, "helix": {"figure_layer": 5, "n_pairs": 50}}, "m")
    check_registry_layers(rule, {"helix": {"n_pairs": 50}}, "m")
    check_registry_layers(rule, None, "m")
    with pytest.raises(ConfigError, match=r"'m\.helix\.figure_layer': value 4.*resid_pre\[5\]"):
        check_registry_layers(rule, {"structure": {"layer": 5}, "helix": {"figure_layer": 4}}, "m")
    with pytest.raises(ConfigError, match="nowhere"):
        check_registry_layers(rule.assign(layer=np.nan), {"structure": {"layer": 1}}, "m")


def test_a_one_token_models_strata_are_the_papers_te_and_de_in_one_stratum():
    """The strata of a raw TE/DE table of the paper's answers (one reading, the last token, scored
    by the logit difference, no first differing token's rows): one stratum, one answer token and
    p* the last token, whose TE and DE are the paper's (te_de_table of the same rows).  A table of
    answers of several tokens (LD by term) without the first differing token's rows has no strata
    to cut to: no row, rather than that one stratum."""
    from helixclock.stats.statistics import Resampling, te_de_table
    from helixclock.stats.strata import strata_table

    rng = np.random.default_rng(0)
    labels = pd.DataFrame({"component": ["MLP", "MLP", "attn", "attn"], "layer": 0, "effect": ["te", "de"] * 2})
    pairs = pd.DataFrame(rng.normal(1.0, 0.5, (4, 12)), columns=[f"pair_{i}" for i in range(12)])
    raw = pd.concat([labels.assign(reading="last token"), pairs], axis=1)
    resampling = Resampling(bootstrap=200, seed=0)
    got = strata_table(raw, resampling)
    assert got[["reading", "answer_tokens", "p_star"]].drop_duplicates().values.tolist() == [["last token", 1, 0]]
    want = te_de_table(raw.drop(columns="reading"), resampling)
    for col in ("te", "te_low", "te_high", "de", "de_low", "de_high"):
        np.testing.assert_allclose(got[col].to_numpy(float), want[col].to_numpy(float), rtol=1e-12)
    several = pd.concat([labels.assign(reading="last token", term="ld"), pairs], axis=1)
    assert strata_table(several, resampling).empty

"""The several-token readings reduce to the paper's (issue 46 item 5), and the answer positions of
a draw whose answers are shorter than the longest correct prompt's (item 6).

"A one-token answer keeps the paper's LD" needs every pair of the set to read one position: a set
of one-token answers and no end token is scored by the paper's logit difference
(helixclock.pairs.draw_pairs), and then the several-token code paths - the heads' and the MLPs'
readings, Figs. 5 and 6 at the answer positions and at the first differing token - must give the
paper path's tables.  One pair of several tokens in the set scores every pair by log-probability
(the set's ``scoring``), and the reduction does not hold (nor is it claimed)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.digit_models import digit_engine, digit_model
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table

from helixclock.bases import clock_bases
from helixclock.config import ConfigError
from helixclock.experiments import answer_position_fits
from helixclock.first_difference import first_difference_pairs
from helixclock.pairs import draw_pairs, prompt_ids
from helixclock.patching import PatchingEngine, Point
from helixclock.stages.heads.patching import HeadSettings, last_token_heads
from helixclock.stages.heads.readings import head_patching_readings
from helixclock.stages.last_token.patching import (
    answer_position_curves,
    answer_residuals,
    first_difference_curves,
    last_token_curves,
    layer_effects,
)
from helixclock.stages.mlps.patching import last_token_mlps, mlp_patching_readings
from helixclock.stages.structure.number_bases import check_registry_layers
from helixclock.strata import STRATA

ADD = GPTJ_PROMPTS["add"]
HEADS = HeadSettings(top_heads=4, mixed_heads=1, periods=(2, 10), pca_components=8)
TOL = {"rtol": 1e-4, "atol": 1e-5}  # the several-token engine skips the positions before the last (float rounding)


@pytest.fixture(scope="module")
def one_token():
    """A digit-tokenised Llama whose numbers are several tokens (its registry's switch), on sums
    of one digit and no end token: every pair reads one position, the paper's LD."""
    model = digit_model("llama", name="d-one", answer_end=None)
    correct = correct_table([(a, b) for a in range(10) for b in range(10) if a + b <= 9])
    return model, correct


def pairs_of(model, correct):
    pairs = draw_pairs(correct, 16, 0, model.tokenizer, ADD, ("a", "b"), several=True)
    assert pairs.scoring == "logit" and len(pairs.groups) == 1
    return pairs


def same(got: pd.DataFrame, want: pd.DataFrame, name: str) -> None:
    got = got.drop(columns=[c for c in ("reading", *STRATA) if c in got]).reset_index(drop=True)
    assert sorted(got.columns) == sorted(want.columns), name
    pd.testing.assert_frame_equal(got[list(want.columns)], want.reset_index(drop=True), check_dtype=False, **TOL)


def reading(table: pd.DataFrame, name: str) -> pd.DataFrame:
    return table[table["reading"] == name]


def test_the_heads_readings_give_the_papers_tables_on_one_token_answers(one_token):
    """The heads' several-token path (both readings at roles, the first differing token) against
    the paper's path at the card's integer positions, on the same pairs and fitted prompts: every
    table equal at each reading (the first differing token's effects and fits too: p* is the last
    token), and Fig. D6's attention to a, b and the last token the same."""
    model, correct = one_token
    sample = correct.iloc[:40]
    several = head_patching_readings(
        PatchingEngine(model, progress=False), pairs_of(model, correct), sample, ADD, HEADS
    )
    pairs = pairs_of(model, correct)
    layout = pairs.groups[0].layout
    positions = {"a": layout.resolve("a")[0], "b": layout.resolve("b")[0], "last": layout.resolve("last")[0]}
    ids = prompt_ids(model.tokenizer, ADD, sample)
    paper = last_token_heads(
        PatchingEngine(model, progress=False),
        pairs,
        ids,
        sample["a"].to_numpy(),
        sample["b"].to_numpy(),
        positions,
        HEADS,
    )
    for name in ("screen", "effects", "fits", "topk", "mixed", "paths", "categories"):
        for r in ("last token", "answer positions"):
            same(reading(several[name], r), paper[name], f"{name} at {r}")
    for name in ("effects", "fits"):
        at = reading(several[name], "first differing token")
        assert (at["answer_tokens"] == 1).all() and (at["p_star"] == 0).all()
        want = paper[name] if name == "effects" else paper[name].query("fit == 'helix(a,b,a+b)'")  # Fig. D4's fit
        same(at, want, f"{name} at the first differing token")
    attention = several["attention"].query("position == 0")
    for key in ("a", "b", "last"):
        np.testing.assert_allclose(attention[f"attn_{key}"], paper["attention"][f"attn_{key}"], rtol=1e-4, atol=1e-6)


def test_the_mlps_and_figs_5_and_6_give_the_papers_tables_on_one_token_answers(one_token):
    """Fig. 6 at the last token (role "last"), at the answer positions and at the first differing
    token, Fig. 5 at the answer positions and at p*, and the MLP stage's readings, against the
    paper's path (integer positions, the residual cache's last-token fits): equal tables."""
    model, correct = one_token
    engine = PatchingEngine(model, progress=False)
    pairs = pairs_of(model, correct)
    L = engine.adapter.n_layers
    paper_effects = layer_effects(PatchingEngine(model, progress=False), pairs_of(model, correct))
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
    cache = SimpleNamespace(
        last=torch.stack([r[:, 0] for r in residuals], 1).numpy(),
        ab=ab,
        attrs={"n_layers": L, "position_last": pairs.groups[0].layout.length - 1},
    )
    paper_fits = last_token_curves(PatchingEngine(model, progress=False), pairs_of(model, correct), cache, (2, 10), 32)
    answer = answer_position_curves(engine, pairs, residuals, ab, k, (2, 10), 32)
    same(answer, paper_fits, "Fig. 5 at the answer positions")
    fits = answer_position_fits(torch.stack(residuals), ab, k, clock_bases((2, 10)), 32)
    same(first_difference_curves(engine, differ, fits, (2, 10), range(L + 1)), paper_fits, "Fig. 5 at p*")
    # the MLP stage: its readings against last_token_mlps
    raw = pd.concat([t.assign(reading=r) for r, t in effects.items()], ignore_index=True)
    several = mlp_patching_readings(engine, pairs, fitted, ADD, raw, (2, 10), 8)
    ids = prompt_ids(model.tokenizer, ADD, fitted)
    paper = last_token_mlps(
        PatchingEngine(model, progress=False),
        pairs_of(model, correct),
        ids,
        fitted["a"].to_numpy(),
        fitted["b"].to_numpy(),
        pairs.groups[0].layout.length - 1,
        paper_effects,
        (2, 10),
        8,
    )
    for name in ("effects", "topk", "fits"):
        for r in ("last token", "answer positions"):
            same(reading(several[name], r), paper[name], f"MLP {name} at {r}")
    for name in ("effects", "fits"):
        same(reading(several[name], "first differing token"), paper[name], f"MLP {name} at p*")


def test_a_draw_without_three_digit_answers_reads_every_answer_position():
    """Role "answer" is as wide as the most answer tokens among all correct prompts (here 3: 88 +
    56 = 144), a draw may have none so long (clean a <= 12: two-digit answers at most): the
    heads' and the MLPs' fits at the answer positions still patch every position of the role
    (the padding repeats the first position), and no table loses a reading."""
    engine, pairs, correct = digit_engine("llama", layers=2, name="d-short", n_pairs=8, clean_a=(3, 7, 12))
    assert int(pairs.answer_tokens().max()) == 2 and len(pairs.groups[0].layout.resolve("answer")) == 3
    heads = head_patching_readings(engine, pairs, correct, ADD, HEADS)
    assert set(heads["fits"]["reading"]) == {"last token", "answer positions", "first differing token"}
    rows = [
        layer_effects(engine, pairs, p).assign(reading=r)
        for p, r in (("last", "last token"), ("answer", "answer positions"))
    ]
    mlps = mlp_patching_readings(engine, pairs, correct, ADD, pd.concat(rows, ignore_index=True), (2, 10), 8)
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

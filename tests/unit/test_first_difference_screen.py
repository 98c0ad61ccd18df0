"""The head screen at the first differing token (issue 54 item 4; docs/several-tokens.md, "Numbers of
several tokens"): heads chosen at the last prompt token alone miss a head that acts only at p*
(SmolLM2's three-token answers: p* after "1"), so every head is screened by attribution at each
pair's own p*, pooled over the strata, on the selection draw, and the heads Benjamini-Hochberg lists
there are added to the reading at p*.

The planted model (:func:`two_heads`) has a head that acts only at p* and one that acts only at the
last prompt token, and the last-token screen keeps one head: the old reading at p*, of the heads the
last-token reading measured, misses the p* head (the wrong arm); the screen at p* lists it."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.digit_models import digit_model, planted_copy_head
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table

import helixclock.stages.heads.readings as readings
from helixclock.causal.experiments import total_and_direct
from helixclock.causal.first_difference import first_difference_pairs
from helixclock.causal.pairs import SelectionDraw, draw_pairs
from helixclock.lm.models import wrap_model
from helixclock.patching import PatchingEngine, Point
from helixclock.stages.heads.patching import HeadSettings, head_reading, screen_heads
from helixclock.stages.heads.readings import first_difference_screen, head_readings
from helixclock.stages.heads.tables import head_summary
from helixclock.stats.statistics import Resampling, pair_columns, pair_values

ADD = GPTJ_PROMPTS["add"]
D, OFFSET, LAST_OFFSET, SCALE = 32, 5, 4, 40.0  # width, the p* head's offset, the last-token head's, attention
COPY, BIGRAM, PULL = 0.5, 20.0, 30.0  # the p* head's logit (small: near linear), "=" -> "1", the last head's
SETTINGS = HeadSettings(top_heads=1, mixed_heads=0, periods=(2, 10), pca_components=8, head_screen=1)
P_STAR, LAST_TOKEN = "first differing token", "last token"


def two_heads(weights, digits) -> None:
    """Over :func:`helpers.digit_models.planted_copy_head`'s L0H0 (attends ``OFFSET`` tokens back
    and copies that digit's one-hot into dimensions 20-29), read by the unembedding as ``COPY`` on
    that digit's logit, and a bigram "=" -> "1" (``BIGRAM``): a second head, L0H1, sharing L0H0's
    key and value (one key/value head), its query turned by RoPE's angles to attend ``LAST_OFFSET``
    back, writing d / 9 of the digit d it reads into dimension 30, which lowers the logit of "1" by
    ``PULL`` per unit.  In "...{a}+{b}=" at "=" (the last prompt token) L0H0 reads a's tens digit
    (the bigram says "1" whatever it copies: it does ~nothing there) and L0H1 reads a's units digit
    (a large a_u pulls "1" down: it acts there); at p*, after the answer's "1", L0H0 reads a's units
    digit, the planted pairs' tens digit of the answer (it acts there), and L0H1 reads "+", no digit
    (it writes nothing in either run)."""
    for d in range(10):
        weights["lm_head.weight"][digits.convert_tokens_to_ids(str(d)), 20 + d] = COPY
    one = digits.convert_tokens_to_ids("1")
    weights["lm_head.weight"][one, 1 + digits.convert_tokens_to_ids("=")] = BIGRAM
    weights["lm_head.weight"][one, 30] = -PULL
    attn = "model.layers.0.self_attn"
    rms = (17 / D) ** 0.5  # every token's embedding has this root mean square
    turn = (OFFSET - LAST_OFFSET) * 2.0 ** (-torch.arange(8) / 8)  # RoPE's angles at rope_theta 2
    weights[f"{attn}.q_proj.weight"][16:24, 0] = SCALE * rms / 4 * torch.cos(turn)
    weights[f"{attn}.q_proj.weight"][24:32, 0] = SCALE * rms / 4 * torch.sin(turn)
    for d in range(10):
        weights[f"{attn}.o_proj.weight"][30, 16 + d] = d / 9


def planted_pairs(model, n_pairs: int, seed: int):
    """Pairs a'+b of three-digit answers (100-198: "1" shared, p* after it) whose tens digit is a's
    units digit (:func:`tests.unit.test_first_difference.planted_pairs`'s rows), seed ``seed``."""
    rows = [(a, b) for b in (73, 82, 91) for a in range(10, 100) if a + b >= 100 and (a + b) // 10 % 10 == a % 10]
    return draw_pairs(correct_table(rows), n_pairs, seed, model.tokenizer, ADD, ("a",), several=True, end="."), rows


@pytest.fixture(scope="module")
def planted():
    """The planted model's engine, its measuring pairs (seed 0), a selection draw (seed 1: its
    screen's 20 pairs and 8 of them ranked) and the correct rows."""
    model = planted_copy_head(OFFSET, two_heads, "planted-two-heads")
    pairs, rows = planted_pairs(model, 14, 0)
    screen, _ = planted_pairs(model, 20, 1)
    return PatchingEngine(model, progress=False), pairs, SelectionDraw(screen, screen.spread(8)), rows


def heads_of(table: pd.DataFrame) -> set[tuple[int, int]]:
    return set(zip(table["layer"].astype(int), table["head"].astype(int)))


def test_the_screen_at_p_star_adds_a_head_the_last_token_never_chose(planted):
    """Known answer through the stage's entry point, on the selection draw: the last-token screen
    (one head kept) chooses L0H1, the head that acts at "=", so the old reading at p*, of the heads
    the last-token reading measured, has L0H1 alone (the wrong arm: it misses L0H0).  The screen at
    p* reads the selection draw's screen pairs, each at its p*: L0H0 scores the same at every pair
    (p = 0), L0H1 reads "+" there (its scores ~1e-10, p = 0.3-0.7), block 1 is zero (p = 1); BH
    lists L0H0 alone, which the reading at p* adds (column ``screen``) and measures: its TE there
    is COPY over the residual's RMS, sqrt(18 / 32) (the constant, the token and the copied digit),
    on every pair, DE = TE (nothing but the logits reads it)."""
    engine, pairs, select, rows = planted
    out = head_readings(engine, pairs, correct_table(rows), ADD, SETTINGS, select)
    screen = out["screen"]
    last = screen[screen["reading"] == LAST_TOKEN]
    assert heads_of(last[last["screened"]]) == {(0, 1)}
    effects = out["effects"]
    old = heads_of(effects[effects["reading"] == LAST_TOKEN])  # the heads the old reading at p* measured
    assert old == {(0, 1)} and (0, 0) not in old  # the wrong arm
    at = screen[screen["reading"] == P_STAR].set_index(["layer", "head"])
    assert len(at) == 4 and at[pair_columns(at)].notna().sum(axis=1).eq(len(select.screen)).all()
    assert at["listed"].tolist() == [True, False, False, False]
    assert at["screened"].tolist() == [True, True, False, False]  # measured at p*: listed, or chosen at the last token
    assert at.loc[(0, 0), "p_value"] == 0 and 0.05 < at.loc[(0, 1), "p_value"] < 1
    assert (at.loc[[(1, 0), (1, 1)], "p_value"] == 1).all()
    differ = effects[effects["reading"] == P_STAR]
    assert heads_of(differ) == {(0, 0), (0, 1)}
    assert dict(zip(differ["head"], differ["screen"])) == {1: LAST_TOKEN, 0: P_STAR}
    assert set(out["fits"].query("reading == @P_STAR")["screen"]) == {LAST_TOKEN, P_STAR}
    assert set(effects.query("reading != @P_STAR")["screen"]) == {LAST_TOKEN, "answer positions"}
    x = COPY / (18 / D) ** 0.5
    for effect in ("te", "de"):
        got = pair_values(differ[(differ["head"] == 0) & (differ["effect"] == effect) & (differ["term"] == "ld")])
        assert got.shape[0] == 1 and not np.isnan(got).any()  # one stratum: (3, 1), every pair
        np.testing.assert_allclose(got[0], x, rtol=1e-4)
    assert (differ["answer_tokens"] == 3).all() and (differ["p_star"] == 1).all()
    tables = {k: out[k] for k in ("screen", "effects", "fits", "topk", "mixed", "paths")}
    strata = head_summary(tables, out["categories"], out["attention"], Resampling(bootstrap=20), 0.8)["strata"]
    row = strata.set_index(["reading", "name"]).loc[(P_STAR, "L0H0")]
    assert row["screen"] == P_STAR and row["te"] == pytest.approx(x, rel=1e-4)


def test_the_attribution_at_p_star_is_first_order_patching_of_the_planted_head(planted):
    """Known answer: at p* L0H0's clean write swaps the corrupted digit r's one-hot for the clean
    digit c's, so activation patching moves the clean digit's log-probability by x = COPY / rms
    exactly (the softmax's normaliser is the same in both runs), and attribution, the gradient at
    the corrupted run times that swap, is x (1 - p_c + p_r (1 - 1 / 18)), p of the corrupted run
    at p* (r's logit x, the 17 others 0: p_r = e^x / (e^x + 18)), the 1 / 18 the final norm's
    gradient along its input (x . swap / (D rms^2)).  It agrees with patching to first order, 4.2%
    here; the last-token screen's score of L0H0 (the wrong arm, the old screen) is about 1% of its
    effect at p*."""
    engine, pairs, _, _ = planted
    screen, added = first_difference_screen(engine, pairs, [(0, 1)], 0.05)
    assert added == [(0, 0)]
    attribution = pair_values(screen[(screen["layer"] == 0) & (screen["head"] == 0)])[0].astype(np.float64)
    differ = first_difference_pairs(pairs)
    te = differ.pooled(total_and_direct(engine, differ.pairs, [Point("head_out", 0, ("last",), index=0)]))
    te = pair_values(te[(te["effect"] == "te") & (te["term"] == "ld")])[0].astype(np.float64)
    x = COPY / (18 / D) ** 0.5
    p_c, p_r = 1 / (np.exp(x) + 18), np.exp(x) / (np.exp(x) + 18)
    np.testing.assert_allclose(te, x, rtol=1e-4)
    np.testing.assert_allclose(attribution, x * (1 - p_c + p_r * (1 - 1 / 18)), rtol=1e-4)
    np.testing.assert_allclose(attribution, te, rtol=0.05)
    assert np.abs(attribution / te - 1).min() > 0.04  # first order, not exact
    old = screen_heads(engine, pairs, "last")
    old = pair_values(old[(old["layer"] == 0) & (old["head"] == 0)])[0]
    assert abs(old.mean()) < 0.02 * x  # the wrong arm: read at the last token, L0H0 does ~nothing


def test_without_a_selection_draw_the_screen_at_p_star_reads_the_measuring_pairs(planted):
    """``compat: authors`` (no selection draw): the screen at p* reads the measuring pairs, as the
    last token's screen does, and still adds L0H0."""
    engine, pairs, _, rows = planted
    out = head_readings(engine, pairs, correct_table(rows), ADD, SETTINGS)
    at = out["screen"].query("reading == @P_STAR")
    assert at[pair_columns(at)].notna().sum(axis=1).eq(len(pairs)).all()
    want, _ = first_difference_screen(engine, pairs, [(0, 1)], 0.05)
    np.testing.assert_allclose(pair_values(at), pair_values(want), rtol=1e-6)
    assert heads_of(at[at["listed"]]) == {(0, 0)} and heads_of(at[at["screened"]]) == {(0, 0), (0, 1)}
    differ = out["effects"].query("reading == @P_STAR")
    assert dict(zip(differ["head"], differ["screen"])) == {1: LAST_TOKEN, 0: P_STAR}


def test_the_papers_one_token_models_have_no_screen_at_p_star(monkeypatch):
    """The paper's case (numbers of one token: one reading, the last token's): the screen at p* never
    runs, and head_readings' tables are :func:`.patching.head_reading`'s at the last token, column
    for column (no ``screen`` column, no rows of the first differing token)."""
    several = digit_model("llama", name="d-one", answer_end=None)
    paper = wrap_model(several.hf, several.tokenizer, name="d-paper", family="llama")
    assert paper.tokens.readings == ("last",)
    correct = correct_table([(a, b) for a in range(10) for b in range(10) if a + b <= 9])
    correct["answer_token"] = [paper.tokenizer.convert_tokens_to_ids(str(n)) for n in correct["answer"]]
    pairs = draw_pairs(correct, 12, 0, paper.tokenizer, ADD, ("a", "b"))

    def refuse(*args, **kwargs):
        raise AssertionError("the screen at p* ran on a one-token model")

    monkeypatch.setattr(readings, "first_difference_screen", refuse)
    engine = PatchingEngine(paper, progress=False)
    settings = HeadSettings(top_heads=2, mixed_heads=1, periods=(2, 10), pca_components=8, head_screen=3)
    sample = correct.iloc[:40]
    out = head_readings(engine, pairs, sample, ADD, settings)
    H, ab, k = readings.head_outputs(engine, sample, ADD)  # the last token's fits, as head_readings fits them
    fits = readings.answer_position_fits(H[:, :, :1], ab, k, readings.clock_bases(settings.periods), 8)
    n_heads = paper.adapter.n_heads
    index = {(la, h): la * n_heads + h for la in range(paper.adapter.n_layers) for h in range(n_heads)}
    want = head_reading(engine, pairs, readings.FittedHeads(fits[:1], index, pairs), "last", settings)
    for name, table in want.items():
        got = out[name]
        assert set(got["reading"]) == {LAST_TOKEN} and "screen" not in got, name
        pd.testing.assert_frame_equal(got.drop(columns="reading"), table, check_dtype=False, rtol=1e-5, atol=1e-6)

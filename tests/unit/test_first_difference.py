"""The reading at the first differing token (docs/several-tokens.md, "Numbers of several tokens"; issue 46 item 1):
TE and DE scoring the one token a patched position predicts, at the last prompt token (the TE's
matched term) and at p*, the position that predicts the first answer token the clean and the
corrupted answer do not share."""

import numpy as np
import pandas as pd
import pytest
from helpers.digit_models import digit_engine, planted_copy_head
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table

from helixclock.causal.experiments import total_and_direct
from helixclock.causal.first_difference import first_difference_pairs
from helixclock.causal.pairs import draw_pairs
from helixclock.patching import PatchingEngine, Point
from helixclock.stages.findings import registry as reg
from helixclock.stages.findings.contrasts import Tables
from helixclock.stages.findings.verdicts import contrasts_table
from helixclock.stages.heads.patching import HeadSettings
from helixclock.stages.heads.readings import head_readings
from helixclock.stages.heads.tables import head_summary
from helixclock.stats.statistics import Resampling, pair_columns
from helixclock.stats.strata import matched_rows, matched_terms, strata_masks, stratified

ADD = GPTJ_PROMPTS["add"]
D, OFFSET, COPY, BIGRAM = 32, 5, 4.0, 20.0  # width (planted_copy_head's), the head's offset, its logit, "=" -> "1"


def the_unembedding_reads_the_copy(weights, digits) -> None:
    """The unembedding alone reads the copied digit (``COPY`` on the digit's logit: nothing
    reads the head but the logits), and gives "1" a logit ``BIGRAM`` after "="."""
    for d in range(10):
        weights["lm_head.weight"][digits.convert_tokens_to_ids(str(d)), 20 + d] = COPY
    weights["lm_head.weight"][digits.convert_tokens_to_ids("1"), 1 + digits.convert_tokens_to_ids("=")] = BIGRAM


def planted_first_difference():
    """A 2-block digit Llama with one working head, L0H0, and a bigram, planted by hand
    (helpers.digit_models.planted_copy_head): L0H0 attends from each position to the token
    ``OFFSET`` before it and writes that token's digit one-hot into residual dimensions 20-29,
    which only the unembedding reads (:func:`the_unembedding_reads_the_copy`).  In
    "Output ONLY a number.\\n{a}+{b}=" with two-digit a and b, at "=" the model says "1" whatever
    the head copies (a's tens digit), and at the next position (after the teacher-forced "1") it
    says the digit the head copies there: a's units digit."""
    return planted_copy_head(OFFSET, the_unembedding_reads_the_copy, "planted-p*")


def planted_pairs(model, n_pairs: int = 14):
    """Pairs a'+b of three-digit answers (100-198: their first token "1" shared) whose tens digit
    is a's units digit, so that at p* (after "1") the head copies the clean answer's token in the
    clean run and another digit in the corrupted one (a's units digits differ within each b)."""
    rows = [(a, b) for b in (73, 82, 91) for a in range(10, 100) if a + b >= 100 and (a + b) // 10 % 10 == a % 10]
    return draw_pairs(correct_table(rows), n_pairs, 0, model.tokenizer, ADD, ("a",), several=True, end="."), rows


def _rows(table: pd.DataFrame, effect: str, term: str | None = None) -> np.ndarray:
    part = table[table["effect"] == effect]
    if term is not None:
        part = part[part["term"] == term]
    return part[pair_columns(table)].to_numpy(np.float64)


@pytest.fixture(scope="module")
def planted():
    model = planted_first_difference()
    pairs, rows = planted_pairs(model)
    return PatchingEngine(model, progress=False), pairs, rows


def test_a_shared_first_token_reads_nothing_at_the_last_token_and_the_planted_effect_at_p_star(planted):
    """Known answer: the pairs' answers share their first token "1", so at the last prompt token
    the planted head's DE and its TE's first-token term are ~0 (the model says "1" either way);
    at p* (the position after "1") it moves the clean answer's tens digit by the planted amount,
    COPY / rms of the residual there, in the log-likelihood ratio, with DE = TE (nothing but the
    logits reads the head): the planted ratio DE/TE = 1."""
    engine, pairs, _ = planted
    assert (pairs.answer_tokens() == 3).all() and (pairs.meta["first_difference"] == 1).all()
    head = [Point("head_out", 0, ("last",), index=0)]
    last = total_and_direct(engine, pairs, head)
    assert np.abs(_rows(last, "de")).max() < 1e-5
    assert np.abs(_rows(last, "te", "hundreds")).max() < 1e-5  # the first answer token's term: what DE scores
    differ = first_difference_pairs(pairs)
    assert (differ.p_star == 1).all() and differ.strata() == [(3, 1)]
    at = differ.table(total_and_direct(engine, differ.pairs, head))
    assert set(at["term"]) == {"ld", "ld_raw"} and (at["answer_tokens"] == 3).all() and (at["p_star"] == 1).all()
    te, de = _rows(at, "te", "ld")[0], _rows(at, "de")[0]
    rms = ((16 + 1 + 1) / D) ** 0.5  # the constant, the input token's one-hot and the copied digit's
    np.testing.assert_allclose(te, COPY / rms, rtol=0.02)
    np.testing.assert_allclose(de, te, rtol=1e-4)
    # the same position read in the whole rows: the tens term of TE at the answer positions
    whole = total_and_direct(engine, pairs, [Point("head_out", 0, ("answer",), index=0)])
    np.testing.assert_allclose(_rows(whole, "te", "tens")[0], te, rtol=1e-4)


def head_stage(engine, pairs, rows):
    """The head stage on the planted pairs through its entry points: head_readings' tables and
    head_summary's (2 top heads, none mixed, 50 resamples)."""
    settings = HeadSettings(top_heads=2, mixed_heads=0, periods=(2, 10), pca_components=8)
    out = head_readings(engine, pairs, correct_table(rows), ADD, settings)
    tables = {k: out[k] for k in ("screen", "effects", "fits", "topk", "mixed", "paths")}
    return out, head_summary(tables, out["categories"], out["attention"], Resampling(bootstrap=50), 0.8)


GAIN = 1.0  # what the planted downstream reader adds to the copied digit, per unit of the head's write


def an_mlp_reads_the_copy_downstream(weights, digits) -> None:
    """The unembedding reads the copied digit (:func:`the_unembedding_reads_the_copy`) and so does
    block 1's MLP, which writes ``GAIN`` times it back onto the same dimensions: a downstream reader,
    so the head's TE is its direct write plus the MLP's, and its DE the direct write alone.  The MLP
    (SwiGLU) is linear here: its gate reads the constant coordinate, the same in every run
    (silu(16) = 16 to 1e-6), its up projection the copied one-hot, after the block's norm, whose
    RMS is the same whichever digit is copied."""
    the_unembedding_reads_the_copy(weights, digits)
    mlp = "model.layers.1.mlp"
    rms = ((16 + 1 + 1) / D) ** 0.5  # the constant, the token's one-hot and the copied digit
    gate = 16.0
    for d in range(10):
        weights[f"{mlp}.gate_proj.weight"][d, 0] = gate * rms / 4  # z = 16 at every position
        weights[f"{mlp}.up_proj.weight"][d, 20 + d] = 1.0  # the normed copy: 1 / rms
        weights[f"{mlp}.down_proj.weight"][20 + d, d] = GAIN * rms / gate  # adds GAIN to dimension 20 + d


def clean_digit_log_prob(vocabulary: int, copied: dict[int, float]) -> float:
    """log p of the clean digit (token 0 here) at p* when the residual's copy dimensions hold
    ``copied`` (digit -> value): the unembedding reads COPY x value / the final norm's RMS on each
    digit, every other logit 0 (no bigram at p*, the position after "1")."""
    rms = ((16 + 1 + sum(v * v for v in copied.values())) / D) ** 0.5
    x = np.zeros(vocabulary)
    for token, value in copied.items():
        x[token] = COPY * value / rms
    return float(x[0] - np.log(np.exp(x).sum()))


def test_a_downstream_reader_makes_the_direct_effect_a_known_part_of_the_total():
    """Known answer with DE below TE: the planted head's write is read by the logits and by block
    1's MLP, which adds GAIN times it.  At p* the corrupted run holds the corrupted digit at
    1 + GAIN, the clean-patched run the clean digit at 1 + GAIN, and the direct path alone (the
    head's clean write, the MLP's corrupted one) the clean digit at 1 and the corrupted one at
    GAIN: TE and DE are those log-probability differences of the clean digit, in closed form
    (the final norm recomputed on each residual), DE/TE = 0.925 for COPY 4 and GAIN 1.  Rejected:
    a DE that is the TE (the old planted test's case, nothing downstream), and a DE that keeps the
    corrupted run's final-norm scale (0.013 lower)."""
    model = planted_copy_head(OFFSET, an_mlp_reads_the_copy_downstream, "planted-p*-reader")
    pairs, rows = planted_pairs(model)
    engine = PatchingEngine(model, progress=False)
    differ = first_difference_pairs(pairs)
    at = differ.table(total_and_direct(engine, differ.pairs, [Point("head_out", 0, ("last",), index=0)]))
    te, de = _rows(at, "te", "ld")[0], _rows(at, "de")[0]
    V = len(model.tokenizer)
    corrupted = clean_digit_log_prob(V, {1: 1 + GAIN})
    want_te = clean_digit_log_prob(V, {0: 1 + GAIN}) - corrupted
    want_de = clean_digit_log_prob(V, {0: 1.0, 1: GAIN}) - corrupted
    np.testing.assert_allclose(te, want_te, rtol=1e-4)
    np.testing.assert_allclose(de, want_de, rtol=1e-4)
    assert want_de / want_te == pytest.approx(0.925, abs=1e-3)
    assert not np.allclose(de, te, rtol=1e-3)  # the wrong arm: DE = TE
    rms = ((16 + 1 + (1 + GAIN) ** 2) / D) ** 0.5  # the wrong arm: the corrupted run's norm kept
    frozen = np.zeros(V)
    frozen[:2] = COPY / rms, COPY * GAIN / rms
    frozen_de = frozen[0] - np.log(np.exp(frozen).sum()) - corrupted
    assert abs(frozen_de - want_de) > 0.01 and not np.allclose(de, frozen_de, rtol=1e-3)
    _, summary = head_stage(engine, pairs, rows)
    row = summary["strata"].set_index(["reading", "name"]).loc[("first differing token", "L0H0")]
    assert row["de_over_te"] == pytest.approx(want_de / want_te, abs=1e-3)


def test_the_head_stage_reads_the_planted_head_by_stratum(planted):
    """Through the rule's entry point for several-token models: the effects table has the first
    differing token's rows by stratum, in the pairs' order, and the summary's strata table gives
    the planted head DE/TE = 1 at p* and TE, DE ~0 at the last token, its TE of the first answer
    token (``te_matched``) beside the whole LD."""
    engine, pairs, rows = planted
    out, summary = head_stage(engine, pairs, rows)
    effects = out["effects"]
    assert list(dict.fromkeys(effects["reading"])) == ["last token", "answer positions", "first differing token"]
    strata = summary["strata"].set_index(["reading", "name"])
    planted_row = strata.loc[("first differing token", "L0H0")]
    assert (planted_row["answer_tokens"], planted_row["p_star"]) == (3, 1)
    assert planted_row["te"] > 5 and planted_row["de_over_te"] == pytest.approx(1, abs=1e-3)
    last = strata.loc[("last token", "L0H0")]
    assert abs(last["te"]) < 1e-4 and abs(last["de"]) < 1e-4
    assert "first differing token" not in set(summary["effects"]["reading"])  # by stratum only
    heads = summary["effects"].set_index(["reading", "name"]).loc[("last token", "L0H0")]
    assert abs(heads["te_matched"]) < 1e-4 and abs(heads["de"]) < 1e-4


def test_where_the_first_tokens_differ_p_star_is_the_last_token(llama_digits):
    """Pairs whose answers differ in their first token: the reading at p* is the last-token
    reading's first answer token (TE its first-token term, DE the same), computed on rows cut
    after the last prompt token; and the strata cover every pair once."""
    engine, pairs = llama_digits
    differ = first_difference_pairs(pairs)
    points = [Point("mlp_out", layer, ("last",)) for layer in range(engine.adapter.n_layers)]
    at = differ.table(total_and_direct(engine, differ.pairs, points))
    last = total_and_direct(engine, pairs, points)
    masks = strata_masks(at.assign(reading="first differing token"))
    assert np.array_equal(np.sum([m for _, _, m in masks], 0), np.ones(len(pairs)))
    first = differ.p_star == 0
    assert first.any() and (~first).any()
    matched = matched_terms(last, "last token")
    for effect in ("te", "de"):
        got = at[(at["effect"] == effect) & (at["term"] == "ld") & (at["p_star"] == 0)]
        want = matched[matched["effect"] == effect]
        for k in sorted(set(got["answer_tokens"])):
            cols = np.flatnonzero(first & (differ.answer_tokens == k))
            g = got[got["answer_tokens"] == k][pair_columns(at)].to_numpy(np.float64)[:, cols]
            w = want[pair_columns(at)].to_numpy(np.float64)[:, cols]
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
            assert np.abs(w).max() > 1e-3


@pytest.fixture(scope="module")
def llama_digits():
    engine, pairs, _ = digit_engine("llama", n_pairs=16)
    return engine, pairs


def test_matched_terms_take_the_first_tokens_term_or_the_answers_own():
    """Known answer on a planted raw table: at the last token a pair's matched TE is its first
    answer token's term (hundreds where the answer has three tokens, tens where two, units where
    one), at the answer positions LD less the end's term; DE rows as they are; a table whose
    places do not add up to LD (answers of more than three tokens) is refused."""
    nan = np.nan
    te = {  # three pairs: answers of 3, 2 and 1 tokens, each with an end token
        "ld": [10.0, 6.0, 3.0],
        "ld_raw": [0.0, 0.0, 0.0],
        "units": [1.0, 2.0, 2.5],
        "tens": [2.0, 3.5, nan],
        "hundreds": [6.0, nan, nan],
        "end": [1.0, 0.5, 0.5],
    }
    rows = [
        {"layer": 0, "effect": "te", "term": t, "pair_0": v[0], "pair_1": v[1], "pair_2": v[2]} for t, v in te.items()
    ]
    rows.append({"layer": 0, "effect": "de", "term": "ld", "pair_0": 0.5, "pair_1": 0.25, "pair_2": 0.125})
    raw = pd.DataFrame(rows)
    last = matched_terms(raw, "last token")
    assert _rows(last, "te", "matched").tolist() == [[6.0, 3.5, 2.5]]
    assert _rows(last, "de", "matched").tolist() == [[0.5, 0.25, 0.125]]
    assert _rows(matched_terms(raw, "answer positions"), "te", "matched").tolist() == [[9.0, 5.5, 2.5]]
    bad = raw.copy()
    bad.loc[(bad["term"] == "ld") & (bad["effect"] == "te"), "pair_0"] = 20.0  # a fourth token's term missing
    with pytest.raises(ValueError, match="more than 3 tokens"):
        matched_rows(bad[bad["effect"] == "te"], "last token")
    masks = [(2, 0, np.array([True, False, True])), (3, 1, np.array([False, True, False]))]
    split = stratified(last, masks)
    assert len(split) == 2 * len(last) and np.isnan(split.iloc[0]["pair_1"]) and split.iloc[2]["pair_1"] == 3.5


def planted_head_tables(n: int = 40, seed: int = 0) -> dict[str, pd.DataFrame]:
    """A head job's raw effects of one head (L1H2) at the last token (TE by term, DE) and at the
    first differing token (by stratum), and its categories: at the last token DE is half the TE
    of the first answer token, pair by pair; at p* DE is 0.8 of TE.  Strata: (2, 0) pairs 0-14,
    (3, 1) pairs 15-34, (3, 2) pairs 35-39."""
    rng = np.random.default_rng(seed)
    k = np.array([2] * 15 + [3] * 25)
    j = np.array([0] * 15 + [1] * 20 + [2] * 5)
    first = rng.normal(2.0, 0.3, n)
    later = rng.normal(1.0, 0.3, (2, n))
    end = rng.normal(0.2, 0.1, n)
    nan = np.full(n, np.nan)
    terms = {
        "hundreds": np.where(k == 3, first, nan),
        "tens": np.where(k == 3, later[0], first),
        "units": later[1],
        "end": end,
    }
    terms["ld"] = np.nansum(np.stack(list(terms.values())), 0)
    terms["ld_raw"] = terms["ld"]
    head = {"layer": 1, "component": "head", "head": 2}
    rows = [
        {"reading": "last token", **head, "effect": "te", "term": t, **dict(enumerate(v))} for t, v in terms.items()
    ]
    rows.append({"reading": "last token", **head, "effect": "de", "term": "ld", **dict(enumerate(0.5 * first))})
    te_p = rng.normal(2.0, 0.3, n)
    for kk, jj in sorted(set(zip(k, j))):
        inside = (k == kk) & (j == jj)
        for effect, values in (("te", te_p), ("de", 0.8 * te_p)):
            rows.append(
                {
                    "reading": "first differing token",
                    **head,
                    "effect": effect,
                    "term": "ld",
                    "answer_tokens": kk,
                    "p_star": jj,
                    **dict(enumerate(np.where(inside, values, np.nan))),
                }  # fmt: skip
            )
    effects = pd.DataFrame(rows).rename(columns={i: f"pair_{i}" for i in range(n)})
    categories = pd.DataFrame([{"reading": "last token", "name": "L1H2", "layer": 1, "head": 2, "category": "a+b"}])
    return {"head_effects": effects, "head_categories": categories}


def test_the_registry_reads_de_over_te_of_the_same_token_by_stratum():
    """The declared findings of DE/TE of the same token (config/findings.yaml): one per
    categorised head and stratum, at the last token of the first answer token's TE term (the
    planted 0.5) and at the first differing token (the planted 0.8), each over its stratum's
    pairs only."""
    full = reg.load()
    mine = [f for f in full.findings if f["id"].startswith("head_de_over_te_") and f["family"] == "heads_ratio_strata"]
    registry = reg.Registry(full.alpha, full.power, full.families, mine)
    table = contrasts_table(registry, True, Tables(planted_head_tables(), {}), Resampling(bootstrap=500), "corrected")
    table = table.set_index("id")
    counts = {(2, 0): 15, (3, 1): 20, (3, 2): 5}
    for (k, j), n in counts.items():
        suffix = f"[layer=1,head=2,answer_tokens={k},p_star={j}]"
        matched, at = (
            table.loc[f"head_de_over_te_matched{suffix}"],
            table.loc[f"head_de_over_te_first_difference{suffix}"],
        )
        assert matched["estimate"] == pytest.approx(0.5, abs=1e-6) and matched["n_pairs"] == n
        assert at["estimate"] == pytest.approx(0.8, abs=1e-6) and at["n_pairs"] == n
        assert matched["reading"] == "last token" and at["reading"] == "first differing token"
    assert len(table) == 2 * len(counts)

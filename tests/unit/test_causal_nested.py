"""The causal nested T = 100 test (helixclock.stages.helix.nested; docs/findings.md, "The causal nested
T = 100 test"; issue 54 item 1): held-out fits of the digits, the digits with the T = 100 circle and
the digits with a placebo circle patched at a's token.  A planted model whose answer reads a T = 100
circle at a's position is detected (the positive control); one whose answer reads an idiosyncratic
value of each a is not, where the in-sample fit (the wrong method) would claim it."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.families import tiny_hf_model
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table
from sklearn.linear_model import LinearRegression

from helixclock.causal.experiments import ld_table, stack_points
from helixclock.causal.pairs import draw_pairs, prompt_rows
from helixclock.fitting.planes import additive, circle, nonadditive, placebo_cosine
from helixclock.lm.models import wrap_model
from helixclock.lm.toy import build_tokenizer
from helixclock.patching import PatchingEngine, Point
from helixclock.stages.helix.nested import (
    BASES,
    causal_nested,
    declared_sigma,
    design_rank,
    held_out_weights,
    nested_designs,
    nested_variants,
    unspanned,
    value_means,
)
from helixclock.stages.helix.tables import nested_summary
from helixclock.stats.statistics import Resampling

ADD = GPTJ_PROMPTS["add"]
D, GAIN, OFFSET = 32, 6.0, 3  # width; the unembedding's gain; "=" reads the token 3 before it (a)
ROWS = [(a, b) for a in range(100) for b in (0, 1, 2)]


def test_the_held_out_smoother_is_scikit_learns_fit_without_the_value():
    """Known answer: row v of held_out_weights applied to the values' means is scikit-learn's
    weighted least squares on every other value, evaluated at v (to 1e-12), for each design; the
    in-sample hat matrix (the wrong method) is not, and its diagonal is where it differs."""
    rng = np.random.default_rng(0)
    values = np.arange(100)
    counts = rng.integers(1, 4, 100).astype(float)
    Y = rng.normal(size=(100, 3))
    for name, basis in nested_designs("a", 2, declared_sigma(0)).items():
        X = basis({"a": values})
        W = held_out_weights(X, counts)
        assert np.all(np.diag(W) == 0)
        reference = np.stack(
            [
                LinearRegression(fit_intercept=False)
                .fit(np.delete(X, v, 0), np.delete(Y, v, 0), sample_weight=np.delete(counts, v))
                .predict(X[v : v + 1])[0]
                for v in range(100)
            ]
        )
        np.testing.assert_allclose(W @ Y, reference, atol=1e-12)
        hat = X @ np.linalg.pinv(X * np.sqrt(counts)[:, None]) * np.sqrt(counts)[None]
        assert np.abs(hat @ Y - reference).max() > 0.05, name


def test_a_value_whose_digit_no_other_value_has_is_flagged_as_extrapolated():
    """Known answer: over 0..99 every value's one-hot row lies in the span of the others' (each
    digit recurs); drop the other values of tens digit 7 and 73 is the one value with that digit,
    outside the others' span for every design (its held-out fit gives tens digit 7 the level of 0);
    the flag is not 'any digit seen once' (the wrong rule): 99 with units 9 seen elsewhere stays in."""
    sigma = declared_sigma(0)
    for name, basis in nested_designs("a", 2, sigma).items():
        full = np.arange(100)
        assert not unspanned(basis({"a": full}), np.ones(100)).any(), name
        values = np.array([v for v in full if v // 10 != 7 or v == 73])
        flags = unspanned(basis({"a": values}), np.ones(len(values)))
        assert values[flags].tolist() == [73], name


def test_the_designs_have_the_declared_ranks_and_the_placebo_its_cosine():
    """Over 0..99 the digit one-hot with the classes has rank 18 (the constant aside), and both
    the T = 100 circle and the placebo add 2; the declared placebo's non-additive part lies below
    cosine 0.5 to the circle's, with the same norm.  Over 0..198 (a+b) the hundreds place adds its
    one-hot column and the classes one more: "two digits" is no function of one digit (0..9 and
    100..109 share the tens digit 0)."""
    sigma = declared_sigma(0)
    ranks = {n: design_rank(b({"a": np.arange(100)})) for n, b in nested_designs("a", 2, sigma).items()}
    assert ranks == {"digits": 18, "digits + T=100": 20, "digits + placebo": 20}
    sums = {n: design_rank(b({"a+b": np.arange(199)})) for n, b in nested_designs("a+b", 3, sigma).items()}
    assert sums == {"digits": 20, "digits + T=100": 22, "digits + placebo": 22}
    assert placebo_cosine(np.arange(100), sigma) < 0.5
    numbers = np.arange(100)
    from helixclock.fitting.planes import tens_permuted_circle

    own, rival = nonadditive(circle(numbers), numbers), nonadditive(tens_permuted_circle(numbers, sigma), numbers)
    np.testing.assert_allclose(np.linalg.norm(own), np.linalg.norm(rival), rtol=1e-10)
    assert additive(numbers).shape == (100, 19)


def planted_reader(embed, unembed) -> object:
    """A 2-block word-level Llama (one token a number 0..199, width 32, RoPE at rope_theta 2) with
    one working head, L0H0, planted by hand: every weight 0 but the norms'.  Every token carries a
    constant coordinate (4, dimension 0) and a unit vector: number n's is ``embed(n)`` [k] in
    dimensions 1..k, any other token's dimension 31; so every token has the same norm, its query
    and key are the same, and RoPE makes L0H0 attend from each position to the token 3 before it
    (from "=" to a).  The head copies dimensions 1..k to 20..19+k, and the unembedding reads them:
    the logit of number t is ``unembed(t)`` . (x_20, ...) / rms.  Block 1 does nothing."""
    tok = build_tokenizer({"add": ADD}, 199, bos=False)
    V = len(tok)
    hf = tiny_hf_model("llama", V, d=D, layers=2, heads=2, seed=0, rope_theta=2.0, intermediate_size=32)
    w = hf.state_dict()
    numbers = [tok.convert_tokens_to_ids(str(n)) for n in range(200)]
    parts = torch.as_tensor(np.stack([embed(n) for n in range(200)]), dtype=torch.float32)
    reads = torch.as_tensor(np.stack([unembed(n) for n in range(200)]), dtype=torch.float32)
    k = parts.shape[1]
    with torch.no_grad():
        for key, x in w.items():
            if "norm" not in key:
                x.zero_()
        w["model.embed_tokens.weight"][:, 0] = 4.0
        w["model.embed_tokens.weight"][:, 31] = 1.0
        w["model.embed_tokens.weight"][numbers, 31] = 0.0
        w["model.embed_tokens.weight"][numbers, 1 : 1 + k] = parts
        rms = (17 / D) ** 0.5  # every token's, so the query and key are every token's alike
        theta = 2.0 ** (-torch.arange(8) / 8)
        attn = "model.layers.0.self_attn"
        w[f"{attn}.q_proj.weight"][:8, 0] = 40.0 * rms / 4
        w[f"{attn}.k_proj.weight"][:8, 0] = torch.cos(OFFSET * theta) * rms / 4
        w[f"{attn}.k_proj.weight"][8:16, 0] = torch.sin(OFFSET * theta) * rms / 4
        for i in range(k):
            w[f"{attn}.v_proj.weight"][i, 1 + i] = 1.0
            w[f"{attn}.o_proj.weight"][20 + i, i] = 1.0
        w["lm_head.weight"][numbers, 20 : 20 + k] = reads
    hf.load_state_dict(w)
    return wrap_model(hf, tok, name="planted-nested")


def residuals(engine, correct: pd.DataFrame, role: str = "a"):
    """Every correct prompt's residual at ``role`` ("a": a's token, "last": "="), at every
    block's input [L, n, d], and the value fitted there (a, or a+b)."""
    model = engine.model
    points = [Point("resid_pre", layer, (role,)) for layer in range(model.adapter.n_layers)]
    ids, groups, order = prompt_rows(model.tokenizer, ADD, correct)
    values, _ = engine.collect(ids, points, logits=False, groups=groups)
    rows = correct.iloc[order]
    return stack_points(values, points), (rows["a"] if role == "a" else rows["a"] + rows["b"]).to_numpy()


def run(embed, unembed, rows=ROWS, n_pairs: int = 60, in_sample: bool = False, last: bool = False):
    """The causal nested test of a planted reader at layers 0 and 1, held out (or, ``in_sample``,
    the wrong method), on ``n_pairs`` pairs of ``rows``, at a's token (and with ``last`` at "="
    over a+b): its raw table, its summary by layer (of a's token) and the clean LD."""
    model = planted_reader(embed, unembed)
    engine = PatchingEngine(model, progress=False)
    correct = correct_table(rows)
    correct["answer_token"] = [model.tokenizer.convert_tokens_to_ids(str(n)) for n in correct["answer"]]
    pairs = draw_pairs(correct, n_pairs, 0, model.tokenizer, ADD, ("a",))
    H, a = residuals(engine, correct)
    sigma = declared_sigma(0)
    if not in_sample:
        raw = causal_nested(
            engine,
            pairs,
            {"a": (H, a), **({"last": residuals(engine, correct, "last")} if last else {})},
            [0, 1],
            sigma,
        )
    else:  # the wrong method: each fit solved on every value, the pair's own clean a among them
        uniq, counts, means = value_means(a, H)
        preds, ranks = {}, {}
        for name, basis in nested_designs("a", 2, sigma).items():
            X = basis({"a": uniq})
            hat = torch.as_tensor(X @ np.linalg.pinv(X * np.sqrt(counts)[:, None]) * np.sqrt(counts)[None])
            preds[name], ranks[name] = torch.einsum("vu,lud->lvd", hat, means).float(), design_rank(X)
        v, labels = nested_variants(uniq, preds, ranks, pairs.meta["clean_a"], [0, 1], "a", token="a", variable="a")
        raw = ld_table(engine.run(pairs, v), pairs, labels, sigma=" ".join(map(str, sigma)))
    clean = float(engine.clean_ld(pairs).mean())
    table = nested_summary(raw, Resampling(bootstrap=400))
    if last:
        return raw, table, clean
    return raw, table.set_index("layer"), clean


def test_a_planted_t100_reader_is_detected_at_the_layer_it_is_read():
    """Positive control: the answer reads cos, sin 2 pi a / 100 of a's embedding.  At layer 0 the
    digits with T = 100 restore the clean answer (their held-out fit is exact: the circle is in
    their span) and beat both the digits alone and the placebo, with p < 1e-6 each; at layer 1
    (after the head has read a) nothing patched at a's token moves the answer."""
    raw, table, clean = run(lambda n: circle([n])[0], lambda t: GAIN * circle([t])[0])
    assert set(raw["basis"]) == set(BASES) and set(raw["token"]) == {"a"}
    at = table.loc[0]
    assert at["increment"] > 0.3 and at["placebo_gap"] > 0.3
    assert at["low"] > 0 and at["placebo_low"] > 0 and at["p"] < 1e-6
    assert at["p"] == max(at["p_digits"], at["p_placebo"])
    np.testing.assert_allclose(at["ld_t100"], clean, rtol=1e-4)  # the circle's fit is exact: the clean LD
    assert at["ld_digits"] < clean - 0.3 and at["ld_placebo"] < clean - 0.3
    after = table.loc[1]
    assert abs(after["increment"]) < 1e-4 and abs(after["placebo_gap"]) < 1e-4 and after["p"] == 1.0
    assert (at["rank_digits"], at["rank_t100"], at["rank_placebo"]) == (18, 20, 20) and at["unspanned_pairs"] == 0
    assert at["angle_placebo_1"] > 60  # cosine below 0.5


@pytest.fixture(scope="module")
def idiosyncratic():
    """A model whose answer reads a code of each number drawn at random (unit vectors in 6
    dimensions, no structure in the number): it answers a + 0 = a, and no fit of a's numbers can
    predict the code of a value it has not seen."""
    codes = np.random.default_rng(1).normal(size=(200, 6))
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    return lambda n: codes[n], lambda t: GAIN * codes[t], [(a, 0) for a in range(100)]


def test_an_idiosyncratic_reader_is_not_detected_held_out_but_in_sample_it_is(idiosyncratic):
    """No structure in a: held out, neither increment is shown above 0 (p > 0.3 each).  The
    in-sample fit (the wrong method: the pair's own clean a among the fitted values) restores
    three times as much with every design (1.0 held out, 3.0 in sample: each fit holds part of the
    pair's own code), and the two more columns of T = 100 make the increment over the digits read
    as detected (p < 0.02), which only the placebo arm of the intersection-union test refuses."""
    embed, unembed, rows = idiosyncratic
    _, held, _ = run(embed, unembed, rows)
    assert held.loc[0, "p_digits"] > 0.3 and held.loc[0, "p"] > 0.3 and held.loc[0, "ld_digits"] < 1.2
    _, wrong, _ = run(embed, unembed, rows, in_sample=True)
    assert wrong.loc[0, "ld_digits"] > 2.5
    assert wrong.loc[0, "increment"] > 0.1 and wrong.loc[0, "p_digits"] < 0.02 and wrong.loc[0, "p"] > 0.3


def test_at_the_last_token_the_sum_path_detects_the_circle_the_head_has_copied_there():
    """The a+b path: with b = 0 or 100 the sum's T = 100 circle is a's (a+b = a or a + 100, sums of
    up to three digits: the hundreds one-hot and the two-digit class join the digits), and the head
    copies a's circle to "=" in block 0.  So at "=" the test holds at layer 1 (after the copy: the
    sum's held-out circle fit restores the clean LD, p < 1e-6) and finds nothing at layer 0 (the
    "=" token's embedding, the same in every prompt), while at a's token it holds at layer 0."""
    rows = [(a, b) for a in range(100) for b in (0, 100)]
    raw, table, clean = run(lambda n: circle([n])[0], lambda t: GAIN * circle([t])[0], rows, last=True)
    at = table.set_index(["token", "layer"])
    assert set(raw["variable"]) == {"a", "a+b"}
    assert (at.loc[("last", 1), "rank_digits"], at.loc[("last", 1), "rank_t100"]) == (20, 22)
    assert at.loc[("last", 1), "p"] < 1e-6 and at.loc[("last", 1), "increment"] > 0.3
    np.testing.assert_allclose(at.loc[("last", 1), "ld_t100"], clean, rtol=1e-4)
    assert at.loc[("last", 0), "p"] == 1.0 and abs(at.loc[("last", 0), "increment"]) < 1e-4
    assert at.loc[("a", 0), "p"] < 1e-6


# -- the reading at the first differing token p* (answers of several tokens) ------------------------
P_GRID = [(a, b) for a in range(10, 100) for b in (3, 5, 21, 34, 56)]  # sums 13..155: 2- and 3-digit answers


def sum_features(s: np.ndarray) -> np.ndarray:
    """cos, sin 2 pi s / 100 and the one-hots of the units and tens digits of s: in the span of the
    digits + T = 100 design of two- and three-digit sums alike, the circle outside the digits'."""
    s = np.asarray(s)
    eye = np.eye(10)
    return np.concatenate([circle(s), eye[s % 10], eye[(s // 10) % 10]], axis=1)


@pytest.fixture(scope="module")
def p_star_run():
    """A digit-tokenised Llama, pairs a' + b -> a + b cut after p*, and planted answer-position
    residuals: prompt n's at answer position j is M[k, j] @ sum_features(a + b), k its answer's
    token count, M drawn anew for every (k, j) (the same position predicts the units digit of a
    two-token answer and the tens digit of a three-token one: their residuals share nothing)."""
    from helpers.digit_models import ADD as DIGIT_ADD
    from helpers.digit_models import digit_model

    from helixclock.causal.experiments import answer_residuals
    from helixclock.causal.first_difference import first_difference_pairs

    model = digit_model(layers=2)
    correct = correct_table(P_GRID)
    pairs = draw_pairs(correct, 80, 0, model.tokenizer, DIGIT_ADD, ("a",), several=True, end=".")
    engine = PatchingEngine(model, progress=False)
    layers = [0, 1]
    measured, ab, k = answer_residuals(engine, correct, DIGIT_ADD, layers)  # (a, b) and answer tokens, in its order
    assert set(k.tolist()) == {2, 3} and measured[0].shape[:2] == (len(ab), 3)
    rng = np.random.default_rng(0)
    M = {(kk, j): rng.normal(size=(measured[0].shape[2], 22)) for kk in (2, 3) for j in range(3)}
    H = np.zeros(measured[0].shape)
    for n, (s, kk) in enumerate(zip(ab.sum(1), k)):
        for j in range(kk):
            H[n, j] = M[kk, j] @ sum_features([s])[0]
    residuals = [torch.as_tensor(H, dtype=torch.float32) * (1 + layer) for layer in layers]
    differ = first_difference_pairs(pairs)
    return engine, pairs, differ, (residuals, ab, k), layers, M, DIGIT_ADD


def test_at_p_star_each_pair_gets_its_strata_held_out_fit_at_its_own_position(p_star_run):
    """Per stratum (answer tokens, p*), the digits + T = 100 fit of the planted residuals is exact
    held out (the features lie in its span), so the table's LDs of that basis are those of the
    planted value M[k, p*] @ features(clean a + b) patched at each pair's p*: the same to 1e-4.  The
    wrong method, one fit at each answer position over every prompt whose answer reaches it (the
    strata pooled, as Fig. 5's answer-position fits), patches another value wherever the pool holds
    another stratum: its LDs differ by more than 0.05 on average (at the position only three-token
    answers reach, the pool is the stratum and the two agree).  Each stratum's rows hold its own pairs only, and two-token answers'
    p* = 0 and 1 and three-token answers' p* = 1 and 2 all occur."""
    from helixclock.causal.experiments import ld_table
    from helixclock.patching import Patch
    from helixclock.stages.helix.nested import P_STAR, causal_nested_first_difference, held_out_fits

    engine, pairs, differ, answer, layers, M, _ = p_star_run
    sigma = declared_sigma(0)
    raw = causal_nested_first_difference(engine, pairs, answer, layers, sigma)
    assert set(raw["token"]) == {P_STAR} and set(raw["variable"]) == {"a+b"}
    assert set(zip(raw["answer_tokens"], raw["p_star"])) == {(2, 0), (2, 1), (3, 1), (3, 2)}
    cut = differ.pairs
    clean = np.asarray(cut.meta["clean_a"]) + np.asarray(cut.meta["clean_b"])
    k_cut, at = differ.answer_tokens[differ.order], differ.at
    planted = np.stack([M[kk, j] @ sum_features([s])[0] for s, kk, j in zip(clean, k_cut, at)])
    residuals, ab, k = answer
    pooled = np.zeros_like(planted)  # the wrong method: answer position j fitted over every answer reaching it
    for j in set(at.tolist()):
        fit = np.flatnonzero(k > j)
        uniq, preds, _, _ = held_out_fits(ab[fit].sum(1), residuals[0][fit, j][None], "a+b", sigma)
        rows = np.flatnonzero(at == j)
        pooled[rows] = preds["digits + T=100"][0, np.searchsorted(uniq, clean[rows])].numpy()
    point = Point("resid_pre", 0, ("last",))
    by_value = [[Patch(point, torch.as_tensor(v, dtype=torch.float32)[:, None])] for v in (planted, pooled)]
    reference = differ.table(ld_table(engine.run(cut, by_value), cut, [{"arm": "planted"}, {"arm": "pooled"}]))
    pair_cols = [c for c in raw.columns if c.startswith("pair_")]
    for (kk, j), part in raw[(raw["layer"] == 0) & (raw["term"] == "ld")].groupby(["answer_tokens", "p_star"]):
        ref = reference[(reference["answer_tokens"] == kk) & (reference["p_star"] == j) & (reference["term"] == "ld")]
        got = part.set_index("basis").loc["digits + T=100", pair_cols].to_numpy(float)
        want = ref.set_index("arm").loc["planted", pair_cols].to_numpy(float)
        wrong = ref.set_index("arm").loc["pooled", pair_cols].to_numpy(float)
        inside = ~np.isnan(want)
        assert inside.sum() == ((k_cut == kk) & (at == j)).sum() > 0
        np.testing.assert_array_equal(np.isnan(got), ~inside)  # a pair outside the stratum is NaN
        np.testing.assert_allclose(got[inside], want[inside], atol=1e-4)
        if (k > j).sum() > (k == kk).sum():  # the pool holds other strata: the wrong method patches another value
            assert np.abs(wrong[inside] - want[inside]).mean() > 0.05
        else:  # only three-token answers reach position 2: pooled, it is the stratum
            np.testing.assert_allclose(wrong[inside], want[inside], atol=1e-4)


def test_at_p_star_the_summary_is_by_stratum(p_star_run):
    """nested_summary gives one row per (layer, stratum) of the p* reading, its n_pairs the
    stratum's pairs and its increment the mean over them of LD(digits + T=100) - LD(digits), each
    stratum's T = 100 design two parameters above its digits'; the digits' fit, which misses the
    planted circle, restores another LD than the circle's in every row."""
    from helixclock.stages.helix.nested import causal_nested_first_difference

    engine, pairs, differ, answer, layers, _, _ = p_star_run
    raw = causal_nested_first_difference(engine, pairs, answer, layers, declared_sigma(0))
    table = nested_summary(raw, Resampling(bootstrap=200))
    assert len(table) == 2 * 4 and set(table["token"]) == {"p*"}
    k_cut, at = differ.answer_tokens[differ.order], differ.at
    ld = raw[raw["term"] == "ld"]
    pair_cols = [c for c in raw.columns if c.startswith("pair_")]
    for row in table.itertuples():
        assert row.n_pairs == ((k_cut == row.answer_tokens) & (at == row.p_star)).sum()
        part = ld[
            (ld["layer"] == row.layer) & (ld["answer_tokens"] == row.answer_tokens) & (ld["p_star"] == row.p_star)
        ]
        by = part.set_index("basis")
        diff = by.loc["digits + T=100", pair_cols].to_numpy(float) - by.loc["digits", pair_cols].to_numpy(float)
        np.testing.assert_allclose(row.increment, np.nanmean(diff), rtol=1e-6)
        assert row.rank_t100 == row.rank_digits + 2
    assert (table["ld_t100"] != table["ld_digits"]).all()

"""The MLP stage (section 5.3, Figs. D8, 7): the paper's tables for one-token answers, and for
answers of several tokens the same tables at the last token and at the answer positions, with
TE and DE on one metric (docs/several-tokens.md, "Numbers of several tokens")."""

import numpy as np
import pandas as pd
import pytest
from helpers.digit_models import digit_engine
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table

from helixclock.causal.pairs import draw_pairs
from helixclock.patching import PatchingEngine
from helixclock.patching.metrics import TERMS
from helixclock.stages.last_token.patching import layer_effects
from helixclock.stages.mlps.patching import mlp_effects, mlp_patching
from helixclock.stages.mlps.tables import mlp_summary
from helixclock.stats.statistics import Resampling, pair_columns

ADD = GPTJ_PROMPTS["add"]
LAYERS = 4


@pytest.fixture(scope="module")
def several():
    """A 4-block digit-tokenised Llama (gated MLPs), its engine, pairs of answers of several
    tokens and the correct prompts its fits read (effects well above float noise)."""
    return digit_engine("llama", layers=LAYERS, name="d4", n_pairs=12)


def _te_de(effects: pd.DataFrame, layer: int) -> tuple[np.ndarray, np.ndarray]:
    rows = effects[(effects["layer"] == layer) & (effects["component"] == "MLP")]
    if "term" in rows:
        rows = rows[rows["term"] == "ld"]
    cols = pair_columns(effects)
    return (rows.loc[rows["effect"] == e, cols].to_numpy()[0] for e in ("te", "de"))


def test_one_token_answers_keep_the_papers_tables(tiny_gptj, tokenizer):
    """One-token answers (layout.NumberTokens of the model is false): the one path reads the
    paper's last token alone (column ``reading``, one value), fitting the prompts of its sample;
    the MLP effects are Fig. 6's rows as they are (no MLP measured again), the raw tables have no
    term, and the summary's circuit reads them (tests/unit/test_readings.py holds the fits to the
    paper's definition)."""
    correct = correct_table([(a, b) for a in range(0, 60, 3) for b in range(0, 40, 5)])
    pairs = draw_pairs(correct, 16, 0, tokenizer, GPTJ_PROMPTS["add"], ("a", "b"))
    engine = PatchingEngine(tiny_gptj, progress=False)
    effects = layer_effects(engine, pairs).assign(reading="last token")
    sample = pd.DataFrame({"a": pairs.meta["clean_a"][:12], "b": pairs.meta["clean_b"][:12]})
    sample["answer"] = sample["a"] + sample["b"]
    out = mlp_patching(engine, pairs, sample, ADD, effects, (2, 10), 8)
    for name in ("effects", "topk", "fits", "selection"):
        assert set(out[name].get("reading", [])) <= {"last token"} and "term" not in out[name], name
    assert set(out["fits"]["reading"]) == {"last token"}
    mlp_rows = effects[effects["component"] == "MLP"].sort_values(["effect", "layer"], kind="stable")
    pd.testing.assert_frame_equal(out["effects"], mlp_rows.reset_index(drop=True)[out["effects"].columns])
    topk = out["topk"].set_index("k")
    assert np.allclose(topk.loc[0, pair_columns(out["topk"])].astype(float), 0, atol=1e-5)  # nothing patched
    summary = mlp_summary(out["topk"], out["fits"], out["effects"], 0.9, Resampling(bootstrap=50))
    assert set(summary["mlp_stages"]["reading"]) <= {"last token"}
    assert len(summary["mlp_effects"]) == engine.adapter.n_layers


def test_a_coarser_grid_measures_the_mlps_it_skipped(several):
    """Fig. 6 on every other block leaves MLPs 1 out; the MLP stage measures them on the same
    pairs, and every MLP's TE and DE equal those of the every-block sweep."""
    engine, pairs, _ = several
    every = layer_effects(engine, pairs, "answer")
    coarse = layer_effects(engine, pairs, "answer", layer_step=2)
    assert sorted(coarse["layer"].unique()) == [0, 2, 3]
    got = mlp_effects(engine, pairs, coarse.assign(reading="answer positions"), "answer")
    want = mlp_effects(engine, pairs, every.assign(reading="answer positions"), "answer")
    assert sorted(got["layer"].unique()) == list(range(LAYERS))
    pd.testing.assert_frame_equal(got, want, rtol=1e-4, atol=1e-5)  # batches differ


def both_readings(engine, pairs) -> pd.DataFrame:
    """Fig. 6's raw table at both readings, as the last-token stage writes it."""
    return pd.concat(
        [
            layer_effects(engine, pairs, pos).assign(reading=r)
            for pos, r in (("last", "last token"), ("answer", "answer positions"))
        ],
        ignore_index=True,
    )


def test_the_last_mlps_total_effect_is_its_direct_effect_at_each_reading(several):
    """TE and DE on one metric and positions: nothing reads the last block's MLP but the final
    norm and unembedding, so patching it (TE) and adding its clean - corrupted write to the
    final residual (DE) score the same positions the same way: TE = DE, pair by pair, at the
    last prompt token and at the answer positions (whose TE's end term is then 0)."""
    engine, pairs, correct = several
    out = mlp_patching(engine, pairs, correct, ADD, both_readings(engine, pairs), (2, 10), 8)  # the entry point
    effects = out["effects"]
    assert list(dict.fromkeys(effects["reading"])) == ["last token", "answer positions", "first differing token"]
    for reading in ("last token", "answer positions"):
        part = effects[effects["reading"] == reading]
        assert sorted(part["layer"].unique()) == list(range(LAYERS))
        te, de = _te_de(part, LAYERS - 1)
        assert np.abs(te).max() > 1e-3  # the patch does something
        np.testing.assert_allclose(te, de, rtol=1e-4, atol=1e-4)
        te0, de0 = _te_de(part, 0)
        assert np.abs(te0 - de0).max() > 1e-3  # an early MLP's effect also travels through later blocks
    end = effects.query("reading == 'answer positions' and layer == @LAYERS - 1 and effect == 'te' and term == 'end'")
    assert np.allclose(end[pair_columns(effects)].to_numpy(float), 0, atol=1e-5)
    assert set(out["topk"]["term"]) == set(TERMS) and set(out["topk"]["reading"]) == {"last token", "answer positions"}
    fits = out["fits"][out["fits"]["reading"] != "first differing token"]  # there by stratum, LD only (one token)
    assert set(fits["term"]) == set(TERMS) and set(fits["reading"]) == {"last token", "answer positions"}
    zero = out["topk"].query("k == 0")
    assert np.allclose(zero[pair_columns(zero)].to_numpy(float)[zero["term"].isin(["ld", "ld_raw"])], 0, atol=1e-4)
    r2 = out["fits"].query("term == 'ld'")["r2_helix_sum"]
    assert ((r2 > 0) & (r2 <= 1)).all()


def test_the_summary_reads_each_reading_apart(several):
    """mlp_summary of the readings: each table in a part per reading of the top-k curve, each the
    summary of its reading's raw rows alone (the same numbers as a summary of that reading by
    itself); mlp_strata, every reading by stratum, is the one table read from all of them."""
    engine, pairs, correct = several
    out = mlp_patching(engine, pairs, correct, ADD, both_readings(engine, pairs), (2, 10), 8)
    resampling = Resampling(bootstrap=50)
    both = mlp_summary(out["topk"], out["fits"], out["effects"], 0.8, resampling)
    for reading in ("last token", "answer positions"):
        alone = mlp_summary(
            *(out[n][out[n]["reading"] == reading] for n in ("topk", "fits", "effects")), 0.8, resampling
        )
        for name, table in both.items():
            if name == "mlp_strata":
                continue
            part = table[table["reading"] == reading].reset_index(drop=True)
            matched = [c for c in part.columns if "matched" in c]
            assert (name in ("mlp_effects", "mlp_stages")) == bool(matched) and part[matched].notna().all().all()
            pd.testing.assert_frame_equal(part, alone[name])
    assert len(both["mlp_effects"]) == 2 * LAYERS

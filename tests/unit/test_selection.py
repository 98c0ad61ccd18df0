"""Selection apart from estimation (docs/findings.md, "Findings"): the choices that decide what a model job
runs (the heads it screens in and ranks by TE, the MLPs' top-k order and circuit, the neurons
whose DE it measures) are made on a selection draw of pairs that shares no prompt with the pairs
that measure them.  Known-answer tests of the real selection functions on planted per-pair noise
(2,000 replicates, fixed seeds, pairs drawn through the real ``sampling.pair_indices``), and of
the draws and the jobs' entry points on tiny models."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from helpers.dag import workflow_rules
from helpers.digit_models import digit_engine
from helpers.paths import REPO
from helpers.prompts import GPTJ_PROMPTS
from helpers.tables import correct_table, pairs_table, sampled_correct

from helixclock.causal.experiments import answer_position_fits, total_effects
from helixclock.causal.pairs import (
    MEASURE,
    SCREEN,
    SELECT,
    SELECTION_SEED,
    Selection,
    SelectionDraw,
    draw_pairs,
    job_pairs,
    selection_draw,
    unused_rows,
    used_prompts,
)
from helixclock.fitting.bases import clock_bases
from helixclock.jobs.model_jobs import selection
from helixclock.patching import PatchingEngine, Point
from helixclock.stages.findings.contrasts import MEASURE as FINDINGS_MEASURE
from helixclock.stages.findings.contrasts import Tables, each_split
from helixclock.stages.heads.patching import FittedHeads, HeadSettings, head_reading, rank_by_te, screened_points
from helixclock.stages.heads.readings import head_outputs
from helixclock.stages.mlps.patching import _choice, mlp_te
from helixclock.stages.neurons.jobs import de_pairs
from helixclock.stages.neurons.patching import NeuronSettings
from helixclock.stats.inference import resample, standard_error, t_interval
from helixclock.stats.multiplicity import ALPHA
from helixclock.stats.statistics import pair_columns, raw_table

R = 2000  # replicates of every rate below
B = 1000  # resamples
N = 50  # measuring pairs (the real models' clock stages)
N_SELECT = 50  # the selection draw's (config key clock.selection_pairs)
K = 10  # candidates
ADD = GPTJ_PROMPTS["add"]


def mc_se(rate: float) -> float:
    return float(np.sqrt(rate * (1 - rate) / R))


def prompts_of(table: pd.DataFrame) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for s in ("clean", "corrupted") for a, b in zip(table[f"{s}_a"], table[f"{s}_b"])}


def two_draws(seed: int = 3):
    """The measuring pairs and a selection draw from the correct prompts they leave, as
    :func:`helixclock.causal.pairs.draw_apart` draws them (its pool and its seed)."""
    correct = sampled_correct(seed=seed)
    measured = pairs_table(correct, N, seed)
    pool = correct[[(a, b) not in prompts_of(measured) for a, b in zip(correct["a"], correct["b"])]].reset_index(
        drop=True
    )
    return measured, pairs_table(pool, N_SELECT, seed + SELECTION_SEED)


# -- the real choosers, each on a [K, n] table of one replicate's per-pair values -------------------
POINTS = [Point("head_out", k // 4, ("last",), index=k % 4) for k in range(K)]
LABELS = [{"layer": p.layer, "component": "head", "head": p.index} for p in POINTS]


def by_te(values: np.ndarray) -> int:
    """The top head of Fig. D3's order and of the categorised heads (:func:`rank_by_te`)."""
    ordered, _ = rank_by_te(raw_table(values, LABELS, effect="te"), POINTS)
    return POINTS.index(ordered[0])


def by_screen(values: np.ndarray) -> int:
    """The one head a screen of n = 1 keeps (:func:`screened_points`, largest |mean attribution|)."""
    kept = screened_points(raw_table(values, [{"layer": p.layer, "head": p.index} for p in POINTS]), "last", 1)
    return POINTS.index(kept[0])


def by_mlp_order(values: np.ndarray) -> int:
    """The first MLP of Fig. D8's order, read from a selection table (:func:`_choice`, :func:`mlp_te`)."""
    te = raw_table(values, [{"layer": k, "component": "MLP", "head": -1} for k in range(K)], effect="te")
    table = pd.concat([te.assign(sweep="te"), pd.DataFrame({"sweep": ["topk"], "k": [0], "added": [""]})])
    return int(np.argmax(mlp_te(_choice(table))))


def pair_keys(table: pd.DataFrame) -> list[tuple[int, int, int, int]]:
    return list(zip(table["clean_a"], table["clean_b"], table["corrupted_a"], table["corrupted_b"]))


def apart(measured: pd.DataFrame, selected: pd.DataFrame) -> bool:
    """The guard: the selection draw uses no prompt of the measuring pairs (what
    :func:`helixclock.causal.pairs.draw_apart` draws from: :func:`unused_rows`)."""
    return not prompts_of(measured) & prompts_of(selected)


DRAWS = ("separate", "shared by mistake", "same pairs")


@pytest.mark.parametrize("draw", DRAWS)
@pytest.mark.parametrize(
    "chooser",
    # by_mlp_order builds a selection table a replicate (5 s for 2,000 on 2 cores): in `make test` only
    [by_te, by_screen, pytest.param(by_mlp_order, marks=pytest.mark.slow)],
)
def test_a_choice_on_the_selection_draw_is_measured_without_the_winners_curse(chooser, draw):
    """K = 10 candidates of no effect, unit noise on each pair (a pair in both draws has the same
    value in both): the candidate the real selection function chooses on the selection draw,
    measured on the measuring pairs (t interval on the pair bootstrap), has mean bias about 0 and
    an exclusion rate at most alpha + 2 MC SE where the draw is apart (no prompt shared, hence no
    pair).  Two arms fail that test: a selection draw that shares half its pairs with the
    measuring pairs by mistake (the guard, no prompt of one draw in the other, catches it) and
    choosing on the measuring pairs themselves (``compat: authors``, the paper's)."""
    measured, selected = two_draws()
    if draw == "shared by mistake":  # half the selection draw is measuring pairs
        selected = pd.concat([measured.iloc[: N_SELECT // 2], selected.iloc[N_SELECT // 2 :]], ignore_index=True)
    elif draw == "same pairs":
        selected = measured
    assert apart(measured, selected) == (draw == "separate") and len(selected) == N_SELECT
    rng = np.random.default_rng(11)
    values = rng.normal(0, 1.0, size=(R, K, N))
    select = rng.normal(0, 1.0, size=(R, K, N_SELECT))
    where = {key: i for i, key in enumerate(pair_keys(measured))}
    for j, key in enumerate(pair_keys(selected)):  # a pair in both draws: one value
        if key in where:
            select[:, :, j] = values[:, :, where[key]]
    chosen = np.array([chooser(select[r]) for r in range(R)])
    picked = values[np.arange(R), chosen]  # [R, N]: the chosen candidate on the measuring pairs
    r = resample(picked, None, B, 0)
    se = standard_error(r.boot, r.n_clusters)
    low, high = t_interval(r.estimate, se, r.n_clusters - 1)
    bias, excluded = r.estimate.mean(), ((low > 0) | (high < 0)).mean()
    ok = abs(bias) <= 2 * r.estimate.std() / np.sqrt(R) and excluded <= ALPHA + 2 * mc_se(ALPHA)
    assert ok == (draw == "separate"), (chooser.__name__, draw, bias, excluded)
    if draw == "same pairs":
        assert excluded > 0.15


def test_unused_rows_leave_out_every_prompt_of_the_other_draw():
    correct = sampled_correct()
    measured, _ = two_draws()
    used = prompts_of(measured)
    pool = unused_rows(correct, used)
    assert len(pool) == len(correct) - len(used & set(zip(correct["a"], correct["b"])))
    assert not set(zip(pool["a"], pool["b"])) & used


# -- the draws on a model -----------------------------------------------------------------------------
def test_the_selection_draw_shares_no_prompt_and_compat_authors_has_none(tiny_gptj, tokenizer):
    """One-token prompts: the selection draw (screen and ranked pairs, the ranked a part of the
    screen's) uses no prompt of the measuring pairs, has its own seed, and its job's pairs table
    lists the three draws with the split; compat authors (and 0 pairs) keep the paper's."""
    correct = correct_table([(a, b) for a in range(0, 60, 2) for b in range(0, 40, 3)])
    measured = draw_pairs(correct, 16, 0, tokenizer, ADD, ("a", "b"))
    draw = selection_draw(tiny_gptj, correct, measured, Selection(n_pairs=8, attribution_pairs=20), 0, ADD, ("a", "b"))
    assert len(draw.screen) == 20 and len(draw.pairs) == 8
    assert not used_prompts(draw.screen) & used_prompts(measured)
    assert used_prompts(draw.pairs) <= used_prompts(draw.screen)
    table = job_pairs(measured, draw)
    assert table.groupby("draw").size().to_dict() == {MEASURE: 16, SCREEN: 20, SELECT: 8}
    assert set(table["split"]) == {"separate draw"} and FINDINGS_MEASURE == MEASURE
    for off in (Selection("authors"), Selection(n_pairs=0)):
        assert selection_draw(tiny_gptj, correct, measured, off, 0, ADD, ("a", "b")) is None
    assert set(job_pairs(measured)["split"]) == {"same pairs"} and set(job_pairs(measured)["draw"]) == {MEASURE}


@pytest.fixture(scope="module")
def digits():
    """A 3-block digit-tokenised Llama, its engine, measuring pairs and a selection draw."""
    grid = [(a, b) for a in (3, 7, 12, 45, 61, 88, 23, 9) for b in (5, 21, 34, 56, 70)]
    engine, pairs, correct = digit_engine("llama", grid=grid)
    draw = selection_draw(engine.model, correct, pairs, Selection(n_pairs=6, attribution_pairs=10), 0, ADD, ("a", "b"))
    return engine, pairs, correct, draw


def test_heads_are_screened_and_ranked_on_the_selection_draw(digits):
    """With a selection draw the screen reads its screen pairs, the top-k sweep follows the heads'
    TE on its ranked pairs, and everything else is measured on the measuring pairs; a selection
    draw that is the measuring pairs themselves gives the paper's tables exactly."""
    engine, pairs, correct, draw = digits
    H, ab, k = head_outputs(engine, correct, ADD)
    fits = answer_position_fits(H, ab, k, clock_bases((2, 10)), 8)
    ad = engine.adapter
    index = {(la, h): la * ad.n_heads + h for la in range(ad.n_layers) for h in range(ad.n_heads)}
    fitted = FittedHeads(fits[:1], index, pairs)
    settings = HeadSettings(top_heads=3, mixed_heads=1, periods=(2, 10), pca_components=8, head_screen=6)
    out = head_reading(engine, pairs, fitted, "last", settings, draw)
    assert len(pair_columns(out["screen"])) == len(draw.screen)
    assert len(pair_columns(out["effects"])) == len(pairs) == len(pair_columns(out["topk"]))
    kept = out["screen"].loc[out["screen"]["screened"], ["layer", "head"]]
    points = [Point("head_out", int(la), ("last",), index=int(h)) for la, h in kept.to_numpy()]
    te_select = total_effects(engine, draw.pairs, points)
    order, _ = rank_by_te(te_select, points)
    added = out["topk"][(out["topk"]["k"] >= 1) & (out["topk"]["term"] == "ld")].sort_values("k")["added"]
    assert added.tolist() == [p.name for p in order]
    paper = head_reading(engine, pairs, fitted, "last", settings)
    same = head_reading(engine, pairs, fitted, "last", settings, SelectionDraw(pairs, pairs))
    for name in ("effects", "topk", "categories", "fits"):
        pd.testing.assert_frame_equal(same[name], paper[name], rtol=1e-4, atol=1e-5, check_dtype=False)


def test_findings_cluster_the_measuring_draw_and_say_the_recorded_split():
    """A job's prompts table holds both draws: a raw table's pair columns are the measuring draw's
    (each its own cluster; a column beyond them is an error), and an ``each`` finding's split is the one its job recorded
    ("same pairs" under compat: authors), else the registry's."""
    measured, selected = two_draws()
    pairs = pd.concat(
        [
            measured.assign(pair=[f"pair_{i}" for i in range(N)], draw=MEASURE, split="separate draw"),
            selected.assign(pair=[f"pair_{i}" for i in range(N_SELECT)], draw=SELECT, split="separate draw"),
        ]
    )
    frame = raw_table(np.zeros((1, N)), [{"layer": 0}])
    tables = Tables({"t": frame}, {"t": pairs, "lst": pairs})
    clusters, unit = tables.clusters("t")
    assert unit == "pairs" and clusters.tolist() == list(range(N))
    with pytest.raises(ValueError, match="not in its prompts table"):  # the measuring draw's pairs, not the selection's
        Tables({"t": raw_table(np.zeros((1, N + 1)), [{"layer": 0}])}, {"t": pairs}).clusters("t")
    finding = {"each": {"table": "lst", "chosen_by": "the run", "split": "same pairs"}}
    assert each_split(tables, finding) == "the run's choice, on a separate draw of pairs"
    authors = Tables({"t": frame}, {"lst": pairs.assign(split="same pairs")})
    assert each_split(authors, {"each": {**finding["each"], "split": "separate draw"}}).endswith("same pairs")
    declared = {"each": {"table": "lst", "chosen_by": "the run", "split": "separate draw"}}
    assert each_split(Tables({}, {}), declared).endswith("separate draw of pairs")
    assert each_split(Tables({}, {}), {"each": {"table": "lst"}}) == "fixed"


def test_the_neuron_de_is_measured_apart_from_the_attribution_pairs(tiny_gptj, tokenizer):
    """The DE pairs share no prompt with the attribution pairs that chose the neurons; under
    compat authors they are the first attribution pairs (the paper's)."""
    correct = correct_table([(a, b) for a in range(0, 60, 2) for b in range(0, 40, 3)])
    attribution = draw_pairs(correct, 30, 0, tokenizer, ADD, ("a", "b"))
    engine = PatchingEngine(tiny_gptj, progress=False)
    settings = NeuronSettings(attribution_pairs=30, de_pairs=12)
    measured, table = de_pairs(engine, correct, attribution, ADD, settings, Selection())
    assert len(measured) == 12 and not used_prompts(measured) & used_prompts(attribution)
    assert table.groupby("draw").size().to_dict() == {MEASURE: 12, SELECT: 30}
    paper, table = de_pairs(engine, correct, attribution, ADD, settings, Selection("authors"))
    assert np.array_equal(paper.clean.numpy(), attribution.clean[:12].numpy()) and set(table["split"]) == {"same pairs"}


def test_the_jobs_that_choose_read_their_selection_from_the_config_and_registry(tmp_path):
    """Rule params ``selection`` (config keys compat and clock.selection_*, the model's registry entry
    overriding them: the real models rank on 50 pairs, the toys on 200) of every job that chooses what
    it runs, and the job's Selection built from it."""
    rules = workflow_rules(tmp_path, configfile=REPO / "config" / "config.yaml")
    for rule in ("head_patching", "mlp_patching", "neuron_attribution"):
        settings = rules[rule].params.selection
        for model, n in (("smollm2-135m", 50), ("toy-gptj", 200), ("gptj", 100)):
            given = settings(SimpleNamespace(model=model))
            assert given == {"compat": "corrected", "n_pairs": n, "attribution_pairs": 200}, (rule, model)
            job = SimpleNamespace(params=SimpleNamespace(selection=given))
            assert selection(job) == Selection("corrected", n, 200), (rule, model)

"""The helix stage on a tiny model: seeded controls, one split for fitting and patching."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.prompts import GPTJ_PROMPTS

import helixclock.stages.helix.patching as hp
from helixclock.causal.pairs import Selection
from helixclock.fitting.bases import FitSettings, standard_bases
from helixclock.fitting.fits import fit_token
from helixclock.jobs.cache_writer import write_residual_cache
from helixclock.patching import PatchingEngine
from helixclock.project.cache import read_residual_cache
from helixclock.prompts.sampling import split_values
from helixclock.stages.helix.tables import helix_summary
from helixclock.stats.statistics import Resampling


@pytest.fixture(scope="module")
def stage_inputs(tiny_gptj, tmp_path_factory):
    a, b = np.meshgrid(np.arange(40), np.arange(8), indexing="ij")
    a, b = a.ravel(), b.ravel()
    path = tmp_path_factory.mktemp("cache") / "r.h5"
    write_residual_cache(tiny_gptj, GPTJ_PROMPTS["add"], a, b, path, largest_bare_number=10)
    cache = read_residual_cache(path)
    tok = tiny_gptj.tokenizer
    correct = pd.DataFrame(
        {
            "a": cache.ab[:, 0],
            "b": cache.ab[:, 1],
            "answer": cache.ab.sum(1),
            "answer_token": [tok.convert_tokens_to_ids(str(x)) for x in cache.ab.sum(1)],
        }
    )
    H = torch.from_numpy(cache.a).transpose(0, 1)
    fits = fit_token(H, cache.ab[:, 0], standard_bases(), 20)
    return cache, correct, fits


def run(tiny_gptj, stage_inputs, seed=3):
    cache, correct, fits = stage_inputs
    raw = hp.helix_patching(
        PatchingEngine(tiny_gptj, progress=False),
        correct,
        cache,
        fits,
        GPTJ_PROMPTS["add"],
        FitSettings(pca_components=20),
        n_pairs=24,
        seed=seed,
        test_fraction=0.2,
    )
    return helix_summary(raw, Resampling(bootstrap=50, seed=seed))


def test_one_seeded_split_fits_and_patches(tiny_gptj, stage_inputs, monkeypatch):
    fitted = []
    real_fit = hp.fit_token
    monkeypatch.setattr(
        hp, "fit_token", lambda H, values, *a, **k: fitted.append(values) or real_fit(H, values, *a, **k)
    )
    drawn = []
    real_draw = hp.model_pairs
    monkeypatch.setattr(hp, "model_pairs", lambda *a, **k: drawn.append(k.get("clean_a")) or real_draw(*a, **k))
    out = run(tiny_gptj, stage_inputs)
    train_a, test_a = split_values(stage_inputs[0].ab[:, 0], 0.2, 3)
    assert len(test_a) == 8 and not set(train_a) & set(test_a)
    split = out["controls"][out["controls"]["control"] == "train/test split"]
    assert split["test_a"].iloc[0] == " ".join(map(str, test_a))
    # the fit of the split control saw only training a; its pairs' clean a are the held-out ones
    assert set(np.asarray(fitted[0])) == set(train_a)
    assert set(drawn[1]) == set(test_a)
    assert set(split["method"]) == {"layer", "pca", "helix", "circle", "poly"}


def test_stage_is_deterministic_and_complete(tiny_gptj, stage_inputs):
    a, b = run(tiny_gptj, stage_inputs), run(tiny_gptj, stage_inputs)
    for key in ("sweep", "best", "controls", "ablation"):
        pd.testing.assert_frame_equal(a[key], b[key])
    L = tiny_gptj.adapter.n_layers
    assert len(a["sweep"]) == L * (1 + 4 + 15 + 15 + 4)  # layer, PCA k=1..4, helix, circle, poly
    assert set(a["best"]["k"]) == {1, 2, 3, 4} and set(a["best"]["method"]) == {"helix", "circle"}
    assert set(a["controls"]["control"]) == {"train/test split", "shuffled a", "b token"}
    assert set(a["ablation"]["method"]) == {"helix subspace", "entire h_a"}
    strata = a["strata"][a["strata"]["method"] == "layer"]  # every pair in one stratum, per row
    assert (strata.groupby(["layer"])["n_pairs"].sum() == 24).all()
    assert (a["sweep"]["ld_low"] <= a["sweep"]["ld_mean"] + 1e-6).all()
    assert not a["sweep"]["ld_mean"].equals(run(tiny_gptj, stage_inputs, seed=4)["sweep"]["ld_mean"])


def test_without_period_subsets_the_sweep_patches_what_fig4_plots(tiny_gptj, stage_inputs):
    """Registry key ``period_subsets: false``: per layer the layer patch, the PCA of 2|T| + 1 = 9
    components and helix (9 parameters with the constant), circle (8) and polynomial (9) with
    every period, each the same numbers as in the sweep over every subset."""
    cache, correct, fits = stage_inputs
    args = (PatchingEngine(tiny_gptj, progress=False), correct, cache, fits, GPTJ_PROMPTS["add"])
    kwargs = dict(settings=FitSettings(pca_components=20), n_pairs=24, seed=3, test_fraction=0.2)
    every = hp.helix_patching(*args, **kwargs)["sweep"]
    plotted = hp.helix_patching(*args, **kwargs, period_subsets=False)["sweep"]
    L = tiny_gptj.adapter.n_layers
    assert len(plotted) == L * 5
    per_layer = plotted.fillna({"n_params": 0}).groupby(["method", "n_params"]).size()
    assert per_layer.to_dict() == {("circle", 8): L, ("helix", 9): L, ("layer", 0): L, ("pca", 9): L, ("poly", 9): L}
    assert set(plotted.loc[plotted["method"].isin(["helix", "circle"]), "periods"]) == {"2,5,10,100"}
    keys = ["layer", "method", "periods", "n_params"]
    same = plotted.merge(every, on=keys, suffixes=("", "_every"))
    assert len(same) == len(plotted)
    pairs = [c for c in plotted if c.startswith("pair_")]
    np.testing.assert_allclose(same[pairs].to_numpy(), same[[f"{c}_every" for c in pairs]].to_numpy(), rtol=1e-5)


def test_strata_summarise_each_group_of_pairs_apart():
    """helix/strata.csv: a sweep row whose pairs score 1 where only a's units digit changes and
    3 where its tens do has stratum means 1 and 3, each over its own pairs; the strata come
    from the clean and corrupted a (helixclock.prompts.numbers.changed_places)."""
    from helixclock.prompts.numbers import changed_places
    from helixclock.stages.helix.tables import strata_table

    clean, corrupted = [23, 23, 41, 57, 7, 120], [27, 63, 81, 50, 3, 310]
    strata = changed_places(clean, corrupted)
    assert strata == ["units", "tens", "tens", "units", "units", "hundreds+tens"]
    assert changed_places([5], [5]) == ["none"]
    pairs = pd.DataFrame({"pair": [f"pair_{i}" for i in range(6)], "stratum": strata})
    values = {"units": 1.0, "tens": 3.0, "hundreds+tens": 5.0}
    sweep = pd.DataFrame({"layer": [0, 1], "method": ["helix", "layer"]})
    for i, s in enumerate(strata):
        sweep[f"pair_{i}"] = [values[s], 2 * values[s]]
    out = strata_table(sweep, pairs, Resampling(bootstrap=20, seed=0)).set_index(["stratum", "layer"])
    assert out.loc[("units", 0), "ld_mean"] == 1.0 and out.loc[("units", 1), "ld_mean"] == 2.0
    assert out.loc[("tens", 0), "ld_mean"] == 3.0 and out.loc[("hundreds+tens", 1), "ld_mean"] == 10.0
    assert out.xs(0, level="layer")["n_pairs"].to_dict() == {"hundreds+tens": 1, "tens": 2, "units": 3}


def test_the_best_layer_is_swept_on_a_selection_draw_apart_from_the_measuring_pairs(tiny_gptj, stage_inputs):
    """sweep_selection: the helix of every period patched at every layer on the selection draw
    (what Table 1's best layer is chosen by, README "Findings"), with the sweep's labels; the
    pairs table records both draws, which share no prompt.  Without a selection (compat:
    authors) the table has the labels and no rows."""
    cache, correct, fits = stage_inputs
    args = (PatchingEngine(tiny_gptj, progress=False), correct, cache, fits, GPTJ_PROMPTS["add"])
    kw = dict(settings=FitSettings(pca_components=20), n_pairs=24, seed=3, period_subsets=False)
    raw = hp.helix_patching(*args, **kw, selection=Selection(n_pairs=16))
    chosen_on = raw["sweep_selection"]
    assert set(chosen_on["method"]) == {"helix"} and set(chosen_on["periods"]) == {"2,5,10,100"}
    assert sorted(chosen_on["layer"]) == sorted(raw["sweep"].loc[raw["sweep"]["method"] == "helix", "layer"])
    assert [c for c in chosen_on.columns if c.startswith("pair_")] == [f"pair_{i}" for i in range(16)]
    pairs = raw["pairs"]
    assert pairs["draw"].value_counts().to_dict() == {"measure": 24, "selection": 16}
    prompts = {
        d: {(r[f"{s}_a"], r[f"{s}_b"]) for _, r in pairs[pairs["draw"] == d].iterrows() for s in ("clean", "corrupted")}
        for d in ("measure", "selection")
    }
    assert not prompts["measure"] & prompts["selection"]
    authors = hp.helix_patching(*args, **kw, selection=Selection(compat="authors"))
    assert authors["sweep_selection"].empty and list(authors["sweep_selection"].columns) == list(
        chosen_on.columns[~chosen_on.columns.str.startswith("pair_")]
    )

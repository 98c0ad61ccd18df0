"""The differences from the authors' code (the docs/differences.md, "Differences from the authors' code"), each with a known answer."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.prompts import LAST, make_pairs

from helixclock.fitting.bases import Basis, standard_bases
from helixclock.fitting.fits import fit_bases
from helixclock.fitting.fourier import fourier_spectrum
from helixclock.patching import Patch, PatchingEngine, Point
from helixclock.stages.heads.patching import ab_head_patches
from helixclock.stages.helix.tables import authors_subsets, best_subset_table
from helixclock.stages.structure.analysis import pca_first_component


def test_authors_polynomial_loses_rank_as_their_least_squares_did():
    """Raw powers a^1..a^9 of a in 0..99 (condition number ~1e18): least squares keeps only
    some of the 10 directions (numpy's cutoff 6, scipy's default - what scikit-learn's
    LinearRegression used for the authors - 7) and the authors-mode fit is exactly that
    solution; the scaled basis keeps all 10 and fits at least as well."""
    import scipy.linalg

    a = np.arange(100)
    raw, scaled = Basis("poly", degree=9, scaled=False), Basis("poly", degree=9)
    B = raw(a)
    assert np.linalg.cond(B) > 1e15
    rng = np.random.default_rng(0)
    H = torch.tensor(rng.normal(size=(1, 100, 12)))
    H[0, :, 0] += torch.tensor(a / 10.0)  # a line along one dimension, plus noise
    fits = fit_bases(H, a, [raw, scaled], n_components=12)
    P = fits.pca.project(H.double())[0].numpy()
    theirs, _, rank, _ = scipy.linalg.lstsq(B, P)  # scipy's default cutoff
    assert np.linalg.lstsq(B, P, rcond=None)[2] < rank < B.shape[1] == np.linalg.matrix_rank(scaled(a))
    np.testing.assert_allclose(B @ fits.coef_pca[0, 0, :10].numpy(), B @ theirs, atol=1e-9 * np.abs(P).max())
    exact = scaled(a) @ np.linalg.lstsq(scaled(a), P, rcond=None)[0]
    np.testing.assert_allclose(scaled(a) @ fits.coef_pca[1, 0, :10].numpy(), exact, atol=1e-8)
    r2_raw, r2_scaled = fits.r2[:, 0].tolist()
    assert r2_scaled >= r2_raw


def test_poly_basis_follows_compat():
    corrected = [b for b in standard_bases() if b.kind == "poly"]
    authors = [b for b in standard_bases(compat="authors") if b.kind == "poly"]
    assert all(b.scaled for b in corrected) and not any(b.scaled for b in authors)
    assert np.allclose(authors[0](np.array([2.0]))[0, :3], [2, 4, 8])
    with pytest.raises(ValueError, match="compat.*allowed values corrected, authors"):
        standard_bases(compat="paper")


def test_authors_subsets_are_the_last_combination():
    periods = (2, 5, 10, 100)
    assert [authors_subsets(periods, k) for k in (1, 2, 3, 4)] == [(100,), (10, 100), (5, 10, 100), (2, 5, 10, 100)]
    rows = []
    for k in (1, 2):
        for i, per in enumerate(__import__("itertools").combinations(periods, k)):
            rows.append({"method": "helix", "periods": ",".join(map(str, per)), "ld_mean": 10.0 - i, "layer": 0})
    sweep = pd.DataFrame(rows)
    corrected, authors = best_subset_table(sweep), best_subset_table(sweep, "authors")
    assert list(corrected["periods"]) == ["2", "2,5"]  # the true best: first in this sweep
    assert list(authors["periods"]) == ["100", "10,100"] == list(corrected["authors_periods"])
    assert list(authors["best_periods"]) == ["2", "2,5"]


def test_pc1_is_taken_after_standardising_every_dimension():
    """One dimension with a huge variance but no order dominates a plain PCA; z-scored, PC1
    follows the many dimensions that grow with a."""
    rng = np.random.default_rng(1)
    a = np.arange(100)
    X = np.outer(a, np.ones(10)) / 100 + 0.05 * rng.normal(size=(100, 10))
    X = np.column_stack([X, 1000 * rng.normal(size=100)])
    pc1, _ = pca_first_component(X)
    assert np.corrcoef(pc1, a)[0, 1] > 0.99
    plain = np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
    assert abs(plain[-1]) > 0.99  # without standardising, PC1 is the noisy dimension


def test_authors_spectrum_drops_the_nyquist_bin_for_an_even_count():
    a = np.arange(361)
    X = np.stack([np.cos(np.pi * a), np.cos(2 * np.pi * a / 10)], 1)  # T = 2 and T = 10
    periods, mag = fourier_spectrum(X[:360])
    assert periods[np.argmax(mag)] == 2.0  # corrected: the T = 2 bin is there
    p_auth, power = fourier_spectrum(X[:360], "authors")
    assert len(p_auth) == len(periods) - 1 and 2.0 not in p_auth  # dropped
    assert np.isclose(p_auth[np.argmax(power)], 10.0)
    p_odd, _ = fourier_spectrum(X, "authors")  # 361 numbers: no Nyquist bin to drop
    assert len(p_odd) == 180 and not np.isclose(p_odd, 2.0).any()
    # uncentred: a constant offset leaves the corrected spectrum alone
    np.testing.assert_allclose(fourier_spectrum(X[:360] + 5)[1], mag, atol=1e-9)


def test_a_b_heads_act_only_indirectly(tiny_gptj):
    """A last-layer head of a parallel block reaches the logits only directly: patched with a
    new output and its direct path taken back out, it changes nothing (LD 0); without the
    take-back it does."""
    pairs = make_pairs(tiny_gptj)
    engine = PatchingEngine(tiny_gptj, progress=False)
    L = tiny_gptj.adapter.n_layers
    point = Point("head_out", L - 1, (LAST,), index=1)
    site = Point("head_out", L - 1, (LAST,))  # every head of the layer: the head's context
    corrupted = engine.corrupted_values(pairs, [site])[site]
    new = engine.clean_values(pairs, [point])[point] * 3.0
    final = Point("resid_pre", L, (LAST,))
    ld = engine.run(pairs, [ab_head_patches(engine, point, new, corrupted, final), [Patch(point, new)]]).metric
    assert ld[1].abs().max() > 1e-3
    assert ld[0].abs().max() < 1e-5


def test_gptj_runs_in_bfloat16_where_the_device_has_it(monkeypatch):
    """Item 10: the authors ran GPT-J in bfloat16; float16 stays float16 only on a GPU."""
    from helixclock.lm.config import load_registry
    from helixclock.lm.models import run_dtype

    assert load_registry("config/models.yaml")["gptj"]["dtype"] == "bfloat16"
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert run_dtype("bfloat16", cpu) == torch.bfloat16
    assert run_dtype("float16", cpu) == torch.float32
    assert run_dtype("float16", gpu) == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    assert run_dtype("bfloat16", gpu) == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert run_dtype("bfloat16", gpu) == torch.bfloat16


def test_llama_prompts_keep_the_authors_space_before_the_newline():
    from helixclock.lm.config import load_registry

    prompts = load_registry("config/models.yaml")["llama"]["prompts"]
    assert prompts["add"] == "The following is a correct addition problem. \n{a}+{b}="
    assert all(" \n" in p for p in prompts.values())

"""Known-answer tests: a helix planted in synthetic activations is found and recovered."""

import numpy as np
import pytest
import torch

from helixclock.fitting.bases import Basis, period_subsets, standard_bases
from helixclock.fitting.fits import column_cosine, fit_bases, fit_pca, helix_projection, subspace_projector
from helixclock.fitting.fourier import fourier_spectrum, spectrum_peaks
from helixclock.fitting.helix_files import load_helix_fits, save_helix_fits
from helixclock.stages.helix.tables import best_subsets
from helixclock.stages.structure.analysis import delta_n_distance, distance_and_cosine, line_fit, pca_first_component

D = 48
PLANTED = (2, 5, 10, 100)


def planted(a, periods=PLANTED, noise=0.01, seed=0, d=D, layers=2, weights=None):
    """h(a) = B(a) C + noise with orthogonal, known C; returns (H [L, n, d], C_true [L, m, d])."""
    rng = np.random.default_rng(seed)
    basis = Basis("helix", tuple(periods))
    B = basis(a)
    m = B.shape[1]
    Cs, Hs = [], []
    for _ in range(layers):
        Q, _ = np.linalg.qr(rng.normal(size=(d, m)))
        scale = np.array(weights if weights is not None else np.linspace(1.0, 3.0, m))
        C = (Q * scale).T  # rows orthogonal, norms = scale
        Cs.append(C)
        Hs.append(B @ C + noise * rng.normal(size=(len(a), d)))
    return torch.tensor(np.stack(Hs)), torch.tensor(np.stack(Cs))


def test_fourier_finds_the_planted_periods():
    a = np.arange(300)  # 300 numbers: every planted period is an exact frequency
    weights = [0.02, 2, 0, 2, 2, 2, 2, 2, 2, 1]  # small linear ramp, sin(pi a) is zero anyway
    H, _ = planted(a, layers=1, noise=0.05, weights=weights)
    periods, mag = fourier_spectrum(H[0].numpy())
    assert {round(float(periods[i])) for i in np.argsort(-mag)[:4]} == {2, 5, 10, 100}  # the 4 largest bins
    peaks = spectrum_peaks(periods, mag, 6)
    assert {round(p["period"]) for p in peaks[:4]} == {2, 5, 10, 100}
    assert peaks[3]["relative_to_median"] > 10


def test_fourier_360_has_period_2_but_361_smears_it():
    a = np.arange(361)
    H, _ = planted(a, periods=(2,), layers=1, noise=0.0, weights=[0.0, 1.0, 0.0, 0.0])
    p360, m360 = fourier_spectrum(H[0, :360].numpy())
    p361, m361 = fourier_spectrum(H[0].numpy())
    assert p360[np.argmax(m360)] == 2.0
    assert not np.isclose(p361, 2.0).any()  # 361 numbers have no frequency at exactly T = 2


def test_points_on_a_line_give_one_component_and_distances_linear_in_n():
    a = np.arange(100)
    X = np.outer(a, np.ones(5)) + 0.01 * np.random.default_rng(0).normal(size=(100, 5))
    pc1, ratio = pca_first_component(X)
    slope, _, r2 = line_fit(a, pc1)
    assert slope > 0 and r2 > 0.999 and ratio > 0.99
    dist, cos = distance_and_cosine(X)
    assert dist.shape == (100, 100) and np.allclose(np.diag(dist), 0, atol=1e-5)
    assert np.isclose(dist[3, 10], np.sqrt(5) * 7, rtol=1e-2) and np.allclose(np.diag(cos), 1)
    dns, means = delta_n_distance(X, a_max=9, dn_max=20)
    assert np.allclose(means, np.sqrt(5) * dns, rtol=1e-2)  # linear in dn


def test_fit_recovers_the_planted_helix():
    a = np.repeat(np.arange(100), 3)  # every a several times, as in the a+b prompts
    H, C_true = planted(a)
    bases = standard_bases()
    fits = fit_bases(H, a, bases)
    full = Basis("helix", PLANTED)
    r2 = fits.r2[fits.index(full)]
    assert (r2 > 0.999).all()
    # every other basis fits worse than the planted one
    others = torch.stack([fits.r2[fits.index(b)] for b in bases if b != full])
    assert (others.max(0).values < r2 - 1e-3).all()
    # the fitted C has the planted columns (order a, cos, sin, ...); sin(2 pi a / 2) is
    # zero on integers, so that column is not identifiable and must come out as zero
    C = fits.coefficients(full)  # [L, m, d]
    ident = [i for i, c in enumerate(full.columns()[:-1]) if c != "sin a T=2"]
    for l in range(2):
        torch.testing.assert_close(C[l, ident], C_true[l, ident].float(), atol=0.02, rtol=0.02)
        assert C[l, full.columns().index("sin a T=2")].norm() < 1e-6
        # the span of the fitted directions is the planted span
        P_true = subspace_projector(C_true[l, ident].float(), drop_const=False)
        P_fit = subspace_projector(C[l, ident], drop_const=False)
        assert torch.linalg.matrix_norm(P_fit - P_true) < 0.06  # noise 0.01 per entry
    # predictions at the data reproduce h, and projection through C^+ recovers B(a)
    pred = fits.predict(full, np.arange(100))
    torch.testing.assert_close(pred[0], H[0, ::3].float(), atol=0.05, rtol=0)
    Ci = C[0, ident]
    coords = helix_projection(Ci, H[0, ::3].float() - pred[0].mean(0))
    expected = torch.tensor(full(np.arange(100))[:, ident])
    torch.testing.assert_close(coords, expected - expected.mean(0), atol=0.04, rtol=0)  # 4 sigma of noise


def test_best_subset_per_k_is_the_planted_strongest():
    a = np.arange(100)
    # period 10 strongest, then 2; 5 and 100 absent
    H, _ = planted(a, periods=(2, 10), noise=0.01, weights=[1.0, 3.0, 0.0, 6.0, 6.0, 1.0])
    fits = fit_bases(H, a, standard_bases())
    r2 = {(b.kind, b.periods): float(fits.r2[fits.index(b)].mean()) for b in fits.bases if b.kind != "poly"}
    best = best_subsets(r2)
    assert best[("helix", 1)] == (10,)
    assert best[("helix", 2)] == (2, 10)
    assert set(best[("helix", 3)]) >= {2, 10}


def test_best_subsets_compares_every_candidate():
    # the authors' loop kept its first candidate; the best one here is in the middle
    scores = {
        ("helix", (2,)): 1.0,
        ("helix", (5,)): 3.0,
        ("helix", (10,)): 2.0,
        ("helix", (100,)): 0.5,
        ("circle", (2, 5)): 0.1,
        ("circle", (2, 10)): 0.9,
        ("circle", (5, 100)): 0.3,
    }
    best = best_subsets(scores)
    assert best == {("helix", 1): (5,), ("circle", 2): (2, 10)}


def test_bases_have_the_papers_parameter_counts():
    assert len(period_subsets()) == 15
    h = Basis("helix", (2, 5, 10, 100))
    assert h.n_params == 9 and h.columns()[0] == "a" and h.columns()[-1] == "const"
    assert Basis("circle", (2, 5, 10, 100)).n_params == 8
    assert Basis("poly", degree=9).n_params == 9
    three = Basis("helix", (2, 5, 10, 100), variables=("a", "b", "a+b"))
    assert three.n_params == 27  # the paper's 27-parameter helix(a,b,a+b)
    B = three({"a": np.array([1, 2]), "b": np.array([3, 4]), "a+b": np.array([4, 6])})
    assert B.shape == (2, 28) and np.allclose(B[:, 9], [3 / 99, 4 / 99]) and np.allclose(B[:, 18], [4 / 198, 6 / 198])
    with pytest.raises(ValueError, match="allowed: helix, circle, poly"):
        Basis("spiral", (2,))


def test_pca_caps_components_at_distinct_rows():
    rng = np.random.default_rng(0)
    distinct = torch.tensor(rng.normal(size=(1, 20, D)))
    H = distinct.repeat_interleave(5, dim=1)  # 20 distinct rows, each 5 times (like the a token)
    pca = fit_pca(H, 100)
    assert pca.components.shape[1] == 19  # 20 distinct rows span 19 directions around their mean
    assert pca.project(H, 9).shape == (1, 100, 9)


def test_save_and_load_fits(tmp_path):
    a = np.arange(100)
    H, _ = planted(a)
    fits = fit_bases(H, a, standard_bases())
    save_helix_fits(tmp_path / "f.h5", fits, model="synthetic")
    back = load_helix_fits(tmp_path / "f.h5")
    assert [b.name for b in back.bases] == [b.name for b in fits.bases]
    torch.testing.assert_close(back.r2, fits.r2)
    full = Basis("helix", PLANTED)
    torch.testing.assert_close(back.predict(full, a), fits.predict(full, a), atol=1e-4, rtol=1e-4)
    keep = [i for i, c in enumerate(full.columns()[:-1]) if c != "sin a T=2"]
    cos = column_cosine(back.coefficients(full)[0, keep])
    assert (cos - torch.eye(len(keep))).abs().max() < 0.05  # planted columns are orthogonal


def test_weighted_unique_rows_equal_the_full_fit():
    from helixclock.fitting.fits import unique_rows

    rng = np.random.default_rng(1)
    a = rng.integers(0, 100, 500)
    H, _ = planted(np.arange(100), noise=0.05)
    H_rows = H[:, torch.as_tensor(a)]  # identical rows for the same a, like the a token
    full = fit_bases(H_rows, a, standard_bases())
    vals, H_u, w = unique_rows(a, H_rows)
    weighted = fit_bases(H_u, vals, standard_bases(), weights=w)
    torch.testing.assert_close(weighted.r2, full.r2, atol=1e-5, rtol=1e-5)
    basis = Basis("helix", PLANTED)
    torch.testing.assert_close(
        weighted.predict(basis, np.arange(100)), full.predict(basis, np.arange(100)), atol=1e-4, rtol=1e-4
    )
    torch.testing.assert_close(weighted.pca.mean, full.pca.mean)


def test_projector_ignores_zero_columns():
    C = torch.zeros(4, 6)
    C[0, 0], C[2, 1] = 2.0, 3.0  # row 1 is zero (like sin T=2), row 3 is the constant
    P = subspace_projector(C)
    torch.testing.assert_close(P, torch.diag(torch.tensor([1.0, 1, 0, 0, 0, 0])))


def test_pca_components_follow_the_richest_layer():
    a = np.arange(100)
    H, _ = planted(a, layers=2, noise=0.0)
    H[0] = H[0, :1].expand(100, -1)  # layer 0 the same for every row (like the "=" token's embedding)
    pca = fit_pca(H, 27)
    assert pca.components.shape[1] == 8  # the helix's rank at layer 1 (10 columns less the
    # constant and sin(pi a) = 0), not the single row of layer 0


def test_pca_and_least_squares_agree_with_scikit_learn():
    """scikit-learn is the reference: the batched PCA of every layer and the least squares of
    every basis equal sklearn's PCA and LinearRegression on the same data."""
    from sklearn.decomposition import PCA as SkPCA
    from sklearn.linear_model import LinearRegression

    a = np.repeat(np.arange(100), 2)
    H, _ = planted(a, noise=0.1, layers=2)
    bases = standard_bases()
    fits = fit_bases(H, a, bases, n_components=12)
    for layer in range(2):
        X = H[layer].numpy()
        sk = SkPCA(n_components=12).fit(X)
        ours = fits.pca.components[layer].numpy()
        # components agree up to sign; so do the coordinates
        signs = np.sign((ours * sk.components_).sum(1))
        np.testing.assert_allclose(ours * signs[:, None], sk.components_, atol=1e-5)
        np.testing.assert_allclose(fits.pca.variance[layer].numpy(), sk.explained_variance_, rtol=1e-5)
        P = fits.pca.project(H.double())[layer].numpy()
        np.testing.assert_allclose(P * signs, sk.transform(X), atol=1e-5)
        for s, basis in enumerate(bases):
            B = basis(a)
            # an exact solve: scikit-learn 1.9's default tol (1e-6) would drop the smallest
            # direction of the scaled degree-9 polynomial (singular values down to ~1e-6)
            ref = LinearRegression(fit_intercept=False, tol=1e-12).fit(B, P)
            m = B.shape[1]
            np.testing.assert_allclose(B @ fits.coef_pca[s, layer, :m].numpy(), ref.predict(B), atol=1e-5)
            r2 = 1 - ((P - ref.predict(B)) ** 2).sum() / (P**2).sum()
            assert abs(float(fits.r2[s, layer]) - r2) < 1e-5

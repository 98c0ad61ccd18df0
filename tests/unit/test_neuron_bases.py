"""Known-answer tests of the masked Eq. 5 fit (section 5.4, Eq. 5, on the cells where N(a, b)
exists at a digit-tokenised answer position) and of the digit basis fitted beside it."""

import numpy as np
import pytest
import torch
from helpers.phases import circular

from helixclock.stages.neurons.basis import PERIODS, columns, design, digit_columns, digit_design, planted_grids
from helixclock.stages.neurons.fit import compare_bases, design_rank, fit_digit_basis, fit_neurons
from helixclock.stages.neurons.neuron_files import load_neuron_fits, neuron_table, save_neuron_fits
from helixclock.stages.neurons.periods import grid_periods

NT = len(PERIODS)
A_GRID, B_GRID = np.meshgrid(np.arange(100), np.arange(100), indexing="ij")
SECOND = A_GRID + B_GRID >= 10  # where the answer's 2nd token exists
THIRD = A_GRID + B_GRID >= 100  # where its 3rd does


def planted(n, seed):
    """Random Eq. 5 grids [n, 100, 100] and their amplitudes and phases [n, 3, NT] (T=2 phases
    0 or 1: only the sign of a T=2 cosine is identified)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.3, 2.0, size=(n, 3, NT))
    d = rng.uniform(0, 1, size=(n, 3, NT)) * np.asarray(PERIODS, dtype=float)
    d[:, :, 0] = rng.integers(0, 2, size=(n, 3))
    return planted_grids(A, d, rng.normal(size=(n, 3)), rng.normal(size=n)), A, d


def test_mask_none_is_the_unmasked_fit_and_a_full_mask_agrees_with_it():
    grids, A, _ = planted(6, seed=10)
    noisy = grids + np.random.default_rng(11).normal(size=grids.shape)  # far from the model: SSE > 0
    for g in (grids, noisy):
        plain = fit_neurons(g, chunk_size=4)
        full = fit_neurons(g, chunk_size=4, mask=np.ones((100, 100), dtype=bool))
        assert plain.info == {} and plain.cells is None  # mask=None adds nothing to the saved fits
        assert full.cells == 10_000 and full.n_params == plain.n_params == design_rank() == 24
        for name in ("coef", "rmse", "nrmse", "value_range"):
            assert np.allclose(getattr(full, name), getattr(plain, name), rtol=1e-12, atol=1e-12), name
        assert all(np.array_equal(full.dominant[v], plain.dominant[v]) for v in plain.dominant)
    assert np.abs(full.amplitude - plain.amplitude).max() < 1e-12
    assert np.abs(fit_neurons(grids, mask=np.ones((100, 100), dtype=bool)).amplitude - A).max() < 1e-9


def test_masked_fit_recovers_planted_eq5_and_nans_outside_the_mask_reach_nothing():
    grids, A, d = planted(5, seed=12)
    holed = grids.copy()
    holed[:, ~SECOND] = np.nan
    fits = fit_neurons(torch.tensor(holed), mask=torch.tensor(SECOND), chunk_size=2)
    assert np.abs(fits.amplitude - A).max() < 1e-8
    assert np.abs(circular(fits.phase, d, PERIODS)).max() < 1e-8
    assert fits.nrmse.max() < 1e-6  # measured 0 to 1.2e-8: the float64 cancellation in ||y_c||^2 - ||U'y_c||^2
    for x in (fits.coef, fits.rmse, fits.nrmse, fits.value_range, *fits.dominant.values()):
        assert np.all(np.isfinite(x))
    assert np.array_equal(fits.value_range, np.nanmax(holed, (1, 2)) - np.nanmin(holed, (1, 2)))
    assert fits.cells == 9945 and fits.n_params == 24
    # figD12's periods: of the grid with the cells outside the mask set to the masked mean
    filled = np.where(SECOND, holed, np.nanmean(holed, (1, 2), keepdims=True))
    ref = grid_periods(filled)
    assert all(np.allclose(fits.dominant[v], ref[v]) for v in ref)
    # at the 3rd token (a+b >= 100) Eq. 5 still identifies its 24 parameters on 4,950 cells
    third = fit_neurons(np.where(THIRD, grids, np.nan), mask=THIRD)
    assert third.cells == 4950 and third.n_params == 24 and third.nrmse.max() < 1e-6
    assert np.abs(third.amplitude - A).max() < 1e-7


def test_masked_fit_equals_numpy_lstsq_on_the_masked_cells():
    grids, _, _ = planted(3, seed=13)
    y = grids + np.random.default_rng(14).normal(size=grids.shape)
    y[:, ~SECOND] = np.nan
    fits = fit_neurons(y, mask=SECOND)
    X, rows = design(), SECOND.ravel()
    for i in range(3):
        coef, *_ = np.linalg.lstsq(X[rows], y[i].ravel()[rows], rcond=None)  # minimum-norm, like the fit
        assert np.abs(fits.coef[i] - coef).max() < 1e-8
        rmse = np.sqrt(np.mean((X[rows] @ coef - y[i].ravel()[rows]) ** 2))
        assert np.isclose(fits.rmse[i], rmse, rtol=1e-9)


def test_bad_masks_and_sgd_with_a_mask_are_refused():
    g, _, _ = planted(2, seed=15)
    with pytest.raises(ValueError, match="mask given with method='sgd'.*method='lstsq'"):
        fit_neurons(g, method="sgd", mask=SECOND)
    with pytest.raises(ValueError, match=r"boolean array \(100, 100\)"):
        fit_neurons(g, mask=SECOND.astype(int))
    with pytest.raises(ValueError, match=r"boolean array \(100, 100\)"):
        fit_neurons(g, mask=SECOND[:50])
    with pytest.raises(ValueError, match="no cell"):
        fit_digit_basis(g, mask=np.zeros((100, 100), dtype=bool))
    with pytest.raises(ValueError, match="two digits"):
        digit_design(101, 100)


def test_digit_design_values_and_what_it_shares_with_eq5():
    X, cols = digit_design(), digit_columns()
    assert X.shape == (10_000, 24) and len(cols) == 24 and cols[-3:] == ["carry", "hundreds(a+b)", "const"]
    row = dict(zip(cols, X[37 * 100 + 85]))  # 37 + 85 = 122: units 7, 5, 2; tens 3, 8, 2; carry; hundreds
    for name, digit in [("units(a)", 7), ("units(b)", 5), ("units(a+b)", 2)]:
        for T in (10, 5):
            assert np.isclose(row[f"cos {name} T={T}"], np.cos(2 * np.pi * digit / T))
            assert np.isclose(row[f"sin {name} T={T}"], np.sin(2 * np.pi * digit / T))
        assert np.isclose(row[f"cos {name} T=2"], np.cos(np.pi * digit))
    for name, digit in [("tens(a)", 3), ("tens(b)", 8), ("tens(a+b)", 2)]:
        assert np.isclose(row[f"cos {name}"], np.cos(2 * np.pi * digit / 10))
        assert np.isclose(row[f"sin {name}"], np.sin(2 * np.pi * digit / 10))
    assert row["sin units(b) T=10"] == 0.0 and row["carry"] == 1 and row["hundreds(a+b)"] == 1 and row["const"] == 1
    assert np.array_equal(X[:, cols.index("carry")], ((A_GRID % 10 + B_GRID % 10) >= 10).ravel())
    assert np.array_equal(X[:, cols.index("hundreds(a+b)")], THIRD.ravel())
    # neither basis is nested in the other: residual of each column projected on the other basis
    E = design()

    def residual(col, basis):
        return np.abs(col - basis @ np.linalg.lstsq(basis, col, rcond=None)[0]).max()

    eq5 = columns()
    assert np.allclose(X[:, cols.index("cos units(a+b) T=10")], E[:, eq5.index("cos a+b T=10")], atol=1e-12)
    for name in ("cos units(a+b) T=10", "sin units(a) T=5", "cos units(b) T=2"):
        assert residual(X[:, cols.index(name)], E) < 1e-9, name  # the common core
    for name in ("cos tens(a)", "cos tens(a+b)", "carry", "hundreds(a+b)"):
        assert residual(X[:, cols.index(name)], E) > 0.1, name
    for name in ("cos a T=100", "sin a+b T=100", "lin a"):
        assert residual(E[:, eq5.index(name)], X) > 0.1, name
    for name in ("cos a+b T=5", "cos a T=2", "sin b T=10"):
        assert residual(E[:, eq5.index(name)], X) < 1e-9, name


def test_planted_digit_and_clock_neurons_each_fit_only_their_basis():
    carry = ((A_GRID % 10 + B_GRID % 10) >= 10).astype(float)
    digit = 1.5 * np.cos(2 * np.pi * (A_GRID // 10) / 10) + 0.7 * carry
    A, d = np.zeros((1, 3, NT)), np.zeros((1, 3, NT))
    A[0, 2, 1], d[0, 2, 1] = 1.0, 1.3  # T=5 on a+b
    A[0, 0, 3], d[0, 0, 3] = 0.8, 20.0  # T=100 on a
    clock = planted_grids(A, d, np.zeros((1, 3)), np.zeros(1))[0]
    grids = np.stack([digit, clock])
    eq5 = fit_neurons(grids, layer=[7, 8], neuron=[11, 12])
    dig = fit_digit_basis(grids, layer=[7, 8], neuron=[11, 12])
    assert dig.nrmse[0] < 1e-6 and eq5.nrmse[1] < 1e-6  # each is planted in its own basis
    assert eq5.nrmse[0] > 0.05  # measured 0.0636: Eq. 5 cannot make the tens step or the carry
    assert dig.nrmse[1] > 0.02  # measured 0.0290: the digit basis has the T=5 harmonic, not T=100
    table = compare_bases(eq5, dig)
    assert list(table.columns) == "layer neuron nrmse_eq5 nrmse_digits n_params_eq5 n_params_digits better".split()
    assert list(table["better"]) == ["digits", "Eq. 5"] and list(table["neuron"]) == [11, 12]
    assert list(table["n_params_eq5"]) == [24, 24] and list(table["n_params_digits"]) == [24, 24]
    # the same on the 2nd answer token's cells (a+b >= 10), NaN elsewhere
    holed = np.where(SECOND, grids, np.nan)
    ids = {"layer": [7, 8], "neuron": [11, 12]}
    eq5m, digm = fit_neurons(holed, mask=SECOND, **ids), fit_digit_basis(holed, mask=SECOND, **ids)
    assert digm.nrmse[0] < 1e-6 and eq5m.nrmse[1] < 1e-6
    assert eq5m.nrmse[0] > 0.05 and digm.nrmse[1] > 0.02  # measured 0.0638 and 0.0290
    assert list(compare_bases(eq5m, digm)["better"]) == ["digits", "Eq. 5"]
    assert fit_digit_basis(holed, mask=THIRD).n_params == 23  # hundreds(a+b) = const there
    with pytest.raises(ValueError, match="different cells"):
        compare_bases(eq5, digm)
    with pytest.raises(ValueError, match="different neurons"):
        compare_bases(eq5, fit_digit_basis(grids))
    # a tie (a constant grid: NRMSE NaN in both) goes to Eq. 5
    flat = np.ones((1, 100, 100))
    assert list(compare_bases(fit_neurons(flat), fit_digit_basis(flat))["better"]) == ["Eq. 5"]


@pytest.mark.parametrize("masked", [False, True])
def test_digit_basis_equals_numpy_lstsq_on_a_small_random_grid(masked):
    rng = np.random.default_rng(16)
    grids = rng.normal(size=(4, 20, 20))
    mask = np.add.outer(np.arange(20), np.arange(20)) >= 10 if masked else np.ones((20, 20), dtype=bool)
    grids[:, ~mask] = np.nan
    fits = fit_digit_basis(grids, mask=mask if masked else None, chunk_size=3)
    X = digit_design(20, 20)[mask.ravel()]
    assert fits.n_params == np.linalg.matrix_rank(X) == (20 if masked else 21)  # tens digits 0, 1; no hundreds
    assert fits.cells == (mask.sum() if masked else None)
    for i in range(4):
        y = grids[i][mask]
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        rmse = np.sqrt(np.mean((X @ coef - y) ** 2))
        assert np.isclose(fits.rmse[i], rmse, rtol=1e-9)
        assert np.isclose(fits.nrmse[i], rmse / (y.max() - y.min()), rtol=1e-9)
        assert np.isclose(fits.value_range[i], y.max() - y.min())
    pred = fits.predict().reshape(4, -1)[:, mask.ravel()]  # the fitted grids on the masked cells
    assert np.allclose(np.sqrt(np.mean((pred - grids.reshape(4, -1)[:, mask.ravel()]) ** 2, 1)), fits.rmse)


def test_masked_fits_keep_their_cells_and_rank_through_the_hdf5_files(tmp_path):
    grids, _, _ = planted(3, seed=17)
    fits = fit_neurons(np.where(THIRD, grids, np.nan), mask=THIRD, layer=[1, 2, 3], neuron=[4, 5, 6])
    save_neuron_fits(tmp_path / "fits.h5", fits)
    back = load_neuron_fits(tmp_path / "fits.h5")
    assert back.cells == 4950 and back.n_params == 24
    assert np.array_equal(back.coef, fits.coef) and np.all(np.isfinite(neuron_table(back)["nrmse"]))

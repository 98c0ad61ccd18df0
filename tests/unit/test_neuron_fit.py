"""Known-answer tests of the neuron fit (Eq. 5): planted neurons are recovered, the batched
solve equals a per-neuron reference, the paper's SGD reaches the least-squares optimum where
its step sizes allow (and stalls where they do not), the figD12 periods are found."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.phases import circular

from helixclock.stages.neurons.basis import PERIODS, VARIABLES, columns, design, grid_values, planted_grids
from helixclock.stages.neurons.fit import fit_neurons
from helixclock.stages.neurons.neuron_files import (
    has_up_fits,
    load_neuron_fits,
    neuron_table,
    save_neuron_fits,
    term_table,
)
from helixclock.stages.neurons.periods import grid_periods
from helixclock.stages.neurons.sgd import sgd_fit

NT = len(PERIODS)


def params(n, seed=0, amp=(0.3, 1.5), periods_used=PERIODS, dominant=3.0):
    """Random Eq. 5 parameters [n, 3, n_periods]: one dominating term (amplitude ``dominant``)
    per neuron at a known (variable, period); T=2 phases 0 or 1 (sin(pi t) = 0 on integers,
    so only the sign of a T=2 cosine is identified)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(*amp, size=(n, 3, NT))
    A[:, :, [k for k, T in enumerate(PERIODS) if T not in periods_used]] = 0.0
    d = rng.uniform(0, 1, size=(n, 3, NT)) * np.asarray(PERIODS, dtype=float)
    d[:, :, 0] = rng.integers(0, 2, size=(n, 3))
    used = [k for k, T in enumerate(PERIODS) if T in periods_used]
    top = [(i % 3, used[i % len(used)]) for i in range(n)]
    for i, (j, k) in enumerate(top):
        A[i, j, k] = dominant
    return A, d, rng.normal(size=(n, 3)), rng.normal(size=n), top


def test_the_design_matrix_has_known_zero_and_collinear_columns():
    X = design()
    assert X.shape == (10_000, 6 * NT + 4) and len(columns()) == X.shape[1]
    sin2 = [columns().index(f"sin {v} T=2") for v in VARIABLES]
    assert np.all(X[:, sin2] == 0)  # exact zeros: sin(pi t) on integers
    lin = [columns().index(c) for c in ("lin a", "lin b", "lin a+b")]
    assert np.array_equal(X[:, lin[0]] + X[:, lin[1]], X[:, lin[2]])  # collinear by construction
    assert X[:, lin[0]].min() == -1 and X[:, lin[0]].max() == 1
    assert np.linalg.matrix_rank(X) == X.shape[1] - 4  # 3 zero columns + 1 collinearity


def test_planted_neurons_are_recovered_exactly():
    A, d, lin, c, top = params(12)
    grids = planted_grids(A, d, lin, c)
    fits = fit_neurons(torch.tensor(grids), layer=np.arange(12) // 4, neuron=np.arange(12) + 100)
    assert np.abs(fits.amplitude - A).max() < 1e-9
    assert np.abs(circular(fits.phase, d, PERIODS)).max() < 1e-9
    assert fits.nrmse.max() < 1e-6  # 0 up to float64 cancellation in ||y_c||^2 - ||U'y_c||^2
    # only the slopes along a~ and b~ are identified; the minimum norm is orthogonal to (1, 1, -1)
    w = fits.linear
    assert np.allclose(w[:, 0] + w[:, 2], lin[:, 0] + lin[:, 2], atol=1e-9)
    assert np.allclose(w[:, 1] + w[:, 2], lin[:, 1] + lin[:, 2], atol=1e-9)
    assert np.abs(w[:, 0] + w[:, 1] - w[:, 2]).max() < 1e-9
    assert np.abs(fits.beta[:, :, 0]).max() < 1e-12  # sin T=2 coefficients: the minimum norm is 0
    assert np.allclose(fits.const, c)
    tops = fits.top_term()
    assert list(tops["top_variable"]) == [VARIABLES[j] for j, _ in top]
    assert list(tops["top_period"]) == [PERIODS[k] for _, k in top]
    assert np.allclose(fits.predict([0, 5]), grids[[0, 5]], atol=1e-9)
    assert list(fits.layer) == list(np.arange(12) // 4) and fits.neuron[3] == 103


def test_noisy_planted_neurons_are_recovered_within_their_standard_error():
    sigma = 0.05
    A, d, lin, c, top = params(12, seed=1)
    fits = fit_neurons(planted_grids(A, d, lin, c, noise=sigma, seed=2))
    # each (alpha, beta) has standard error sigma * sqrt(2 / P) ~ 7e-4: allow 7 of them
    assert np.abs(fits.amplitude - A).max() < 5e-3
    T = np.asarray(PERIODS, dtype=float)
    phase_err = np.abs(circular(fits.phase, d, T)) * 2 * np.pi / T * A  # arc length on the circle
    assert phase_err.max() < 5e-3
    assert np.allclose(fits.rmse, sigma, rtol=0.05)
    assert list(fits.top_term()["top_period"]) == [PERIODS[k] for _, k in top]


def test_batched_lstsq_equals_per_neuron_reference():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    A, d, lin, c, _ = params(6, seed=3)
    grids = planted_grids(A, d, lin, c) + rng.normal(size=(6, 100, 100))  # far from the model
    X = design()
    fits = fit_neurons(grids, chunk_size=4)  # two chunks
    pred = fits.predict().reshape(6, -1)
    for i, y in enumerate(grids.reshape(6, -1)):
        ref = LinearRegression(fit_intercept=False).fit(X, y).predict(X)
        assert np.abs(pred[i] - ref).max() < 1e-5
        coef = np.linalg.lstsq(X, y, rcond=None)[0]  # numpy's is the minimum-norm solution too
        assert np.abs(fits.coef[i] - coef).max() < 1e-8
        assert np.isclose(fits.rmse[i], np.sqrt(np.mean((y - X @ coef) ** 2)))
        assert np.isclose(fits.nrmse[i], fits.rmse[i] / (y.max() - y.min()))
    f32 = fit_neurons(torch.tensor(grids, dtype=torch.float32))
    assert np.abs(f32.coef - fits.coef).max() < 1e-5


def _ratio(sgd, ls):
    return sgd.rmse**2 / ls.rmse**2


def test_paper_sgd_reaches_the_least_squares_loss():
    """Tolerance logic: for any coefficients, MSE = MSE_LS + (theta - theta*)' (X'X / P)
    (theta - theta*) >= MSE_LS, and MSE_LS ~ sigma^2.  A ratio <= 1.01 says the SGD's excess
    error is under 1% of the noise variance (coefficients within ~0.1 sigma of the optimum).
    The planted neurons carry T = 2, 5, 10 terms (amplitudes 0.5..3), linear terms and a
    constant; their T = 100 terms are 0 (the SGD must still shrink its N(0, 1) init of them)."""
    A, d, lin, c, _ = params(12, seed=4, amp=(0.5, 2.0), periods_used=(2, 5, 10))
    grids = planted_grids(A, d, lin, c, noise=0.1, seed=5)
    ls = fit_neurons(grids)
    sgd = fit_neurons(grids, method="sgd", seed=0)
    r = _ratio(sgd, ls)
    assert r.min() >= 1 - 1e-9  # least squares is the optimum
    direct = np.sqrt(((sgd.predict() - grids) ** 2).mean((1, 2)))  # the SGD's RMSE from its residuals
    assert np.allclose(sgd.rmse, direct, rtol=1e-9)
    assert r.max() <= 1.01
    assert np.abs(sgd.amplitude - ls.amplitude).max() < 0.02
    assert sgd.info["lr"] == 0.1 and sgd.info["epochs"] == 2500 and sgd.info["seed"] == 0
    again = fit_neurons(grids, method="sgd", seed=0)
    assert np.array_equal(again.coef, sgd.coef)  # seeded: the same fit twice


def test_paper_sgd_stalls_on_slow_T100_phases_and_angle_phases_do_not():
    """A T=100 phase d (units of t) has MSE curvature ~ A^2 (2 pi / 100)^2 = 4e-3 A^2; the
    cosine schedule's summed step is 0.1 * 2500 / 2 = 125, so a phase a quarter period from
    its init (d ~ N(0, 1)) relaxes by ~exp(-0.5 A^2) only.  In radians the curvature is A^2."""
    n = 4
    A, d = np.zeros((n, 3, NT)), np.zeros((n, 3, NT))
    A[:, 2, 3] = 1.0
    d[:, 2, 3] = [25.0, 40.0, 60.0, 75.0]
    grids = planted_grids(A, d, np.zeros((n, 3)), np.zeros(n), noise=0.1)
    ls = fit_neurons(grids)
    paper = fit_neurons(grids, method="sgd")
    angle = fit_neurons(grids, method="sgd", phase_units="angle")
    assert _ratio(paper, ls).min() > 2  # stalled: excess loss larger than the noise
    assert _ratio(angle, ls).max() <= 1.01
    assert np.abs(circular(angle.phase[:, 2, 3], d[:, 2, 3], 100)).max() < 0.5


def test_sgd_on_sufficient_statistics_equals_sgd_on_points():
    A, d, lin, c, _ = params(3, seed=6)
    Y = torch.tensor(planted_grids(A, d, lin, c, noise=0.1).reshape(3, -1))
    X = torch.tensor(design())
    th_gram, _ = sgd_fit(Y, X, PERIODS, epochs=40, gram=True)
    th_points, _ = sgd_fit(Y, X, PERIODS, epochs=40, gram=False)
    # the same 40 epochs of steps; only the order of float64 sums differs (a gradient from X^T X
    # and X^T y, or from the points): a relative 1e-7 after 40 epochs, where a wrong gradient is O(1)
    torch.testing.assert_close(th_gram, th_points, rtol=1e-7, atol=1e-9)
    _, info = sgd_fit(Y, X, PERIODS, epochs=40, record_every=10)
    assert info["loss_history"].shape == (4, 3) and np.all(np.diff(info["loss_history"], axis=0) < 0)


def _reference_periods(grid):
    """Plain loops: mean over each s = a+b, over b, over a; centred; top rFFT period."""
    n_a, n_b = grid.shape
    by_s = np.array([np.mean([grid[a, s - a] for a in range(n_a) if 0 <= s - a < n_b]) for s in range(n_a + n_b - 1)])

    def top(m):
        mag = np.abs(np.fft.rfft(m - m.mean()))[1:]
        return len(m) / (np.argmax(mag) + 1)

    return {"a+b": top(by_s), "a": top(grid.mean(1)), "b": top(grid.mean(0))}


def test_dominant_periods_find_planted_periods():
    cases = [((2, 0), (0, 1)), ((2, 1), (0, 2)), ((2, 2), (0, 3)), ((2, 3), (0, 0))]  # (a+b term), (a term)
    n = len(cases)
    A, d = np.zeros((n, 3, NT)), np.zeros((n, 3, NT))
    for i, (ab, a) in enumerate(cases):
        A[i, ab[0], ab[1]] = 2.0
        A[i, a[0], a[1]] = 1.0
        A[i, 1, (a[1] + 2) % NT] = 1.0  # a b term at another period
        d[i, :, 1:] = 1.3
    grids = planted_grids(A, d, np.zeros((n, 3)), np.zeros(n), noise=0.01)
    per = grid_periods(torch.tensor(grids))
    for i, (ab, a) in enumerate(cases):
        assert abs(per["a+b"][i] - PERIODS[ab[1]]) <= 0.05 * PERIODS[ab[1]]  # 199 / k
        assert per["a"][i] == PERIODS[a[1]]  # exact frequencies over 100 values
        assert per["b"][i] == PERIODS[(a[1] + 2) % NT]
    assert np.allclose(per["a+b"], [199 / 99, 199 / 40, 199 / 20, 199 / 2])
    rng = np.random.default_rng(7)
    noisy = rng.normal(size=(3, 100, 100)).cumsum(2)
    per = grid_periods(noisy)
    for i in range(3):
        ref = _reference_periods(noisy[i])
        assert all(np.isclose(per[v][i], ref[v]) for v in ref)


def test_detrend_option_sees_through_a_linear_trend():
    A, d = np.zeros((1, 3, NT)), np.zeros((1, 3, NT))
    A[0, 2, 2] = 0.5
    grids = planted_grids(A, d, np.array([[0.0, 0.0, 3.0]]), np.zeros(1))
    assert grid_periods(grids)["a+b"][0] == 199.0  # Fig. D12's estimator: the trend wins
    assert np.isclose(grid_periods(grids, detrend=True)["a+b"][0], 199 / 20)


def test_ab_fraction_is_the_papers_ratio_of_magnitudes():
    """Section 5.4: "the magnitude of c_{T,a+b} terms" over "the total magnitude of c_{Tt}
    terms": amplitudes, not their squares (which would give 1/5 for the third neuron)."""
    n = 4
    A, d = np.zeros((n, 3, NT)), np.zeros((n, 3, NT))
    A[0, 2] = [0.5, 1.0, 2.0, 0.3]  # a+b only
    A[1, 0, 1], A[1, 1, 3] = 1.5, 0.7  # a and b only
    A[2, 2, 2], A[2, 0, 1] = 1.0, 2.0  # 1 / (1 + 2)
    A[3, 2, 1], A[3, 2, 3], A[3, 0, 2], A[3, 1, 0] = 3.0, 1.0, 2.0, 2.0  # (3 + 1) / (3 + 1 + 2 + 2)
    d[3, :, 1:] = 0.7  # T = 2 phases stay 0 or 1 (only the sign of a T = 2 cosine is identified)
    lin = np.full((n, 3), 5.0)  # big linear terms: excluded from the fraction
    fits = fit_neurons(planted_grids(A, d, lin, np.ones(n)))
    assert np.allclose(fits.ab_fraction, [1.0, 0.0, 1 / 3, 0.5], atol=1e-9)


def test_the_constant_and_the_scaled_linear_terms_of_eq5():
    """helixclock's Eq. 5 adds a constant and scales a, b to [-1, 1].  Scaling is only a change
    of units: the paper's raw a, b, a+b plus the constant span the same grids (same fit, same
    RMSE).  The constant is what the paper's form lacks: without it a neuron's mean offset
    has to be carried by the linear terms, and the fit of a planted offset is far worse."""
    A, d = np.zeros((1, 3, NT)), np.zeros((1, 3, NT))
    A[0, 2, 1], d[0, 2, 1] = 1.0, 1.5  # 1.0 cos(2 pi (a+b - 1.5) / 5)
    grids = planted_grids(A, d, np.array([[0.4, -0.2, 0.0]]), np.array([-2.0]), noise=0.05)
    fits = fit_neurons(grids)
    y = grids.reshape(-1)
    X = design()
    raw = X.copy()
    v = grid_values()
    raw[:, -4:-1] = np.stack([v["a"], v["b"], v["a+b"]], 1)  # the paper's c_t t
    coef, *_ = np.linalg.lstsq(raw, y, rcond=None)
    assert np.isclose(np.sqrt(np.mean((raw @ coef - y) ** 2)), fits.rmse[0], rtol=1e-9)
    assert np.isclose(fits.const[0] - fits.linear[0].sum() - fits.linear[0, 2], coef[-1], atol=1e-8)  # c at a=b=0
    assert np.isclose(fits.amplitude[0, 2, 1], 1.0, atol=0.01) and np.isclose(fits.const[0], -2.0, atol=0.01)
    paper, *_ = np.linalg.lstsq(raw[:, :-1], y, rcond=None)  # the paper's form: no constant
    rmse_paper = np.sqrt(np.mean((raw[:, :-1] @ paper - y) ** 2))
    assert rmse_paper > 5 * fits.rmse[0]  # the offset of -2 leaks into slopes it cannot match


def test_leading_terms_print_the_largest_terms_of_a_planted_fit():
    A, d = np.zeros((1, 3, NT)), np.zeros((1, 3, NT))
    A[0, 2, 2], d[0, 2, 2] = 1.23, 3.4
    A[0, 0, 0], d[0, 0, 0] = 0.8, 1.0
    fits = fit_neurons(planted_grids(A, d, np.array([[0.0, 0.5, 0.0]]), np.zeros(1)))
    assert fits.leading_terms(2, linear=False) == ["1.23 cos(2π/10 (a+b − 3.4)) + 0.80 cos(2π/2 (a − 1.0))"]
    # b~ alone: minimum norm gives w_b = 2/3 * 0.5 on b~ and 1/3 * 0.5 on a~+b~ (minus 1/3 on a~)
    assert fits.leading_terms(3) == ["1.23 cos(2π/10 (a+b − 3.4)) + 0.80 cos(2π/2 (a − 1.0)) + 0.33 b̃"]


def test_tables_and_hdf5_round_trip(tmp_path):
    A, d, lin, c, _ = params(5, seed=8)
    grids = planted_grids(A, d, lin, c, noise=0.01)
    fits = fit_neurons(grids, layer=[3, 3, 4, 4, 5], neuron=[1, 2, 3, 4, 5], method="sgd", epochs=50, record_every=25)
    nt = neuron_table(fits)
    assert list(nt.columns[:7]) == ["layer", "neuron", "nrmse", "rmse", "value_range", "ab_fraction", "top_terms"]
    assert {"dominant_period_a", "dominant_period_b", "dominant_period_ab", "top_ab_period"} <= set(nt.columns)
    tt = term_table(fits)
    assert len(tt) == 5 * 3 * NT
    row = tt[(tt["neuron"] == 2) & (tt["variable"] == "b") & (tt["period"] == 10)].iloc[0]
    assert np.isclose(row["amplitude"], fits.amplitude[1, 1, 2]) and np.isclose(row["phase"], fits.phase[1, 1, 2])
    path = tmp_path / "fits.h5"
    save_neuron_fits(path, fits)
    back = load_neuron_fits(path)
    assert back.method == "sgd" and back.periods == PERIODS and back.info["epochs"] == 50
    assert back.info["loss_history"].shape == (2, 5)
    pd.testing.assert_frame_equal(neuron_table(back), nt)
    assert np.array_equal(back.coef, fits.coef)
    assert not has_up_fits(path)
    up = fit_neurons(grids[::-1].copy(), layer=[3, 3, 4, 4, 5], neuron=[1, 2, 3, 4, 5])  # a gated MLP's up projection
    save_neuron_fits(path, fits, up)
    assert has_up_fits(path) and np.array_equal(load_neuron_fits(path).coef, fits.coef)
    assert np.array_equal(load_neuron_fits(path, "up").coef, up.coef) and np.allclose(
        load_neuron_fits(path, "up").predict(), up.predict()
    )


def test_other_periods_fit_and_bad_options_are_refused():
    A = np.zeros((2, 3, 2))
    A[:, 0, 1] = 1.0
    d = np.zeros((2, 3, 2))
    g = planted_grids(A, d, np.zeros((2, 3)), np.zeros(2), periods=(3, 7))
    fits = fit_neurons(g, periods=(3, 7))
    assert fits.coef.shape == (2, 16) and np.allclose(fits.amplitude[:, 0, 1], 1.0)
    with pytest.raises(ValueError, match="method='adam'"):
        fit_neurons(g, method="adam")
    with pytest.raises(ValueError, match="periods"):
        fit_neurons(g, periods=())
    with pytest.raises(ValueError, match="n_neurons, n_a, n_b"):
        fit_neurons(g[0])
    with pytest.raises(ValueError, match="SGD options"):
        fit_neurons(g, lr=0.5)
    with pytest.raises(ValueError, match="phase_units"):
        fit_neurons(g, method="sgd", phase_units="degrees")

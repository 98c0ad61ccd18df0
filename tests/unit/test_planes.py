"""The placebo planes of the nested T = 100 tests (helixclock.fitting.planes): over 0..99 the
T = 100 circle's non-additive part is a tens circle times a linear units term; a tens-permuted
circle has the circle's rank, norm and non-additive norm by construction and another direction;
interaction columns are no placebo (their principal cosines to the circle are high)."""

import numpy as np
import pytest

from helixclock.fitting.planes import (
    additive,
    circle,
    frame_coordinates,
    nonadditive,
    placebo_cosine,
    placebo_sigmas,
    principal_cosines,
    residual_frame,
    residualised,
    tens_frame,
    tens_permuted_circle,
)

N = np.arange(100)
T, U = N // 10, N % 10


def test_the_identity_gives_the_circle_and_a_permutation_keeps_its_norms():
    assert np.allclose(tens_permuted_circle(N, np.arange(10)), circle(N))
    sigma = [3, 7, 0, 9, 1, 4, 8, 2, 6, 5]
    placebo = tens_permuted_circle(N, sigma)
    # the same values in another order (10 sigma(t) + u is a bijection of 0..99): the same norms
    assert np.allclose(np.sort(placebo, 0), np.sort(circle(N), 0))
    assert np.linalg.matrix_rank(placebo) == 2 and np.linalg.matrix_rank(additive(N)) == 19
    # the additive span is the same for relabelled tens digits: the non-additive norms are equal
    assert (nonadditive(placebo, N) ** 2).sum() == pytest.approx((nonadditive(circle(N), N) ** 2).sum(), rel=1e-12)
    assert (nonadditive(circle(N), N) ** 2).sum() == pytest.approx(3.215, abs=1e-3)  # of 100: the within-decade part
    assert 0 < placebo_cosine(N, sigma) < 0.99 and placebo_cosine(N, np.arange(10)) == pytest.approx(1.0)


def test_the_circles_non_additive_part_is_a_tens_circle_times_the_units():
    """Over 0..99, 99.4% of T = 100's non-additive part is {cos, sin}(2 pi t / 10) (u - 4.5)."""
    C = nonadditive(circle(N), N)
    product = nonadditive(
        np.stack([np.cos(2 * np.pi * T / 10) * (U - 4.5), np.sin(2 * np.pi * T / 10) * (U - 4.5)], 1), N
    )
    explained = product @ np.linalg.lstsq(product, C, rcond=None)[0]
    assert (explained**2).sum() / (C**2).sum() == pytest.approx(0.9937, abs=1e-3)


def test_interaction_columns_are_no_placebo_and_the_drawn_permutations_are():
    """The wrong placebo: generic interactions of t and u lie near the circle's non-additive part
    (principal cosines 0.79 and 0.97), so a test against them would call a generic interaction
    "T = 100"; the drawn tens permutations stay below the declared 0.5."""
    C = nonadditive(circle(N), N)
    for column, cosine in (((T - 4.5) * (U - 4.5), 0.794), ((T - 4.5) ** 2 * (U - 4.5), 0.966)):
        got = principal_cosines(C, nonadditive(column[:, None], N))[0]
        assert got == pytest.approx(cosine, abs=1e-3) and got > 0.5
    sigmas = placebo_sigmas(20, seed=0, max_cosine=0.5)
    assert len({tuple(s) for s in sigmas}) == 20 and not any((s == np.arange(10)).all() for s in sigmas)
    assert all(placebo_cosine(N, s) < 0.5 for s in sigmas)
    every = placebo_sigmas(999, seed=1)  # the placebo distribution: any permutation but the identity
    assert len({tuple(s) for s in every}) == 999
    with pytest.raises(ValueError, match="permutation of the tens digits"):
        tens_permuted_circle(N, [0, 0, 1, 2, 3, 4, 5, 6, 7, 8])
    with pytest.raises(ValueError, match="non-negative integers"):
        tens_permuted_circle(np.arange(-1, 5), np.arange(10))
    # beyond 99 the circle is a function of n mod 100: the placebo too
    assert np.allclose(tens_permuted_circle(np.arange(100, 200), sigmas[0]), tens_permuted_circle(N, sigmas[0]))


def test_principal_cosines_and_residuals_by_hand():
    A = np.array([[1.0, 0], [0, 1], [0, 0]])
    B = np.array([[1.0], [0], [1]])
    assert principal_cosines(A, B) == pytest.approx([2**-0.5])
    assert principal_cosines(A, A) == pytest.approx([1.0, 1.0])
    r = residualised(np.array([[1.0], [2.0], [3.0]]), np.ones((3, 1)))
    assert r.ravel() == pytest.approx([-1.0, 0.0, 1.0])


def test_every_tens_permuted_circle_is_a_combination_of_the_tens_frame():
    """The calibration's shortcut: over 0..360 each placebo plane (and the circle, the identity's)
    is the 20 columns of tens_frame times its coordinates, exactly; the wrong frame (tens digits
    times cos/sin 2 pi u / 10, the units circle) does not hold them."""
    n = np.arange(361)
    sigmas = np.vstack([np.arange(10), placebo_sigmas(30, seed=2)])
    planes = np.stack([tens_permuted_circle(n, s) for s in sigmas])
    assert np.abs(tens_frame(n) @ frame_coordinates(sigmas) - planes).max() < 1e-12
    t, u = (n // 10) % 10, n % 10
    onehot = (t[:, None] == np.arange(10)).astype(float)
    wrong = np.hstack([onehot * np.cos(2 * np.pi * u / 10)[:, None], onehot * np.sin(2 * np.pi * u / 10)[:, None]])
    left = planes[0] - wrong @ np.linalg.lstsq(wrong, planes[0], rcond=None)[0]
    assert (left**2).sum() / (planes[0] ** 2).sum() > 0.5


def test_the_residual_frame_is_orthonormal_outside_the_base_and_spans_the_residualised_plane():
    n = np.arange(100)
    A = additive(n)
    planes = np.stack([circle(n), tens_permuted_circle(n, [3, 7, 0, 9, 1, 4, 8, 2, 6, 5])])
    Q = residual_frame(planes, A)
    assert np.abs(np.swapaxes(Q, 1, 2) @ Q - np.eye(2)).max() < 1e-12 and np.abs(A.T @ Q).max() < 1e-10
    # the same span as the residualised plane, and symmetric: the columns' order does not matter
    assert principal_cosines(Q[0], nonadditive(circle(n), n)) == pytest.approx([1, 1])
    assert np.allclose(residual_frame(circle(n)[:, ::-1], A), Q[0][:, ::-1])
    with pytest.raises(ValueError, match="no residual frame"):
        residual_frame(A[:, 1:3], A)

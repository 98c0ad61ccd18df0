"""Rival planes of the T = 100 circle over the numbers: the placebos of the nested T = 100
tests (docs/several-tokens.md, "Numbers of several tokens").

Over the numbers n = 10 t + u (t the tens digit, u the units digit), the circle
cos/sin 2 pi n / 100 is, beyond what functions of t and of u add up to (the *additive* part, which
a digit one-hot holds), almost entirely a tens circle times a linear units term:
{cos, sin}(2 pi t / 10) (u - 4.5) (:func:`nonadditive`).  A test that T = 100 adds to the digits
therefore says that the representation holds *some* interaction of the tens and the units digit;
whether it is T = 100's own needs a placebo of the same kind.  The tens-permuted circle
(:func:`tens_permuted_circle`) is one: cos/sin 2 pi (10 sigma(t) + u) / 100 for a permutation sigma
of the tens digits.  Relabelling t leaves the additive span (functions of t plus functions of u)
as it is, so the placebo has the circle's rank, its norm and the norm of its non-additive part,
by construction; only its direction differs, measured by the principal angles between the two
planes' non-additive parts (:func:`principal_cosines`).  Interaction columns such as
(t - 4.5)(u - 4.5) are no placebo: their principal cosines to the circle's non-additive part are
high (0.79-0.97).  numpy only.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

T100 = 100
N_DIGITS = 10


def _digits(numbers) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tens and units digits of each number, and what lies above them (n // 100): the
    circle of period 100 is a function of n mod 100 = 10 t + u alone."""
    n = np.asarray(numbers)
    if n.ndim != 1 or np.any(n < 0) or np.any(n != np.round(n)):
        raise ValueError("the planes are defined on non-negative integers (a list of numbers)")
    n = n.astype(np.int64)
    return (n // 10) % 10, n % 10, n // 100


def _check_sigma(sigma) -> np.ndarray:
    s = np.asarray(sigma, dtype=np.int64)
    if s.shape != (N_DIGITS,) or sorted(s.tolist()) != list(range(N_DIGITS)):
        raise ValueError(f"sigma {list(s)}: a permutation of the tens digits 0..9 is needed")
    return s


def circle(numbers, period: float = T100) -> np.ndarray:
    """cos, sin 2 pi n / period of ``numbers`` [n, 2]."""
    angle = 2 * np.pi * np.asarray(numbers, dtype=np.float64) / period
    return np.stack([np.cos(angle), np.sin(angle)], 1)


def tens_permuted_circle(numbers, sigma) -> np.ndarray:
    """The placebo plane [n, 2]: cos, sin 2 pi (10 sigma(t) + u) / 100 of each number 10 t + u,
    ``sigma`` a permutation of the tens digits (the identity gives the T = 100 circle itself)."""
    t, u, _ = _digits(numbers)
    return circle(10 * _check_sigma(sigma)[t] + u)


def additive(numbers) -> np.ndarray:
    """The additive span of the numbers [n, 19 + h]: the constant and the indicators of the tens
    digits 1..9, of the units digits 1..9 and of each nonzero value of n // 100 that occurs (every
    function of t plus one of u plus one of the digits above: 19 columns over 0..99)."""
    t, u, above = _digits(numbers)
    cols = [np.ones(len(t))] + [(t == k).astype(float) for k in range(1, 10)]
    cols += [(u == k).astype(float) for k in range(1, 10)] + [(above == k).astype(float) for k in np.unique(above) if k]
    return np.stack(cols, 1)


def residualised(columns: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``columns`` [n, k] less their least-squares projection on the span of ``base`` [n, m]."""
    coef, *_ = np.linalg.lstsq(base, columns, rcond=None)
    return columns - base @ coef


def nonadditive(plane: np.ndarray, numbers) -> np.ndarray:
    """What no sum of a function of the tens digit and one of the units digit holds of ``plane``
    [n, k]: its residual on :func:`additive`."""
    return residualised(plane, additive(numbers))


def principal_cosines(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Cosines of the principal angles between the column spaces of A [n, k] and B [n, l],
    largest first (min(k, l) of them; 1 where the spaces share a direction)."""
    qa, _ = np.linalg.qr(np.asarray(A, dtype=np.float64))
    qb, _ = np.linalg.qr(np.asarray(B, dtype=np.float64))
    return np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), 0.0, 1.0)


def placebo_cosine(numbers, sigma) -> float:
    """The largest principal cosine between the non-additive parts of the T = 100 circle and of
    the tens-permuted circle of ``sigma``, over ``numbers``."""
    return float(_placebo_cosines(np.asarray(numbers), np.asarray([sigma]))[0])


def _placebo_cosines(numbers: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
    """:func:`placebo_cosine` of each row of ``sigmas`` [K, 10], batched: the residual maker of
    the additive span applied to every plane at once, each plane orthonormalised (QR), the
    largest singular value of its product with the circle's."""
    A = additive(numbers)
    maker = np.eye(len(A)) - A @ np.linalg.pinv(A)
    own, _ = np.linalg.qr(maker @ circle(numbers))
    t, u, _ = _digits(numbers)
    angle = 2 * np.pi * (10 * sigmas[:, t] + u[None]) / T100  # [K, n]
    planes = np.stack([np.cos(angle), np.sin(angle)], -1)  # [K, n, 2]
    q, _ = np.linalg.qr(np.einsum("mn,knj->kmj", maker, planes))
    return np.clip(np.linalg.svd(own.T[None] @ q, compute_uv=False)[:, 0], 0.0, 1.0)


def placebo_sigmas(count: int, seed: int, numbers=None, max_cosine: float | None = None) -> np.ndarray:
    """``count`` distinct permutations of the tens digits [count, 10], none the identity, drawn
    seeded; with ``max_cosine`` only those whose plane's largest principal cosine to the T = 100
    circle (:func:`placebo_cosine`, over ``numbers``, default 0..99) lies below it.  An error
    where fewer exist than asked."""
    numbers = np.arange(100) if numbers is None else np.asarray(numbers)
    rng = np.random.default_rng(seed)
    found, seen = [], {tuple(range(N_DIGITS))}
    for _ in range(50):
        drawn = np.array([rng.permutation(N_DIGITS) for _ in range(4 * count)])
        fresh = []
        for sigma in map(tuple, drawn.tolist()):
            if sigma not in seen:
                seen.add(sigma)
                fresh.append(sigma)
        fresh = np.array(fresh, dtype=np.int64).reshape(-1, N_DIGITS)
        if max_cosine is not None and len(fresh):
            fresh = fresh[_placebo_cosines(numbers, fresh) < max_cosine]
        found += [tuple(f) for f in fresh]
        if len(found) >= count:
            return np.array(found[:count], dtype=np.int64)
    raise ValueError(
        f"found {len(found)} permutations of the tens digits with principal cosine below {max_cosine}, not {count}"
    )


class PermutedCircle:
    """The tens-permuted circle of one variable as a basis (:class:`helixclock.fitting.bases.Combined`
    reads its ``columns`` and calls it): cos, sin 2 pi (10 sigma(t) + u) / 100 of the variable's
    value n = 100 h + 10 t + u, then the constant.  ``sigma`` the identity is the T = 100 circle."""

    kind = "placebo"
    scaled = True

    def __init__(self, sigma, variable: str = "a"):
        self.sigma = tuple(int(s) for s in _check_sigma(sigma))
        self.variable = variable

    @property
    def name(self) -> str:
        return f"placebo({self.variable})[T=100, tens {''.join(map(str, self.sigma))}]"

    def columns(self) -> list[str]:
        tens = "".join(map(str, self.sigma))
        return [f"cos {self.variable} T=100 tens {tens}", f"sin {self.variable} T=100 tens {tens}", "const"]

    @property
    def n_params(self) -> int:
        return 2

    def __call__(self, values) -> np.ndarray:
        x = values[self.variable] if isinstance(values, Mapping) else values
        plane = tens_permuted_circle(np.asarray(x), self.sigma)
        return np.concatenate([plane, np.ones((len(plane), 1))], 1)

    def __eq__(self, other) -> bool:
        return isinstance(other, PermutedCircle) and (self.sigma, self.variable) == (other.sigma, other.variable)

    def __hash__(self) -> int:
        return hash((self.sigma, self.variable))


def tens_frame(numbers) -> np.ndarray:
    """The 20 columns [n, 20] that every tens-permuted circle is a combination of: the indicator
    of each tens digit tau = 0..9 times cos 2 pi u / 100, then the same times sin 2 pi u / 100
    (u the units digit).  cos 2 pi (10 sigma(t) + u) / 100 = cos(2 pi sigma(t) / 10) cos(2 pi u
    / 100) - sin(2 pi sigma(t) / 10) sin(2 pi u / 100), and the sine likewise, so
    ``tens_frame(numbers) @ frame_coordinates(sigmas)[k]`` is ``tens_permuted_circle(numbers,
    sigmas[k])``: a held-out fit against 1000 such planes needs the data only through these 20
    columns."""
    t, u, _ = _digits(numbers)
    onehot = (t[:, None] == np.arange(N_DIGITS)[None]).astype(np.float64)
    angle = 2 * np.pi * u / T100
    return np.concatenate([onehot * np.cos(angle)[:, None], onehot * np.sin(angle)[:, None]], 1)


def frame_coordinates(sigmas) -> np.ndarray:
    """The coordinates [K, 20, 2] of the tens-permuted circles of ``sigmas`` [K, 10] on
    :func:`tens_frame`'s columns (the identity's: the T = 100 circle's)."""
    s = np.stack([_check_sigma(x) for x in np.atleast_2d(np.asarray(sigmas))])
    a = 2 * np.pi * s / N_DIGITS  # [K, 10]: the angle each tens digit is given
    rho = np.empty((len(s), 2 * N_DIGITS, 2))
    rho[:, :N_DIGITS, 0], rho[:, N_DIGITS:, 0] = np.cos(a), -np.sin(a)  # the cosine column
    rho[:, :N_DIGITS, 1], rho[:, N_DIGITS:, 1] = np.sin(a), np.cos(a)  # the sine column
    return rho


def residual_frame(planes: np.ndarray, base: np.ndarray) -> np.ndarray:
    """An orthonormal frame of each plane residualised on ``base`` [n, m]: ``planes`` [..., n,
    2] less their least-squares projection on the base's span (minimum-norm), then
    R (R^T R)^(-1/2), the symmetric frame: the residualised cosine and sine columns made
    orthonormal with the least change (it does not depend on the order of the two columns).
    Two planes' frames Q_a, Q_b give the orthonormal map Q_a Q_b^T that carries what the data
    hold along b's residualised cosine and sine to a's."""
    R = planes - base @ (np.linalg.pinv(base) @ planes)
    w, v = np.linalg.eigh(np.swapaxes(R, -1, -2) @ R)
    if np.any(w <= 1e-12 * (planes**2).sum((-2, -1))[..., None]):
        raise ValueError("a plane lies (nearly) in the base's span: it has no residual frame")
    return R @ (v / np.sqrt(w)[..., None, :]) @ np.swapaxes(v, -1, -2)

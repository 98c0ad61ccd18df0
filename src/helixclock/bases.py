"""The bases of the paper's fits, as functions of the numbers alone (no torch).

A number a is modelled as ``h = helix(a) = B(a) C``, with the basis

    B(a) = [a / scale, cos(2 pi a / T_1), sin(2 pi a / T_1), ..., cos(2 pi a / T_k), sin(2 pi a / T_k), 1]

(paper section 4.2; the authors' code normalises the linear term by max(a) and adds a constant
column).  Baselines (section 4.3): a *circle* drops the linear term, a *polynomial* of degree
2k+1 replaces the Fourier terms by powers of a / scale.  Several variables add their bases:
``helix(a, b, a+b) = helix(a) + helix(b) + helix(a+b)`` (one constant column, section 5.1).
:mod:`helixclock.fits` solves them against residuals; :mod:`helixclock.preconditions` counts
their columns before any model is loaded.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

PERIODS = (2, 5, 10, 100)


SCALES = {"a": 99.0, "b": 99.0, "a+b": 198.0}


@dataclass(frozen=True)
class FitSettings:
    """The periods of the helix bases, the PCA the fits are solved in, and ``compat`` (the
    authors' unscaled polynomial with "authors")."""

    periods: tuple[int, ...] = PERIODS
    pca_components: int = 100
    compat: str = "corrected"

    def __post_init__(self):
        object.__setattr__(self, "periods", tuple(int(t) for t in self.periods))
        check_compat(self.compat)


@dataclass(frozen=True)
class Basis:
    """A basis of functions of one or more variables (a, b, a+b).

    kind: "helix" (linear + Fourier), "circle" (Fourier only) or "poly" (powers 1..degree).
    A constant column is always last.  ``scaled=False`` (``compat: authors``) makes a
    polynomial of raw powers a^1..a^degree, solved as the authors did with scikit-learn's
    LinearRegression: with powers up to 99^9 the basis' condition number is ~1e18 and least
    squares keeps only a few of its directions.
    """

    kind: str
    periods: tuple[int, ...] = ()
    degree: int = 0
    variables: tuple[str, ...] = ("a",)
    scaled: bool = True

    def __post_init__(self):
        if self.kind not in ("helix", "circle", "poly"):
            raise ValueError(f"basis kind {self.kind!r}; allowed: helix, circle, poly")
        if self.kind == "poly" and self.degree < 1:
            raise ValueError("a polynomial basis needs degree >= 1")
        if self.kind != "poly" and not self.periods:
            raise ValueError(f"a {self.kind} basis needs at least one period")
        if not self.scaled and self.kind != "poly":
            raise ValueError("only a polynomial basis can be unscaled (compat: authors)")

    @property
    def k(self) -> int:
        """Number of Fourier features (poly: (degree - 1) / 2, matching parameter counts)."""
        return len(self.periods) if self.kind != "poly" else (self.degree - 1) // 2

    @property
    def name(self) -> str:
        var = ",".join(self.variables)
        if self.kind == "poly":
            return f"poly{self.degree}({var})"
        return f"{self.kind}({var})[{','.join(str(t) for t in self.periods)}]"

    def columns(self) -> list[str]:
        cols = []
        for v in self.variables:
            if self.kind == "poly":
                cols += [f"{v}^{j}" for j in range(1, self.degree + 1)]
                continue
            if self.kind == "helix":
                cols.append(v)
            for T in self.periods:
                cols += [f"cos {v} T={T}", f"sin {v} T={T}"]
        return cols + ["const"]

    @property
    def n_params(self) -> int:
        """Columns without the constant (the paper's parameter count: helix 2k+1)."""
        return len(self.columns()) - 1

    def __call__(self, values: Mapping[str, np.ndarray] | np.ndarray) -> np.ndarray:
        if not isinstance(values, Mapping):
            values = {self.variables[0]: values}
        n = len(next(iter(values.values())))
        cols = []
        for v in self.variables:
            x = np.asarray(values[v], dtype=np.float64)
            s = x / SCALES.get(v, 99.0) if self.scaled else x
            if self.kind == "poly":
                cols += [s**j for j in range(1, self.degree + 1)]
                continue
            if self.kind == "helix":
                cols.append(s)
            for T in self.periods:
                cols += [np.cos(2 * np.pi * x / T), np.sin(2 * np.pi * x / T)]
        cols.append(np.ones(n))
        return np.stack(cols, 1)


def period_subsets(periods: Sequence[int] = PERIODS, k: int | None = None) -> list[tuple[int, ...]]:
    ks = [k] if k else range(1, len(periods) + 1)
    return [s for kk in ks for s in itertools.combinations(periods, kk)]


COMPAT = ("corrected", "authors")


def check_compat(compat: str) -> str:
    if compat not in COMPAT:
        raise ValueError(f"config key 'compat': value {compat!r} is not one of the allowed values {', '.join(COMPAT)}")
    return compat


def standard_bases(periods: Sequence[int] = PERIODS, variables=("a",), compat: str = "corrected") -> list[Basis]:
    """Helix and circle for every subset of ``periods``, polynomial of degree 2k+1 for each k
    (scaled powers; raw powers with ``compat="authors"``)."""
    out = []
    for kind in ("helix", "circle"):
        out += [Basis(kind, s, variables=variables) for s in period_subsets(periods)]
    out += [
        Basis("poly", degree=2 * k + 1, variables=variables, scaled=check_compat(compat) == "corrected")
        for k in range(1, len(periods) + 1)
    ]
    return out


SUM = "a+b"


def sum_values(a, b) -> dict[str, np.ndarray]:
    """The variables of the last-token fits: a, b and a+b."""
    a, b = np.asarray(a), np.asarray(b)
    return {"a": a, "b": b, SUM: a + b}


def clock_bases(periods: Sequence[int] = PERIODS) -> list[Basis]:
    """The last-token fits of the Clock: helix(a, b, a+b), helix(a+b) and helix(a, b)."""
    T = tuple(periods)
    return [
        Basis("helix", T, variables=("a", "b", SUM)),
        Basis("helix", T, variables=(SUM,)),
        Basis("helix", T, variables=("a", "b")),
    ]


def full_bases(periods: Sequence[int] = PERIODS, variable: str = "a", compat: str = "corrected") -> list[Basis]:
    """Helix and circle with every period, polynomial with as many parameters as the helix."""
    v = (variable,)
    return [
        Basis("helix", tuple(periods), variables=v),
        Basis("circle", tuple(periods), variables=v),
        Basis("poly", degree=2 * len(periods) + 1, variables=v, scaled=check_compat(compat) == "corrected"),
    ]

"""The bases of the paper's fits, as functions of the numbers alone (no torch).

A number a is modelled as ``h = helix(a) = B(a) C``, with the basis

    B(a) = [a / scale, cos(2 pi a / T_1), sin(2 pi a / T_1), ..., cos(2 pi a / T_k), sin(2 pi a / T_k), 1]

(paper section 4.2; the authors' code normalises the linear term by max(a) and adds a constant
column).  Baselines (section 4.3): a *circle* drops the linear term, a *polynomial* of degree
2k+1 replaces the Fourier terms by powers of a / scale.  Several variables add their bases:
``helix(a, b, a+b) = helix(a) + helix(b) + helix(a+b)`` (one constant column, section 5.1).
:mod:`helixclock.fitting.fits` solves them against residuals; :mod:`helixclock.jobs.preconditions` counts
their columns before any model is loaded.

Two more kinds serve the question of what a number's last token encodes when the tokenizer
splits numbers into digits (docs/several-tokens.md, "Numbers of several tokens"; helixclock's, not the
paper's): *digits*, the per-digit circles of Levy & Geva (NAACL 2025) - cos/sin 2 pi d / 10 of
the tens, hundreds ... digit d of n - and *classes*, the linear term with one indicator per
digit-count class (a digit tokenizer's token count).  A third, *onehot*, is the richest
function of each digit alone (one indicator per nonzero digit at each place, 9 a place): the
base of the nested T = 100 test (:mod:`helixclock.stages.structure.nested`), over which every
period dividing 10 adds nothing (a function of the units digit).  :class:`Combined` joins bases
into one design; :func:`number_bases` names the competing sets.  None changes the paper's kinds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

PERIODS = (2, 5, 10, 100)
KINDS = ("helix", "circle", "poly", "digits", "classes", "onehot")
PLACES = ("units", "tens", "hundreds", "thousands")


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

    kind: "helix" (linear + Fourier), "circle" (Fourier only), "poly" (powers 1..degree),
    "digits" (cos/sin 2 pi d_p / T of the digit d_p = floor(n / 10^p) mod 10 at each place p
    of ``places``, 0 units, 1 tens, 2 hundreds, for each T of ``periods``: Levy & Geva's digit
    circles with ``periods=(10,)``, 2 parameters a place) or "classes" (the linear term, then
    the indicator of "n has p + 1 digits", 10^p <= n < 10^(p+1), for each p of ``places``:
    1 + len(places) parameters; with p = 1, 2 the constants of the two- and three-digit classes
    beside the one-digit class, a digit tokenizer's token counts) or "onehot" (the indicator of
    "digit d_p = k" for k = 1..9 at each place p of ``places``, 9 parameters a place, digit 0
    the constant's: any function of each digit alone, summed over places).  "digits",
    "classes" and "onehot" read non-negative integers.  A constant column is always last.  ``scaled=False``
    (``compat: authors``) makes a polynomial of raw powers a^1..a^degree, solved as the
    authors did with scikit-learn's LinearRegression: with powers up to 99^9 the basis'
    condition number is ~1e18 and least squares keeps only a few of its directions.
    """

    kind: str
    periods: tuple[int, ...] = ()
    degree: int = 0
    variables: tuple[str, ...] = ("a",)
    scaled: bool = True
    places: tuple[int, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"basis kind {self.kind!r}; allowed: {', '.join(KINDS)}")
        if self.kind == "poly" and self.degree < 1:
            raise ValueError("a polynomial basis needs degree >= 1")
        if self.kind in ("helix", "circle", "digits") and not self.periods:
            raise ValueError(f"a {self.kind} basis needs at least one period")
        if not self.scaled and self.kind != "poly":
            raise ValueError("only a polynomial basis can be unscaled (compat: authors)")
        if self.kind in ("digits", "classes", "onehot"):
            if not self.places:
                raise ValueError(f"a {self.kind} basis needs at least one digit place (0 units, 1 tens, ...)")
            lowest = 1 if self.kind == "classes" else 0
            if min(self.places) < lowest or len(set(self.places)) < len(self.places):
                raise ValueError(f"{self.kind} basis places {self.places}: distinct integers >= {lowest} allowed")
            if self.kind in ("classes", "onehot") and self.periods:
                raise ValueError(f"a {self.kind} basis takes no periods")
        elif self.places:
            raise ValueError(f"a {self.kind} basis takes no digit places (only digits, classes and onehot do)")

    @property
    def k(self) -> int:
        """Number of Fourier features (poly: (degree - 1) / 2, matching parameter counts)."""
        return len(self.periods) if self.kind != "poly" else (self.degree - 1) // 2

    @property
    def name(self) -> str:
        var = ",".join(self.variables)
        if self.kind == "poly":
            return f"poly{self.degree}({var})"
        if self.kind == "digits":
            what = ",".join(place_name(p) for p in self.places)
            return f"digits({var})[{what}; T={','.join(map(str, self.periods))}]"
        if self.kind == "classes":
            return f"classes({var})[{','.join(str(p + 1) for p in self.places)} digits]"
        if self.kind == "onehot":
            return f"onehot({var})[{','.join(place_name(p) for p in self.places)}]"
        return f"{self.kind}({var})[{','.join(str(t) for t in self.periods)}]"

    def columns(self) -> list[str]:
        cols = []
        for v in self.variables:
            if self.kind == "poly":
                cols += [f"{v}^{j}" for j in range(1, self.degree + 1)]
                continue
            if self.kind == "digits":
                cols += [
                    f"{c} {v} {place_name(p)} T={T}" for p in self.places for T in self.periods for c in ("cos", "sin")
                ]
                continue
            if self.kind == "onehot":
                cols += [f"{v} {place_name(p)}={k}" for p in self.places for k in range(1, 10)]
                continue
            if self.kind in ("helix", "classes"):
                cols.append(v)
            if self.kind == "classes":
                cols += [f"{v} has {p + 1} digits" for p in self.places]
                continue
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
            if self.kind == "digits":
                for p in self.places:
                    d = digit(x, p, v)
                    for T in self.periods:
                        cols += [np.cos(2 * np.pi * d / T), np.sin(2 * np.pi * d / T)]
                continue
            if self.kind == "onehot":
                for p in self.places:
                    d = digit(x, p, v)
                    cols += [(d == k).astype(np.float64) for k in range(1, 10)]
                continue
            if self.kind in ("helix", "classes"):
                cols.append(s)
            if self.kind == "classes":
                n_digits = digit_count(x, v)
                cols += [(n_digits == p + 1).astype(np.float64) for p in self.places]
                continue
            for T in self.periods:
                cols += [np.cos(2 * np.pi * x / T), np.sin(2 * np.pi * x / T)]
        cols.append(np.ones(n))
        return np.stack(cols, 1)


def place_name(p: int) -> str:
    """units, tens, hundreds, thousands, then "10^p"."""
    return PLACES[p] if p < len(PLACES) else f"10^{p}"


def _integers(x: np.ndarray, variable: str) -> np.ndarray:
    if np.any(x < 0) or np.any(x != np.round(x)):
        bad = x[(x < 0) | (x != np.round(x))][0]
        raise ValueError(f"digit bases read non-negative integers; variable {variable!r} holds {bad}")
    return x


def digit(x: np.ndarray, place: int, variable: str = "n") -> np.ndarray:
    """The digit of each number at ``place`` (0 units, 1 tens, ...): floor(x / 10^place) mod 10
    (0 above a number's leading digit, as a number written with leading zeros)."""
    return np.floor(_integers(x, variable) / 10**place) % 10


def digit_count(x: np.ndarray, variable: str = "n") -> np.ndarray:
    """How many digits each number has (0 has one): its token count under a digit tokenizer."""
    x = _integers(x, variable)
    count = np.ones(x.shape, dtype=np.int64)
    p = 1
    while np.any(x >= 10**p):
        count += x >= 10**p
        p += 1
    return count


@dataclass(frozen=True)
class Combined:
    """Several bases joined into one design: the columns of each part in order, a column
    whose name an earlier part has already given left out (the same name is the same function
    of the same variable: helix's and classes' linear term, helix's and a circle's cos/sin
    of one period), one constant column last.  ``name`` is the name tables use."""

    name: str
    parts: tuple[Basis, ...]

    def __post_init__(self):
        if not self.parts:
            raise ValueError(f"combined basis {self.name!r} needs at least one part")

    def _keep(self) -> list[tuple[int, int, str]]:
        seen, keep = set(), []
        for i, part in enumerate(self.parts):
            for j, c in enumerate(part.columns()[:-1]):
                if c not in seen:
                    seen.add(c)
                    keep.append((i, j, c))
        return keep

    def columns(self) -> list[str]:
        return [c for _, _, c in self._keep()] + ["const"]

    @property
    def n_params(self) -> int:
        """Columns without the constant."""
        return len(self.columns()) - 1

    def __call__(self, values: Mapping[str, np.ndarray] | np.ndarray) -> np.ndarray:
        mats = [part(values) for part in self.parts]
        cols = [mats[i][:, j] for i, j, _ in self._keep()]
        return np.stack(cols + [mats[0][:, -1]], 1)


def number_bases(periods: Sequence[int] = PERIODS, n_digits: int = 3, variable: str = "n") -> list[Combined]:
    """The competing bases of a number n of up to ``n_digits`` digits, all functions of n alone.

    On integers every period T dividing 10 is a function of the units digit alone
    (sin 2 pi n / 2 = 0), so the paper's helix splits into a units part U, the circles of those
    periods, and the rest R, the linear term and the other periods' circles.  Each set shares U
    and varies the rest (column counts without the constant, for the default periods 2, 5, 10,
    100 and three digits; on integers sin n T=2 vanishes, one column fewer in effect):

    ========================================  =====================================  =======
    name                                      columns                                 count
    ========================================  =====================================  =======
    units digit                               U = cos/sin n T=2, 5, 10                6 (5)
    helix                                     U + n + cos/sin n T=100 (the paper's)   9 (8)
    digit circles                             U + cos/sin of the tens, hundreds       10 (9)
                                              digit, T=10 (Levy & Geva)
    digit-count classes                       U + n + [2 digits] + [3 digits]         9 (8)
    helix + digit circles                     helix + tens, hundreds circles          13 (12)
    helix + classes                           helix + [2 digits] + [3 digits]         11 (10)
    digit circles + classes                   U + digit circles + n + indicators      13 (12)
    helix + digit circles + classes           all of them                             15 (14)
    ========================================  =====================================  =======

    The rests are matched as closely as they can be: 3 parameters for the helix and the classes,
    4 for the digit circles (a circle per digit).  With fewer digits the higher places go
    (two digits: the tens circle, the two-digit class).  ``periods`` must hold at least one
    period dividing 10."""
    T = tuple(int(t) for t in periods)
    units = tuple(t for t in T if 10 % t == 0)
    if not units:
        raise ValueError(f"helix periods {list(T)} hold none that divides 10: the shared units-digit part needs one")
    if n_digits < 2:
        raise ValueError(f"n_digits {n_digits}: the digit circles and classes need numbers of 2 digits or more")
    v = (variable,)
    U = Basis("circle", units, variables=v)
    H = Basis("helix", T, variables=v)
    places = tuple(range(1, n_digits))
    D = Basis("digits", (10,), variables=v, places=places)
    C = Basis("classes", variables=v, places=places)
    return [
        Combined("units digit", (U,)),
        Combined("helix", (H,)),
        Combined("digit circles", (U, D)),
        Combined("digit-count classes", (U, C)),
        Combined("helix + digit circles", (H, D)),
        Combined("helix + classes", (H, C)),
        Combined("digit circles + classes", (U, D, C)),
        Combined("helix + digit circles + classes", (H, D, C)),
    ]


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

"""What a number's last token encodes: a T = 100 helix, digit circles, or its token count?

helixclock's extension for numbers of several tokens (docs/several-tokens.md, "Numbers of several tokens"),
not the paper's: the paper's Fig. 2 reads periods off the Fourier spectrum of bare numbers
(section 4.1), but over 0..359 a digit tokenizer splits the numbers into one-, two- and
three-token classes, and a step in token count at 100 peaks at T = 360, 180, 120, a tens-digit
circle at T = 90: the spectrum cannot tell them from a T = 100 helix.  Two tests can:

* **Competing bases, held out.**  The sets of :func:`helixclock.fitting.bases.number_bases` (the
  paper's helix, Levy & Geva's digit circles, digit-count classes with a linear term, and
  their combinations; each shares the units-digit part and varies the rest) are fitted by
  least squares to the bare-number residuals at every layer.  Each is scored by its held-out
  R^2: K folds over numbers (scikit-learn's ``KFold(K, shuffle=True, random_state=seed)``
  folds), each number predicted once by the fit on the other folds, R^2 = 1 - sum of squared
  errors / total sum of squares about the mean of all numbers, summed over every dimension.
  A percentile bootstrap over numbers, resampled two ways (decades and units digits drawn apart:
  :func:`crossed_weights`; the held-out errors of the numbers reweighted, the fits kept) gives
  each R^2 and each paired difference its 95% interval; one basis explains more
  than another only where the interval of the difference excludes 0 (:func:`winner`: which
  single basis explains most, a description; not the verdict on T = 100, since a
  representation that holds digit features *and* a T = 100 component loses this race).
* **The nested test of T = 100** (:mod:`.nested`, the verdict): what cos/sin n T=100 adds,
  held out, to the digit one-hot with the digit-count classes, ranked among what 999
  tens-permuted placebo circles add, Holm across layers, with the smallest planted T = 100
  amplitude it detects.
* **The spectrum without the class step.**  The spectrum of Fig. 2
  (:func:`helixclock.fitting.fourier.fourier_spectrum`) of the numbers with each digit-count class's
  mean removed, and of the two-digit class 10..99 alone (:func:`class_spectra`): which periods
  stand out once the step is gone.  It cannot decide T = 100: over 10..99 a trend and a T = 100
  circle land in the same lowest bin (T = 90).

All functions take the residual cache's bare numbers ``numbers`` [N, L+1, d], row n holding
the number n, and return tidy tables with ``layer`` = resid_pre[layer].  numpy and pandas only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...fitting.bases import PERIODS, Basis, Combined, digit_count, number_bases
from ...fitting.fourier import fourier_spectrum, spectrum_peaks
from ...lm.config import ConfigError

REFERENCE = "helix"
CANDIDATES = ("units digit", "helix", "digit circles", "digit-count classes")
VANISH = 1e-9  # a column no larger than this on every number is zero there (sin n T=2 on integers)
RANK_TOL = 1e-10  # singular values below this fraction of the largest are dropped (min-norm fit)
SPECTRA = ("raw", "class means removed", "two-digit class")


def design(basis: Combined | Basis, n: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The design matrix of ``basis`` on the numbers ``n`` [N, p] and its column names, without
    the columns that vanish on every number (sin n T=2 on integers, the indicator of a class
    no number falls in): those carry no information, and least squares on a column of
    rounding noise would fit the noise.  The constant column stays last."""
    A = basis(np.asarray(n, dtype=np.float64))
    keep = np.abs(A).max(0) > VANISH
    keep[-1] = True
    return A[:, keep], [c for c, k in zip(basis.columns(), keep) if k]


def kfold(n_numbers: int, folds: int, seed: int) -> np.ndarray:
    """The fold of each number [N]: a seeded permutation cut into ``folds`` consecutive parts,
    the first N mod folds of them one number larger - scikit-learn's ``KFold(folds,
    shuffle=True, random_state=seed)`` folds (the tests check they are equal)."""
    order = np.random.RandomState(seed).permutation(n_numbers)
    sizes = np.full(folds, n_numbers // folds)
    sizes[: n_numbers % folds] += 1
    fold = np.empty(n_numbers, dtype=np.int64)
    fold[order] = np.repeat(np.arange(folds), sizes)
    return fold


def _union(designs: Sequence[tuple[np.ndarray, list[str]]]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Every column of the designs once [N, m] (the same name is the same column) and each
    design's columns as indices into it."""
    names, cols = [], []
    for A, columns in designs:
        for c, x in zip(columns, A.T):
            if c not in names:
                names.append(c)
                cols.append(x)
    return np.stack(cols, 1), [np.array([names.index(c) for c in columns]) for _, columns in designs]


def _errors(F: np.ndarray, index: Sequence[np.ndarray], X: np.ndarray, fold: np.ndarray | None) -> np.ndarray:
    """Squared errors of each number under each basis at each layer, summed over dimensions
    [N, bases, layers]: held out (each number predicted by the fit on the other folds) or, with
    ``fold=None``, in sample.  X [N, layers, d], centred over numbers.

    Least squares on the training numbers, minimum-norm (singular values below RANK_TOL of the
    largest dropped): with A_S = U diag(s) V^T the basis' columns S of F on them, the
    coefficients are C = V diag(1 / s^2) V^T M_S, M = F^T X the one product of a fold that every
    basis shares, and a held-out number's prediction is w C with w = f_S V diag(1 / s^2) V^T.
    Its squared error at layer l is ||x_l||^2 - 2 w M_l x_l + w M_l M_l^T w, so no prediction
    of d dimensions is ever formed: the cost is a few products of M with X per fold."""
    n, layers, _ = X.shape
    E = np.empty((n, len(index), layers))
    Xl = X.transpose(1, 0, 2)  # [layers, N, d]
    sq = np.einsum("lnd,lnd->nl", Xl, Xl)
    FtX = np.einsum("nm,lnd->lmd", F, Xl, optimize=True)  # [layers, m, d]
    for f in [None] if fold is None else np.unique(fold):
        test = np.ones(n, bool) if f is None else fold == f
        Ft = F[test]
        M = FtX if f is None else FtX - np.einsum("nm,lnd->lmd", Ft, Xl[:, test], optimize=True)
        G = Xl[:, test] @ M.transpose(0, 2, 1)  # [layers, test, m]: M_l x_l
        K = M @ M.transpose(0, 2, 1)  # [layers, m, m]
        Ftrain = F if f is None else F[~test]
        for b, S in enumerate(index):
            _, s, Vt = np.linalg.svd(Ftrain[:, S], full_matrices=False)
            keep = s > RANK_TOL * s[0]
            W = np.zeros((len(Ft), F.shape[1]))
            W[:, S] = Ft[:, S] @ (Vt[keep].T / s[keep] ** 2) @ Vt[keep]
            E[test, b] = sq[test] - 2 * np.einsum("nm,lnm->nl", W, G) + np.einsum("nm,lmk,nk->nl", W, K, W)
    return E


def crossed_weights(n_numbers: int, n_boot: int, seed: int) -> np.ndarray:
    """Bootstrap weights of the numbers 0..N-1 [n_boot, N], resampled two ways: the decades
    (n // 10) and the units digits (n % 10) drawn with replacement apart, a number weighted by its
    decade's count times its units digit's.  The numbers' dependence is crossed (numbers of one
    decade share a tens digit, numbers of one units digit share it), so resampling the numbers as
    if independent would make the intervals too narrow."""
    idx = np.arange(n_numbers)
    decade, unit = idx // 10, idx % 10
    rng = np.random.default_rng(seed)
    n_dec, n_unit = int(decade.max()) + 1, int(unit.max()) + 1
    by_decade = rng.multinomial(n_dec, np.full(n_dec, 1 / n_dec), size=n_boot).astype(np.float64)
    by_unit = rng.multinomial(n_unit, np.full(n_unit, 1 / n_unit), size=n_boot).astype(np.float64)
    return by_decade[:, decade] * by_unit[:, unit]


def _interval(boots: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = (1 - level) / 2
    low, high = np.quantile(boots, [alpha, 1 - alpha], axis=-1)
    return low, high


def _numbers(numbers) -> np.ndarray:
    X = np.asarray(numbers, dtype=np.float64)
    if X.ndim != 3 or X.shape[0] < 2:
        raise ValueError(f"numbers: shape {X.shape}; expected [N numbers, L+1 layers, d_model], N >= 2")
    return X


def _check(X: np.ndarray, folds: int, n_boot: int, level: float, widest: int) -> None:
    n = X.shape[0]
    if not 2 <= folds <= n:
        raise ValueError(f"folds {folds}: allowed 2..{n} (the count of numbers)")
    if n - -(-n // folds) <= widest:
        raise ValueError(
            f"{n} numbers in {folds} folds leave {n - -(-n // folds)} to fit a basis of {widest} columns; "
            f"more numbers or more folds needed"
        )
    flat = np.flatnonzero(X.var(0).sum(-1) == 0)
    if len(flat):
        raise ValueError(f"numbers: no variance over the numbers at layer(s) {flat.tolist()}; R^2 needs some")
    if n_boot < 1:
        raise ValueError(f"n_boot {n_boot}: allowed 1 or more")
    if not 0 < level < 1:
        raise ValueError(f"level {level}: allowed between 0 and 1")


def compare_number_bases(
    numbers,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    level: float = 0.95,
    periods: Sequence[int] = PERIODS,
    bases: Sequence[Combined] | None = None,
) -> dict[str, pd.DataFrame]:
    """Held-out R^2 of each basis at every layer, with bootstrap intervals.

    ``bases`` defaults to :func:`helixclock.fitting.bases.number_bases` for the digits of N - 1 (the
    helix with ``periods``).  Returns

    * ``r2``: one row per layer x basis: ``layer``, ``basis``, ``columns`` (its parameters, the
      constant not counted), ``rank`` (the parameters these numbers tell apart: columns that
      vanish or repeat another are not counted), ``n_numbers``, ``folds``, ``r2_in_sample``
      (fit and scored on every number), ``r2`` (held out) with ``r2_low``, ``r2_high``, the
      paired difference from the helix ``diff_helix`` = r2 - r2 of the helix with
      ``diff_helix_low``, ``diff_helix_high``, and ``vs_helix``: "higher" or "lower" where that
      interval excludes 0, else "not distinguished" ("reference" for the helix itself);
    * ``pairs``: one row per layer x basis x other basis: ``layer``, ``basis``, ``other``,
      ``diff`` = r2(basis) - r2(other), ``low``, ``high``;
    * ``winner``: :func:`winner` of ``pairs`` over :data:`CANDIDATES`.
    """
    X = _numbers(numbers)
    n, layers = X.shape[:2]
    bases = list(bases) if bases is not None else number_bases(periods, n_digits=len(str(n - 1)))
    designs = [design(b, np.arange(n)) for b in bases]
    _check(X, folds, n_boot, level, max(len(c) for _, c in designs))
    names = [b.name for b in bases]
    if REFERENCE not in names:
        raise ValueError(f"bases {names}: the comparison needs the reference basis {REFERENCE!r}")

    fold = kfold(n, folds, seed)
    X = X - X.mean(0)  # every basis has a constant column: centring changes no prediction
    total = (X**2).sum(-1)  # [N, layers]
    F, index = _union(designs)
    held = _errors(F, index, X, fold)  # [N, bases, layers]
    inside = _errors(F, index, X, None)

    r2 = 1 - held.sum(0) / total.sum(0)  # [bases, layers]
    counts = crossed_weights(n, n_boot, seed)  # decades x units digits
    boots = 1 - np.einsum("nkl,bn->klb", held, counts) / (total.T @ counts.T)  # [bases, layers, B]
    r2_low, r2_high = _interval(boots, level)
    diff = r2[:, None] - r2[None]  # [bases, others, layers]
    diff_low, diff_high = _interval(boots[:, None] - boots[None], level)

    k = len(bases)
    ref = names.index(REFERENCE)
    grid = {"layer": np.tile(np.arange(layers), k), "basis": np.repeat(names, layers)}
    vs = np.where(diff_low[:, ref] > 0, "higher", np.where(diff_high[:, ref] < 0, "lower", "not distinguished"))
    vs[ref] = "reference"
    table = pd.DataFrame(
        {
            **grid,
            "columns": np.repeat([b.n_params for b in bases], layers),
            "rank": np.repeat([np.linalg.matrix_rank(A) - 1 for A, _ in designs], layers),
            "n_numbers": n,
            "folds": folds,
            "r2_in_sample": (1 - inside.sum(0) / total.sum(0)).ravel(),
            "r2": r2.ravel(),
            "r2_low": r2_low.ravel(),
            "r2_high": r2_high.ravel(),
            "diff_helix": diff[:, ref].ravel(),
            "diff_helix_low": diff_low[:, ref].ravel(),
            "diff_helix_high": diff_high[:, ref].ravel(),
            "vs_helix": vs.ravel(),
        }
    )
    i, j, layer = np.meshgrid(np.arange(k), np.arange(k), np.arange(layers), indexing="ij")
    off = i != j
    pairs = pd.DataFrame(
        {
            "layer": layer[off],
            "basis": np.asarray(names)[i[off]],
            "other": np.asarray(names)[j[off]],
            "diff": diff[off],
            "low": diff_low[off],
            "high": diff_high[off],
        }
    ).sort_values(["layer", "basis", "other"], kind="stable", ignore_index=True)
    among = [c for c in CANDIDATES if c in names]
    table = table.sort_values(["layer"], kind="stable", ignore_index=True)
    return {"r2": table, "pairs": pairs, "winner": winner(pairs, among if len(among) > 1 else names)}


def winner(pairs: pd.DataFrame, among: Sequence[str] = CANDIDATES) -> pd.DataFrame:
    """Which single basis explains a number best at each layer, among ``among`` (by default the
    units digit alone, the helix, the digit circles and the digit-count classes: the sets that
    share the units part and differ in the rest, the combinations left to say what one adds to
    another).  A description, not the verdict on a T = 100 component: that is the nested test
    of :mod:`.nested` (the helix alone lacks the class step and the tens circle, so a
    representation with digits and a T = 100 component loses this race).

    Rule: the *best* is the candidate of the highest held-out R^2; it is the *winner* when the
    interval (95% by default) of its paired difference from every other candidate lies above 0
    (its lower bound > 0), else the
    layer's winner is "not distinguished".  One row per layer: ``layer``, ``best``, ``winner``,
    ``closest`` (the other candidate whose difference from the best has the lowest lower bound),
    ``diff``, ``low``, ``high`` (that difference, best - closest, and its interval), ``tied``
    (the candidates whose interval against the best includes 0, joined by " | ", empty if none).
    """
    among = list(among)
    if len(among) < 2:
        raise ValueError(f"winner needs two candidates or more; got {among}")
    missing = sorted(set(among) - set(pairs["basis"]))
    if missing:
        raise ValueError(f"candidates {missing} are not in the table; it has {sorted(set(pairs['basis']))}")
    sub = pairs[pairs["basis"].isin(among) & pairs["other"].isin(among)]
    rows = []
    for layer, g in sub.groupby("layer", sort=True):
        # sum over others of r2(b) - r2(other) = K r2(b) - sum of all: largest for the highest r2
        best = g.groupby("basis")["diff"].sum().idxmax()
        mine = g[g["basis"] == best]
        close = mine.loc[mine["low"].idxmin()]
        tied = mine.loc[mine["low"] <= 0, "other"].tolist()
        rows.append(
            {
                "layer": int(layer),
                "best": best,
                "winner": best if not tied else "not distinguished",
                "closest": close["other"],
                "diff": float(close["diff"]),
                "low": float(close["low"]),
                "high": float(close["high"]),
                "tied": " | ".join(tied),
            }
        )
    return pd.DataFrame(rows)


LEVEL_SHARE = 0.5  # the share of its largest gain at which the whole number has reached its last token
UNITS = "units digit"


def levelled_layer(r2: pd.DataFrame, share: float = LEVEL_SHARE) -> pd.DataFrame:
    """The layer at which a number's last token has gathered the whole number: the first layer
    whose *gain* - the held-out R^2 of the paper's helix minus that of the units digit alone
    (what the last token's own digit explains) - reaches ``share`` (half) of its largest over
    layers.  The helix's R^2 alone will not do: its T = 10 circle is the units digit's, so it is
    high at the embedding already.  Half, not "within 95%": the gain may rise in two steps, the
    number arriving in the early blocks and a second rise near the output (on SmolLM2-135M the
    gain is 0.17 at resid_pre[5], level to block 19, and 0.26 at block 27, where the digit-count
    classes explain most); the rule names the first step, the paper's reading of a number's
    representation, not the late one.  The rule helixclock states for choosing ``structure.layer`` and
    ``helix.figure_layer`` of a model whose numbers take several tokens (docs/several-tokens.md, "Numbers of
    several tokens"): at resid_pre[1] such a model's last token is still its units digit.
    One row (``layer`` empty where the gain is nowhere above 0): ``share``, ``layer``, ``gain``
    (with ``gain_low``, ``gain_high``: the interval of the paired difference), ``r2`` (the
    helix's there), ``max_gain``, ``max_layer``."""
    if not 0 < share <= 1:
        raise ValueError(f"share {share!r}: allowed 0 < share <= 1")
    missing = sorted({REFERENCE, UNITS} - set(r2["basis"]))
    if missing:
        raise ValueError(f"bases {missing} are not in the table; it has {sorted(set(r2['basis']))}")
    helix = r2[r2["basis"] == REFERENCE].set_index("layer").sort_index()
    units = r2[r2["basis"] == UNITS].set_index("layer").loc[helix.index]
    gain = -units["diff_helix"]  # r2(helix) - r2(units digit), interval [-high, -low]
    if gain.max() <= 0:  # the helix explains no more than the units digit anywhere: no layer to name
        empty = dict.fromkeys(("layer", "gain", "gain_low", "gain_high", "r2"), np.nan)
        return pd.DataFrame([{"share": share, **empty, "max_gain": float(gain.max()), "max_layer": int(gain.idxmax())}])
    first = int(gain.index[gain >= share * gain.max()][0])
    return pd.DataFrame(
        [
            {
                "share": share,
                "layer": first,
                "gain": float(gain[first]),
                "gain_low": float(-units.loc[first, "diff_helix_high"]),
                "gain_high": float(-units.loc[first, "diff_helix_low"]),
                "r2": float(helix.loc[first, "r2"]),
                "max_gain": float(gain.max()),
                "max_layer": int(gain.idxmax()),
            }
        ]
    )


REGISTRY_LAYERS = {"structure": "layer", "helix": "figure_layer"}  # the keys the layer rule sets


def check_registry_layers(layer: pd.DataFrame, registry: dict | None, model: str = "") -> None:
    """The layers a registry entry sets by hand (``structure.layer``, ``helix.figure_layer``),
    stated by the rule (docs/several-tokens.md, "Numbers of several tokens"), against the rule's (``layer``:
    :func:`levelled_layer`'s row): another value is an error naming the key and both layers."""
    rule = layer["layer"].iloc[0]
    for section, key in REGISTRY_LAYERS.items():
        value = (registry or {}).get(section, {}).get(key)
        if value is None or (not pd.isna(rule) and int(value) == int(rule)):
            continue
        shown = (
            "no layer (the helix gains over the units digit nowhere)" if pd.isna(rule) else f"resid_pre[{int(rule)}]"
        )
        raise ConfigError(
            f"registry key '{model}.{section}.{key}': value {value}, but the layer rule "
            f"(structure/number_bases_layer.csv) gives {shown}; set it to the rule's layer"
        )


def class_spectra(numbers, n_fourier: int = 360, n_peaks: int = 10) -> dict[str, pd.DataFrame]:
    """Fig. 2's spectrum at every layer, with the digit-count class step taken out.

    Numbers 0..n-1 with n = min(``n_fourier``, N - 1), as :func:`.analysis.peaks_by_layer`.
    Three ``variant``s: "raw" (Fig. 2's spectrum), "class means removed" (each digit-count
    class's mean over its numbers subtracted first: a step in token count leaves nothing) and
    "two-digit class" (the numbers 10..99 alone, periods 90 / k; left out below 30 numbers).
    Returns ``spectrum`` (one row per variant x layer x frequency: ``variant``, ``n_numbers``, ``layer``, ``frequency``,
    ``period``, ``magnitude``) and ``peaks`` (one row per variant x layer x rank, the strongest
    ``n_peaks`` local maxima of :func:`helixclock.fitting.fourier.spectrum_peaks`: ``rank``, ``period``,
    ``frequency``, ``magnitude``, ``relative_to_median``)."""
    X = _numbers(numbers)
    n = min(n_fourier, X.shape[0] - 1)
    if n < 20:
        raise ValueError(f"n_fourier {n_fourier} with {X.shape[0]} numbers: a spectrum needs 20 numbers or more")
    X = X[:n]
    classes = digit_count(np.arange(n, dtype=np.float64))
    removed = X.copy()
    for c in np.unique(classes):
        removed[classes == c] -= X[classes == c].mean(0)
    raw, without, two = SPECTRA
    variants = {raw: X, without: removed}
    if min(n, 100) - 10 >= 20:  # the two-digit class alone, where it has 20 numbers or more
        variants[two] = X[10 : min(n, 100)]
    spectra, peaks = [], []
    for variant, V in variants.items():
        for layer in range(V.shape[1]):
            periods, mag = fourier_spectrum(V[:, layer])
            label = {"variant": variant, "n_numbers": len(V), "layer": layer}
            spectra.append(
                pd.DataFrame({**label, "frequency": np.arange(1, len(mag) + 1), "period": periods, "magnitude": mag})
            )
            peaks += [{**label, **p} for p in spectrum_peaks(periods, mag, n_peaks)]
    return {"spectrum": pd.concat(spectra, ignore_index=True), "peaks": pd.DataFrame(peaks)}


def number_bases_tables(
    numbers,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    level: float = 0.95,
    periods: Sequence[int] = PERIODS,
    n_fourier: int = 360,
    n_peaks: int = 10,
) -> dict[str, pd.DataFrame]:
    """Every table of the test: ``r2``, ``pairs``, ``winner`` (:func:`compare_number_bases`),
    ``layer`` (:func:`levelled_layer`) and ``spectrum``, ``peaks`` (:func:`class_spectra`)."""
    compared = compare_number_bases(numbers, folds, seed, n_boot, level, periods)
    return {**compared, "layer": levelled_layer(compared["r2"]), **class_spectra(numbers, n_fourier, n_peaks)}

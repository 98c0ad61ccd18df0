"""The causal nested T = 100 test: does the model *use* a T = 100 circle beyond the digits?

helixclock's extension of sections 4.2-4.4 (docs/findings.md, "The causal nested T = 100 test"), declared for
every model.  The paper takes T = 100 into its helix from the spectrum of numbers (section 4.1) and
shows by patching (section 4.4, Fig. 4) that the helix restores the answer.  A held-out R² increment
of the circle over the digits (Fig. N1) says that a T = 100 component is *in* a residual, not that
the model reads it.  This test asks the model.  On Fig. 4's measuring pairs (a' + b -> a + b), at
every layer of its sweep, the residual at a's last token is replaced by one of three fits, each
evaluated at the pair's clean a:

* **(i) digits**: the digit one-hot of a (one indicator per nonzero digit at each place) with the
  digit-count classes (their linear term and [a >= 10] lie in the one-hot's span: rank 18 over
  0..99, the constant aside);
* **(ii) digits + T=100**: (i) and cos, sin 2 pi a / 100;
* **(iii) digits + placebo**: (i) and the tens-permuted circle cos, sin 2 pi (10 sigma(t) + u) / 100
  (:class:`helixclock.fitting.planes.PermutedCircle`), sigma a permutation of the tens digits
  declared by the run's seed among those whose plane's non-additive part has its largest principal
  cosine to the circle's below 0.5 (:data:`MAX_COSINE`): the same rank and the same non-additive
  norm as (ii) by construction, another direction.  (Interaction columns such as
  (t - 4.5)(u - 4.5) are no placebo: the circle's non-additive part is almost all a tens circle
  times a linear units term, and they lie at cosines 0.79-0.97 to it.)

Each fit is **held out over the values**: the fit patched in for clean a is solved on the
residuals of every other value of a (:func:`held_out_weights`, leave one value out), never on a's
own (in-sample, two more columns always fit a's residual better).  Rows of one value enter as their
mean, weighted by their count (the a token's residual depends on a alone: the paper's fits,
:func:`helixclock.fitting.fits.fit_token`).  The fits are solved in the residual space itself
(over at most 100 distinct values, the paper's 100 principal components span every centred row,
so nothing differs).  Weighting each value by its count of prompts is the paper's fits' (every
prompt a row); over a+b, where prompts of one sum differ, it is least squares over the prompts.

Per pair, ``D_digits`` = LD(ii) - LD(i) and ``D_placebo`` = LD(ii) - LD(iii) (the rows of the raw
table, :func:`helixclock.stages.helix.tables.nested_summary` summarises).  The same at the last
prompt token with the a+b versions of the three fits (fitted over the values of a+b: the mean
residual of the prompts with that sum; 3 digit places where a+b reaches 100), on the same pairs.

For answers of several tokens the last prompt token predicts the first answer token only, and a
pair whose answers share it (45 + 33 -> 46 + 33: "7" then "8" against "9") changes nothing the
model predicts there.  :func:`causal_nested_first_difference` reads the same test at the first
differing token p* (:mod:`helixclock.causal.first_difference`): on the pairs cut after p*, the
residual at each pair's p* is replaced by the a+b fits of the residuals at that answer position,
teacher-forced, of the correct prompts whose answers have as many tokens as the pair's; each
stratum (answer tokens, p*) is fitted and summarised on its own, since the same answer position
predicts the units digit of a two-token answer and the tens digit of a three-token one.  For
one-token answers p* is the last prompt token and this reading is the one above (not repeated).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ...causal.experiments import ld_table
from ...causal.first_difference import first_difference_pairs
from ...fitting.bases import SUM, Basis, Combined, digit_count
from ...fitting.planes import PermutedCircle, placebo_sigmas
from ...patching import Patch, PatchingEngine, Point
from ...patching.runs import Pairs

DIGITS, T100, PLACEBO = "digits", "digits + T=100", "digits + placebo"
BASES = (DIGITS, T100, PLACEBO)
MAX_COSINE = 0.5  # the placebo's largest principal cosine to the T = 100 circle's non-additive part
TOKENS = {"a": "a", "last": SUM}  # the token read (a role) -> the variable fitted there
P_STAR = "p*"  # the token column of the reading at the first differing token (fits over a+b)
RCOND = (
    1e-10  # singular values below this fraction of the largest count as 0 (the classes' columns repeat the one-hot's)
)


def declared_sigma(seed: int) -> tuple[int, ...]:
    """The run's placebo permutation of the tens digits: the first that the seeded draw of
    :func:`helixclock.fitting.planes.placebo_sigmas` finds below :data:`MAX_COSINE` over 0..99
    (fixed by the seed before any model runs)."""
    return tuple(int(s) for s in placebo_sigmas(1, seed, max_cosine=MAX_COSINE)[0])


def nested_designs(variable: str, n_digits: int, sigma: Sequence[int]) -> dict[str, Combined]:
    """The three nested designs of :data:`BASES` for numbers of ``variable`` of up to ``n_digits``
    digits: the digit one-hot of every place with the digit-count classes, then with the T = 100
    circle, then with the tens-permuted circle of ``sigma``."""
    if n_digits < 2:
        raise ValueError(f"n_digits {n_digits}: the nested test needs numbers of 2 digits or more")
    v = (variable,)
    onehot = Basis("onehot", variables=v, places=tuple(range(n_digits)))
    classes = Basis("classes", variables=v, places=tuple(range(1, n_digits)))
    circle = Basis("circle", periods=(100,), variables=v)
    return {
        DIGITS: Combined(DIGITS, (onehot, classes)),
        T100: Combined(T100, (onehot, classes, circle)),
        PLACEBO: Combined(PLACEBO, (onehot, classes, PermutedCircle(sigma, variable))),
    }


def held_out_weights(design: np.ndarray, counts: np.ndarray, rcond: float = RCOND) -> np.ndarray:
    """The leave-one-value-out least-squares smoother [V, V]: row v holds the weights that the fit
    of ``design`` [V, m] (one row per distinct value, weighted by ``counts`` [V]) solved on every
    value but v gives the values' mean responses, evaluated at v; its diagonal is 0.  Predictions
    are ``W @ means``.  Rank-deficient designs are solved by the pseudo-inverse (the fitted value
    at v is unique wherever v's row lies in the span of the others')."""
    design = np.asarray(design, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    V = len(design)
    if V < 2 or counts.shape != (V,) or np.any(counts <= 0):
        raise ValueError(f"held_out_weights: {V} values with counts {counts.shape}; 2 or more values, counts > 0")
    keep = (1.0 - np.eye(V)) * np.sqrt(counts)[None]  # [held out, rows]
    solved = np.linalg.pinv(design[None] * keep[:, :, None], rcond=rcond)  # [V, m, V]
    return np.einsum("vm,vmu->vu", design, solved) * keep


def unspanned(design: np.ndarray, counts: np.ndarray, rcond: float = RCOND) -> np.ndarray:
    """[V] whether each value's row of ``design`` lies outside the span of the other values' rows:
    its held-out fit then extrapolates (a digit no other value has gets the digit 0's level), so
    the pairs of such a value say less of the design than of the extrapolation (counted, per
    design, in the raw table's ``unspanned`` column)."""
    design = np.asarray(design, dtype=np.float64)
    keep = (1.0 - np.eye(len(design))) * np.sqrt(np.asarray(counts, dtype=np.float64))[None]
    A = design[None] * keep[:, :, None]  # [V, V, m]
    projected = np.einsum("vm,vmu,vuk->vk", design, np.linalg.pinv(A, rcond=rcond), A)
    scale = np.maximum(np.linalg.norm(design, axis=1), 1.0)
    return np.linalg.norm(projected - design, axis=1) > 1e-6 * scale


def value_means(
    values: np.ndarray, H: Tensor, layers: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray, Tensor]:
    """The distinct values, their counts and the mean of H [L, rows, d] over the rows of each value
    ([L, V, d], float64)."""
    uniq, inverse, counts = np.unique(np.asarray(values), return_inverse=True, return_counts=True)
    index = torch.as_tensor(inverse, device=H.device)
    layers = range(H.shape[0]) if layers is None else list(layers)
    sums = torch.zeros(len(layers), len(uniq), H.shape[2], dtype=torch.float64, device=H.device)
    for i, layer in enumerate(layers):  # a layer at a time: no float64 copy of every prompt's residuals
        sums[i].index_add_(0, index, H[layer].double())
    return uniq, counts, sums / torch.as_tensor(counts, dtype=torch.float64, device=H.device)[None, :, None]


def design_rank(design: np.ndarray) -> int:
    """Parameters of a design beyond its constant: its numerical rank less one."""
    return int(np.linalg.matrix_rank(design, tol=RCOND * np.linalg.norm(design, 2))) - 1


def held_out_fits(
    values: np.ndarray, H: Tensor, variable: str, sigma: Sequence[int], device=None, layers=None
) -> tuple[np.ndarray, dict[str, Tensor], dict[str, int], dict[str, np.ndarray]]:
    """Each design of :func:`nested_designs` fitted to H [L, rows, d] over ``values`` and
    evaluated held out at every distinct value: the values [V], the predictions {basis: [L, V, d],
    on ``device``, default H's}, each design's rank over the values (the constant aside) and which
    values it cannot reach from the others ({basis: [V] bool}, :func:`unspanned`).  H
    may stay on the host (the last token's residuals of every correct prompt): only the values'
    means [L, V, d] move to ``device``.  ``layers``: those of H to fit (default all), in order."""
    uniq, counts, means = value_means(values, H, layers)
    means = means.to(device if device is not None else H.device)
    designs = nested_designs(variable, int(digit_count(uniq).max()), sigma)
    preds, ranks = {}, {}
    outside = {}
    for name, basis in designs.items():
        X = basis({variable: uniq})
        W = torch.as_tensor(held_out_weights(X, counts), device=means.device)
        preds[name] = torch.einsum("vu,lud->lvd", W, means).float()
        ranks[name] = design_rank(X)
        outside[name] = unspanned(X, counts)
    return uniq, preds, ranks, outside


def value_index(uniq: np.ndarray, clean, where: str = "") -> np.ndarray:
    """The position in the fitted values ``uniq`` (sorted) of each pair's clean value; a clean
    value that no fitted prompt has (``where``: which fit, for the message) is an error."""
    clean = np.asarray(clean)
    at = np.searchsorted(uniq, clean)
    if np.any(at >= len(uniq)) or np.any(uniq[np.minimum(at, len(uniq) - 1)] != clean):
        missing = sorted(set(clean.tolist()) - set(uniq.tolist()))
        raise ValueError(f"the pairs' clean values {missing[:5]} have no residual to fit the nested test from{where}")
    return at


def nested_variants(
    uniq: np.ndarray,
    preds: dict[str, Tensor],
    ranks: dict[str, int],
    clean,
    layers: Sequence[int],
    role: str,
    outside: dict[str, np.ndarray] | None = None,
    **label,
) -> tuple[list[list[Patch]], list[dict]]:
    """One variant per (layer, basis): the residual at ``role`` of layer l replaced, pair by pair,
    by the held-out fit at the pair's clean value (``clean`` [n_pairs]); ``preds`` hold every
    layer of ``layers`` in order.  Label ``unspanned``: how many pairs' clean values the design
    cannot reach from the other values (``outside``, :func:`held_out_fits`; 0 without it)."""
    where = value_index(uniq, clean)
    index = torch.as_tensor(where, device=next(iter(preds.values())).device)
    variants, labels = [], []
    for li, layer in enumerate(layers):
        point = Point("resid_pre", layer, (role,))
        for name in BASES:
            variants.append([Patch(point, preds[name][li, index][:, None])])
            far = int(outside[name][where].sum()) if outside is not None else 0
            labels.append({**label, "layer": layer, "basis": name, "rank": ranks[name], "unspanned": far})
    return variants, labels


def causal_nested(
    engine: PatchingEngine,
    pairs: Pairs,
    residuals: dict[str, tuple[Tensor, np.ndarray]],
    layers: Sequence[int],
    sigma: Sequence[int],
) -> pd.DataFrame:
    """The raw table of the causal nested test on ``pairs`` at each layer of ``layers``:
    ``residuals`` maps a token of :data:`TOKENS` ("a": a's last token, "last": the last prompt
    token) to its residuals [L+1, rows, d] (on the model's device or the host) and the values of
    its variable [rows] (a, or a+b).
    Columns token, variable, layer, basis (:data:`BASES`), rank, unspanned, sigma, then the pairs (by term for
    answers of several tokens, :func:`helixclock.causal.experiments.ld_table`)."""
    variants, labels = [], []
    clean_a = np.asarray(pairs.meta["clean_a"])
    clean = {"a": clean_a, SUM: clean_a + np.asarray(pairs.meta["clean_b"])}
    for token, (H, values) in residuals.items():
        variable = TOKENS[token]
        uniq, preds, ranks, outside = held_out_fits(values, H, variable, sigma, engine.model.device, layers)
        v, lab = nested_variants(
            uniq, preds, ranks, clean[variable], layers, token, outside, token=token, variable=variable
        )
        variants += v
        labels += lab
    result = engine.run(pairs, variants, desc="causal nested T=100 test")
    return ld_table(result, pairs, labels, sigma=" ".join(map(str, sigma)))


def causal_nested_first_difference(
    engine: PatchingEngine,
    pairs: Pairs,
    answer: tuple[Sequence[Tensor], np.ndarray, np.ndarray],
    layers: Sequence[int],
    sigma: Sequence[int],
) -> pd.DataFrame:
    """The causal nested test at the first differing token p* (module docstring), raw table as
    :func:`causal_nested`'s (token :data:`P_STAR`, variable a+b) with each row once per stratum
    (columns ``answer_tokens``, ``p_star``; a pair outside the stratum is NaN) and each stratum's
    own ``rank`` and ``unspanned``.  ``answer``: the correct prompts' residuals at every answer
    position, teacher-forced, at each of ``layers`` ([rows, K, d] each), their (a, b) [rows, 2]
    and answer token counts [rows] (:func:`helixclock.causal.experiments.answer_residuals`).
    Stratum (k, j) is fitted on the residuals at answer position j of the prompts whose answers
    have k tokens, over their sums; a stratum whose sums have fewer than two digits (or fewer than
    two distinct sums) has no digit design to nest the circle in and is left out."""
    residuals, ab, k = answer
    k, sums = np.asarray(k), np.asarray(ab).sum(1)
    differ = first_difference_pairs(pairs)
    cut, at = differ.pairs, differ.at
    tokens = differ.answer_tokens[differ.order]  # each cut row's answer token count
    clean = np.asarray(cut.meta["clean_a"]) + np.asarray(cut.meta["clean_b"])
    device = engine.model.device
    preds = {name: torch.zeros(len(layers), len(cut), residuals[0].shape[-1], device=device) for name in BASES}
    read: dict[tuple[int, int], tuple[dict, dict]] = {}
    for stratum in differ.strata():
        rows = np.flatnonzero((tokens == stratum[0]) & (at == stratum[1]))
        fit = np.flatnonzero(k == stratum[0])
        if len(np.unique(sums[fit])) < 2 or int(digit_count(sums[fit]).max()) < 2:
            continue
        H = torch.stack([r[fit, stratum[1]] for r in residuals])  # [layers, prompts, d], on the host
        uniq, fitted, ranks, outside = held_out_fits(sums[fit], H, SUM, sigma, device)
        where = value_index(uniq, clean[rows], f" (stratum {stratum})")
        index = torch.as_tensor(rows, device=device)
        for name in BASES:
            preds[name][:, index] = fitted[name][:, torch.as_tensor(where, device=device)]
        read[stratum] = ranks, {name: int(outside[name][where].sum()) for name in BASES}
    variants, labels = [], []
    for li, layer in enumerate(layers):
        point = Point("resid_pre", layer, ("last",))  # the cut pairs' last token: each pair's p*
        for name in BASES:
            variants.append([Patch(point, preds[name][li][:, None])])
            labels.append({"token": P_STAR, "variable": SUM, "layer": layer, "basis": name})
    raw = ld_table(engine.run(cut, variants, desc="causal nested T=100 test at p*"), cut, labels)
    table = differ.table(raw)
    kept = [s in read for s in zip(table["answer_tokens"], table["p_star"])]
    table = table[kept].reset_index(drop=True)
    strata = list(zip(table["answer_tokens"], table["p_star"]))
    table.insert(4, "rank", [read[s][0][b] for s, b in zip(strata, table["basis"])])
    table.insert(5, "unspanned", [read[s][1][b] for s, b in zip(strata, table["basis"])])
    table.insert(6, "sigma", " ".join(map(str, sigma)))
    return table

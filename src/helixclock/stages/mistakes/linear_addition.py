"""App. E: why not add along a line? (figE1_linear_addition)

The paper conjectures that models use the Clock algorithm because addition along a line
needs a precision that real representations lack.  Its test: "fit a line" to the first 50
PCA dims of the numbers 0..99 after layer 0 (R^2 = 0.997 for GPT-J) and add on that line.

The paper does not say which line, and two readings give very different R^2 (README,
"Differences from the authors' code"); helixclock computes both (``reading``):

* ``points`` - the line through the points: the least-squares line x(a) ~ x0 + a v in the
  50 dims; R^2 = the share of the points' variance it explains.  Each representation has
  the position t(a) = v . (x(a) - x0) / |v|^2 on it (t(a) = a exactly on the line).
* ``regression`` - a regressed on the 50 dims, a ~ w . x(a) + c: the direction that reads a
  off the representation best; R^2 of that regression, t(a) = w . x(a) + c.  With 50
  features for 100 numbers the in-sample R^2 flatters it, so it is also reported held out:
* ``regression_heldout`` - the same regression with each number predicted by the fit to the
  other 99 (leave-one-out, exact from the hat matrix); t(a) = that prediction.

Both R^2 are given in-sample and leave-one-out (``line_r2``, ``line_r2_heldout``; the PCA is
fitted once on all numbers, unsupervised).  Linear addition predicts the answer n in
[0, 198] nearest to t(a1) + t(a2) and succeeds when n = a1 + a2.  Accuracy over the problems
whose answer a1 + a2 is below a threshold alpha is set against the model's own accuracy on
the same problems (paper, GPT-J: at alpha = 100 linear addition < 20%, GPT-J > 80%).

Everything is numpy (no torch): the inputs are the cached residuals and ``add.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...prompts.tasks import N_ANSWERS

READINGS = ("points", "regression", "regression_heldout")
READING_NAMES = {
    "points": "line through the points",
    "regression": "a regressed on the dims",
    "regression_heldout": "a regressed on the dims, held out",
}


@dataclass(frozen=True)
class NumberLine:
    """A least-squares line through the numbers' PCA coordinates.

    coords: [n, p] PCA coordinates of the numbers 0..n-1; x0, v: [p] intercept and direction;
    r2: 1 - sum |x - x_line|^2 / sum |x - mean x|^2 over all p dims (variance-weighted);
    r2_mean_dim: the mean of the per-dimension R^2 (scikit-learn's "uniform_average");
    r2_heldout: r2 with each number's residual from the line fitted to the others.
    """

    coords: np.ndarray
    x0: np.ndarray
    v: np.ndarray
    r2: float
    r2_mean_dim: float
    r2_heldout: float = np.nan

    @property
    def positions(self) -> np.ndarray:
        """t(a) = v . (x(a) - x0) / |v|^2 for every number, [n]."""
        return (self.coords - self.x0) @ self.v / float(self.v @ self.v)


def pca_coordinates(X: np.ndarray, n_components: int = 50) -> np.ndarray:
    """Coordinates of the rows of X [n, d] on its first ``n_components`` principal
    components (centred; fewer where n or d is smaller), [n, p]."""
    X = np.asarray(X, dtype=np.float64)
    Xc = X - X.mean(0, keepdims=True)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    return Xc @ Vt[:n_components].T


def fit_number_line(X: np.ndarray, n_components: int = 50) -> NumberLine:
    """PCA of the numbers 0..n-1 (rows of X [n, d]) to ``n_components`` dims, then one
    least-squares solve of [1, a] C = coords for the line x(a) = x0 + a v."""
    coords = pca_coordinates(X, n_components)
    a = np.arange(len(coords), dtype=np.float64)
    design = np.stack([np.ones_like(a), a], 1)  # [n, 2]
    coef, *_ = np.linalg.lstsq(design, coords, rcond=None)  # [2, p]
    resid = coords - design @ coef
    centred = coords - coords.mean(0)
    ss_tot = (centred**2).sum(0)
    ss_res = (resid**2).sum(0)
    r2 = 1.0 - ss_res.sum() / ss_tot.sum() if ss_tot.sum() > 0 else 1.0
    live = ss_tot > 1e-12 * max(ss_tot.max(), 1e-300)
    r2_dims = 1.0 - ss_res[live] / ss_tot[live]
    loo = resid / (1 - leverages(design))[:, None]  # each number's residual from the line fitted without it
    r2_loo = 1.0 - (loo**2).sum() / ss_tot.sum() if ss_tot.sum() > 0 else 1.0
    return NumberLine(coords, coef[0], coef[1], float(r2), float(r2_dims.mean()) if live.any() else 1.0, float(r2_loo))


def leverages(design: np.ndarray) -> np.ndarray:
    """The diagonal of the hat matrix H = D (D'D)^+ D' of a design [n, m] (from its thin SVD):
    a least-squares residual e_i becomes the leave-one-out residual e_i / (1 - h_ii)."""
    U, S, _ = np.linalg.svd(design, full_matrices=False)
    U = U[:, S > 1e-10 * S[0]]
    return (U**2).sum(1)


@dataclass(frozen=True)
class NumberRegression:
    """a regressed on the numbers' PCA coordinates, a ~ w . x(a) + c (App. E's other reading).

    fitted: [n] in-sample predictions; heldout: [n] leave-one-out predictions (each number
    by the fit to the others); r2, r2_heldout: 1 - SSE / sum (a - mean a)^2 of each."""

    w: np.ndarray
    c: float
    fitted: np.ndarray
    heldout: np.ndarray
    r2: float
    r2_heldout: float


def regress_numbers(coords: np.ndarray) -> NumberRegression:
    """Least squares of a = 0..n-1 on [coords, 1] ([n, p] PCA coordinates): in-sample and
    leave-one-out predictions and R^2 (exact leave-one-out from the hat matrix)."""
    coords = np.asarray(coords, dtype=np.float64)
    a = np.arange(len(coords), dtype=np.float64)
    design = np.concatenate([coords, np.ones((len(coords), 1))], 1)
    coef, *_ = np.linalg.lstsq(design, a, rcond=None)
    fitted = design @ coef
    resid = a - fitted
    h = leverages(design)
    heldout = a - resid / np.maximum(1 - h, 1e-12)
    ss_tot = ((a - a.mean()) ** 2).sum()
    return NumberRegression(
        coef[:-1],
        float(coef[-1]),
        fitted,
        heldout,
        float(1 - (resid**2).sum() / ss_tot),
        float(1 - ((a - heldout) ** 2).sum() / ss_tot),
    )


def linear_sums(positions: np.ndarray, n_answers: int = N_ANSWERS) -> np.ndarray:
    """Linear addition of every pair: the n in [0, n_answers - 1] nearest to t(a1) + t(a2),
    as a grid [n, n] indexed [a1, a2]."""
    t = np.asarray(positions, dtype=np.float64)
    s = t[:, None] + t[None, :]
    return np.clip(np.floor(s + 0.5), 0, n_answers - 1).astype(np.int64)


def correctness_grid(accuracy: pd.DataFrame, n: int = 100) -> np.ndarray:
    """The model's correctness on a+b as a boolean grid [n, n] indexed [a, b], from
    ``add.csv`` (columns a, b, correct; every (a, b) with a, b < n must be present)."""
    missing = {"a", "b", "correct"} - set(accuracy.columns)
    if missing:
        raise KeyError(f"accuracy table lacks columns {sorted(missing)}; it needs a, b, correct")
    grid = np.full((n, n), -1, dtype=np.int8)
    a, b = accuracy["a"].to_numpy(int), accuracy["b"].to_numpy(int)
    keep = (a < n) & (b < n)
    grid[a[keep], b[keep]] = accuracy["correct"].to_numpy(bool)[keep]
    if (grid < 0).any():
        raise ValueError(f"accuracy table misses {(grid < 0).sum()} of the {n * n} problems a, b in [0, {n - 1}]")
    return grid.astype(bool)


def accuracy_below(
    success: np.ndarray, answers: np.ndarray, alphas: np.ndarray, n_answers: int = N_ANSWERS
) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy over the problems with answer < alpha, for each alpha (NaN where none):
    (accuracy [len(alphas)], problem counts [len(alphas)]).  One bincount, one cumsum."""
    answers = np.asarray(answers).ravel()
    hits = np.cumsum(np.bincount(answers, weights=np.asarray(success, float).ravel(), minlength=n_answers))
    counts = np.cumsum(np.bincount(answers, minlength=n_answers))
    idx = np.clip(np.asarray(alphas, dtype=np.int64) - 1, -1, len(counts) - 1)
    n = np.where(idx >= 0, counts[np.maximum(idx, 0)], 0)
    h = np.where(idx >= 0, hits[np.maximum(idx, 0)], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, h / np.maximum(n, 1), np.nan), n


def linear_addition(
    numbers: np.ndarray,
    accuracy: pd.DataFrame | None = None,
    n_components: int = 50,
    n_numbers: int = 100,
    alphas: np.ndarray | None = None,
) -> dict[str, pd.DataFrame]:
    """Everything behind Fig. E1, under each reading of "the line" (:data:`READINGS`).

    numbers: [>= n_numbers, d] bare-number residuals at one layer (the cache's
    ``numbers[:, 1]`` = the output of layer 0); accuracy: ``add.csv`` (a, b, correct) or None.

    "accuracy": alpha, reading, linear_accuracy, model_accuracy, n_problems, line_r2 (in-sample
    R^2 of the reading's line), line_r2_heldout (leave-one-out), line_r2_mean_dim (points
    only); one row per (reading, alpha); default alpha = 1..199; answers a1 + a2 < alpha.
    "line": a, reading, position t(a), offset t(a) - a, residual_norm |x(a) - (x0 + a v)|
    (points only).
    """
    X = np.asarray(numbers, dtype=np.float64)[:n_numbers]
    if len(X) < n_numbers:
        raise ValueError(f"linear addition needs the numbers 0..{n_numbers - 1}; got {len(X)} rows")
    line = fit_number_line(X, n_components)
    reg = regress_numbers(line.coords)
    positions = {"points": line.positions, "regression": reg.fitted, "regression_heldout": reg.heldout}
    r2 = {
        "points": (line.r2, line.r2_heldout, line.r2_mean_dim),
        "regression": (reg.r2, reg.r2_heldout, np.nan),
        "regression_heldout": (reg.r2_heldout, reg.r2_heldout, np.nan),
    }
    a1, a2 = np.meshgrid(np.arange(n_numbers), np.arange(n_numbers), indexing="ij")
    answers = a1 + a2
    alphas = np.arange(1, N_ANSWERS + 1) if alphas is None else np.asarray(alphas)
    if accuracy is not None:
        model_acc, _ = accuracy_below(correctness_grid(accuracy, n_numbers), answers, alphas)
    else:
        model_acc = np.full(len(alphas), np.nan)
    numbers_ = np.arange(n_numbers)
    on_line = line.x0 + np.outer(numbers_, line.v)
    tables, lines = [], []
    for reading in READINGS:
        t = positions[reading]
        lin_acc, n = accuracy_below(linear_sums(t) == answers, answers, alphas)
        tables.append(
            pd.DataFrame(
                {
                    "alpha": alphas,
                    "reading": reading,
                    "linear_accuracy": lin_acc,
                    "model_accuracy": model_acc,
                    "n_problems": n,
                    "line_r2": r2[reading][0],
                    "line_r2_heldout": r2[reading][1],
                    "line_r2_mean_dim": r2[reading][2],
                }
            )
        )
        resid = np.linalg.norm(line.coords - on_line, axis=1) if reading == "points" else np.nan
        lines.append(
            pd.DataFrame(
                {"a": numbers_, "reading": reading, "position": t, "offset": t - numbers_, "residual_norm": resid}
            )
        )
    return {"accuracy": pd.concat(tables, ignore_index=True), "line": pd.concat(lines, ignore_index=True)}

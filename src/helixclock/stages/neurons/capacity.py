"""Eq. 5 against the digit basis at equal capacity, and T = 100 beyond the digit one-hot
(section 5.4, Eq. 5; helixclock's extension for numbers of several tokens, docs/several-tokens.md "Numbers of
several tokens").

Does a unit read helices (Eq. 5) or digits?  Two bases of equal size answer it, 24 columns
each with the constant on the whole grid, fitted on the cells where the unit's place exists
(:mod:`.basis`), one position at a time (below, where the digits' side has one column fewer):

* the common core: the constant and the units-digit harmonics T = 10, 5, 2 of a, b and a+b
  (16 columns);
* Eq. 5's side (:func:`.basis.eq5_side_design`): the core, the linear terms of a and b and
  cos/sin T = 100 of a, b and a+b (8 more: Eq. 5 itself, whose 28 columns have rank 24);
* the digits' side (:func:`.basis.digit_design`): the core, cos/sin of the tens digits of a, b
  and a+b, the carry and the hundreds digit of a+b (8 more).

Both are fitted by the closed-form least squares of :func:`.fit.fit_neurons` (the grid is
deterministic, about 10^4 cells against 24 parameters, so held-out and in-sample errors nearly
agree: matching the capacity is the fix).  Each unit gives a paired difference R^2(Eq. 5's
side) - R^2(digits' side) on its own cells; :func:`capacity_summary` bootstraps over units.

**One position at a time.**  A digit place is read at the position that predicts it
(:func:`.places.place_slots`: slot k - 1 - place of an answer of k digits), so a place's cells
come from several positions: the tens digit of a + b in 10..99 at the last prompt token, of
100..198 at the position after "1" (the units place at three positions, one per answer
length).  Fitted over all of them at once, the digits' side's
hundreds column [a + b >= 100] is exactly that position's indicator, a step that Eq. 5's side
cannot fit: an Eq. 5 unit with a step between the positions scores "digits better"
(tests/unit/test_neuron_capacity.py: by 0.004 and 0.022 of R^2 at steps 0.5 and 1.0 of a helix
that Eq. 5 wins by 0.005 without them).  So both sides are fitted to each position's cells
apart (:func:`position_classes`) and their residuals pooled: R^2 = 1 - sum SSE / sum SST, each
position's SST about its own mean, so no side is credited with a step between positions (a step
column would correct the level only, not the tuning, which may differ between positions too).
Where every number is one token (the paper's models) the whole number is read at the last
prompt token: one position, the paper's single fit.

**The ranks are declared, not equalised.**  Each side keeps, at each position, every column not
constant on its cells; no column is dropped to match the other side (which Eq. 5 column would
pair with the hundreds digit is no rule one can state before looking).  Within a position the
hundreds digit of a + b is constant, so there the digits' side has rank 23 against Eq. 5's 24.
``ranks_eq5``, ``ranks_digits`` give each side's rank per position ("24+24": the answers of 2 and
3 digits), ``n_params_eq5``, ``n_params_digits`` their sums (the parameters fitted): 48 and 46
at the units and tens places, 24 and 23 at the hundreds place.  What a difference at unequal
rank can mean: one column more at each position gains a noise unit R^2 of positions / cells
fitted, 2.0e-4 on average (SD 3e-4 a unit; the tests' 100 noise units at the tens place), so a
difference well above that is structure that the larger side expresses at that position and
the smaller cannot; it is a comparison of the two named bases there, not a proof that no digit
function of one more column would match.  A win
of the digits' side is made with one column fewer.  At the hundreds place the predicted token
is always "1": a win there says how the unit's activation varies with a and b at a position
whose token is fixed (which representation it reads), not what it predicts.

The digit one-hot (:func:`.basis.onehot_design`: one indicator per nonzero units and tens digit
of a, b and a+b, the hundreds digit, the carry) is only the base of a nested increment: what
cos/sin T = 100 of a, b and a+b add to it (in-sample R^2, ``t100_increment``), i.e. the part of
a unit that no sum of functions of single digits describes.  numpy/pandas, torch for the solver.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ...fitting.bases import digit_count
from ...prompts.layout import NUMBER
from .basis import as_grids, digit_design, eq5_side_design, grid_values, onehot_design
from .fit import _as_mask, _least_squares
from .places import place_masks

SIDES = {"Eq. 5": eq5_side_design, "digits": digit_design}
BOOTSTRAP, SEED, LEVEL = 2000, 0, 0.95
# A position's cells are fitted only where they are at least ten per column of a side (24): the
# units digit of a one-digit answer (a + b < 10, 55 cells of the 100 x 100 grid, read at the last
# prompt token) is left out of the units place's comparison, where 24 columns would nearly
# interpolate it on one side (Eq. 5's rank 24 there, the digits' 16)
MIN_CELLS = 240


def position_classes(place: str, n_a: int = 100, n_b: int = 100) -> list[np.ndarray]:
    """The cells of ``place`` [n_a, n_b] split by the position they are read at: the whole number
    (:data:`~helixclock.prompts.layout.NUMBER`, one-token numbers) at the last prompt token, one
    class; a digit place at slot k - 1 - place of an answer of k digits, so its cells split by
    the digit count of a + b (units: 1, 2, 3 digits; tens: 2, 3; hundreds: 3), a class of fewer
    than :data:`MIN_CELLS` cells left out (the units digit of a one-digit answer)."""
    cells = place_masks(n_a, n_b)[place]
    if place == NUMBER:
        return [cells]
    k = digit_count(grid_values(n_a, n_b)["a+b"]).reshape(n_a, n_b)
    classes = [cells & (k == c) for c in np.unique(k[cells])]
    return [c for c in classes if c.sum() >= MIN_CELLS] or classes


def _pooled_fit(g: torch.Tensor, X: np.ndarray, classes: list[np.ndarray], chunk_size: int):
    """Least squares of design X on each class of cells apart: R^2 = 1 - sum SSE / sum SST (each
    class's SST about its own mean) [n], the RMSE over the cells [n] and the design's rank on
    each class (a list, in the order of ``classes``)."""
    sse, sst, ranks = 0.0, 0.0, []
    for cells in classes:
        r2, _, r = _r2(g, X, None if cells.all() else cells, chunk_size)
        var = _var(g, None if cells.all() else cells) * int(cells.sum())
        sse, sst = sse + np.where(np.isfinite(r2), 1 - r2, 0.0) * var, sst + var
        ranks.append(int(r))
    cells = sum(int(c.sum()) for c in classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sst > 0, 1 - sse / sst, np.nan), np.sqrt(sse / cells), ranks


def _r2(g: torch.Tensor, X: np.ndarray, mask, chunk_size: int) -> tuple[np.ndarray, np.ndarray, int]:
    """In-sample R^2 [n] of the least-squares fit of design X on the (masked) cells, the range of
    the grids there [n] and the design's rank."""
    _, sse, vrange, _, rank = _least_squares(g, torch.as_tensor(X, device=g.device), chunk_size, mask, False)
    y = g.reshape(len(g), -1).double()
    if mask is not None:
        y = y[:, torch.as_tensor(np.flatnonzero(mask), device=g.device)]
    sst = y.var(1, correction=0) * y.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(sst.cpu().numpy() > 0, 1 - sse.cpu().numpy() / sst.cpu().numpy(), np.nan)
    return r2, vrange.cpu().numpy(), rank


def capacity_table(pre, places=None, layer=None, neuron=None, chunk_size: int = 1024) -> pd.DataFrame:
    """One row per unit (row i of ``pre`` [n, 100, 100], N(a, b); NaN allowed outside its place's
    cells): ``place`` (``places``, default "units" for all: the whole grid), ``layer``,
    ``neuron``, ``cells`` (the place's), ``positions`` (how many: :func:`position_classes`, each
    fitted apart), ``cells_fitted`` (theirs), ``ranks_eq5``, ``ranks_digits`` (each side's rank at
    each position, in order of the answer's digit count, joined by "+": "24+24", "23+23"),
    ``n_params_eq5``, ``n_params_digits`` (their sums: the parameters fitted), ``r2_eq5``,
    ``r2_digits`` (pooled over the positions), ``r2_diff`` = r2_eq5 - r2_digits, ``nrmse_eq5``,
    ``nrmse_digits`` (RMSE / (max - min) over the cells fitted), ``better`` ("digits" where its
    R^2 is higher, else "Eq. 5"),
    ``r2_onehot`` (the digit one-hot's R^2 over the place's cells) and ``t100_increment`` (what
    cos/sin T = 100 of a, b, a+b add to it: both hold the hundreds digit, so a step between
    positions is in the base and the increment alike).  ``places`` default: the whole number
    for every unit (the whole grid, one position)."""
    g = as_grids(pre)
    n, n_a, n_b = g.shape
    places = np.array([NUMBER] * n if places is None else [str(p) for p in places])
    if len(places) != n:
        raise ValueError(f"{len(places)} places for {n} units: one place per unit")
    ids = {k: np.full(n, -1) if v is None else np.asarray(v) for k, v in (("layer", layer), ("neuron", neuron))}
    masks = place_masks(n_a, n_b)
    unknown = sorted(set(places) - set(masks))
    if unknown:
        raise ValueError(f"places {unknown}: allowed {', '.join(masks)}")
    parts = []
    for place in dict.fromkeys(places):
        idx = np.flatnonzero(places == place)
        mask = None if masks[place].all() else _as_mask(masks[place], n_a, n_b)
        sub = g[torch.as_tensor(idx)]
        cells = n_a * n_b if mask is None else int(mask.sum())
        classes = position_classes(place, n_a, n_b)
        row = {"place": place, "layer": ids["layer"][idx], "neuron": ids["neuron"][idx], "cells": cells}
        row["positions"], row["cells_fitted"] = len(classes), sum(int(c.sum()) for c in classes)
        fits = {name: _pooled_fit(sub, f(n_a, n_b), classes, chunk_size) for name, f in SIDES.items()}
        (r2e, _, pe), (r2d, _, pd_) = fits["Eq. 5"], fits["digits"]
        base, _, _ = _r2(sub, onehot_design(n_a, n_b), mask, chunk_size)
        full, _, _ = _r2(sub, onehot_design(n_a, n_b, t100=True), mask, chunk_size)
        fitted = torch.as_tensor(np.flatnonzero(np.any(classes, axis=0)), device=sub.device)
        y = sub.reshape(len(sub), -1)[:, fitted].double()
        rng = (y.amax(1) - y.amin(1)).cpu().numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            nrmse = {k: v[1] / rng for k, v in fits.items()}
        parts.append(
            pd.DataFrame(
                {
                    **row,
                    "ranks_eq5": "+".join(map(str, pe)),
                    "ranks_digits": "+".join(map(str, pd_)),
                    "n_params_eq5": sum(pe),
                    "n_params_digits": sum(pd_),
                    "r2_eq5": r2e,
                    "r2_digits": r2d,
                    "r2_diff": r2e - r2d,
                    "nrmse_eq5": nrmse["Eq. 5"],
                    "nrmse_digits": nrmse["digits"],
                    "better": np.where(r2d > r2e, "digits", "Eq. 5"),
                    "r2_onehot": base,
                    "t100_increment": full - base,
                },
                index=idx,
            )
        )
    return pd.concat(parts).sort_index()


def _var(g: torch.Tensor, mask) -> np.ndarray:
    y = g.reshape(len(g), -1).double()
    if mask is not None:
        y = y[:, torch.as_tensor(np.flatnonzero(mask), device=g.device)]
    return y.var(1, correction=0).cpu().numpy()


def _boot(values: np.ndarray, stat, n_boot: int, seed: int, level: float) -> tuple[float, float, float]:
    """``stat`` of the values and its percentile bootstrap interval over them (NaN with < 2)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return (float(stat(v)) if len(v) else np.nan), np.nan, np.nan
    idx = np.random.default_rng(seed).integers(0, len(v), size=(n_boot, len(v)))
    boots = stat(v[idx], axis=1)
    a = (1 - level) / 2
    return float(stat(v)), float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a))


def capacity_summary(
    table: pd.DataFrame, n_boot: int = BOOTSTRAP, seed: int = SEED, level: float = LEVEL
) -> pd.DataFrame:
    """One row per place of :func:`capacity_table`: ``n_units``, the sides' ranks per position
    and summed (``ranks_eq5``, ``ranks_digits``, ``n_params_eq5``, ``n_params_digits``: the most
    common over the units; one value where every unit has the place's cells), the median NRMSEs,
    the paired R^2 difference (Eq. 5's side - the digits') as ``mean_r2_diff`` and
    ``median_r2_diff`` with percentile bootstrap intervals over units (``_low``, ``_high``), the
    share of units the digits' side fits better (``digits_better`` with its interval),
    ``verdict`` ("Eq. 5" or "digits" where the interval of the mean difference excludes 0, else
    "not distinguished"), and the nested ``t100_increment`` over the digit one-hot (median with
    its interval, and mean)."""
    rows = []
    for place, g in table.groupby("place", sort=False):
        mean = _boot(g["r2_diff"], np.mean, n_boot, seed, level)
        med = _boot(g["r2_diff"], np.median, n_boot, seed, level)
        share = _boot((g["better"] == "digits").astype(float), np.mean, n_boot, seed, level)
        t100 = _boot(g["t100_increment"], np.median, n_boot, seed, level)
        rows.append(
            {
                "place": place,
                "n_units": len(g),
                "ranks_eq5": g["ranks_eq5"].mode().iloc[0],
                "ranks_digits": g["ranks_digits"].mode().iloc[0],
                "n_params_eq5": int(g["n_params_eq5"].mode().iloc[0]),
                "n_params_digits": int(g["n_params_digits"].mode().iloc[0]),
                "median_nrmse_eq5": float(g["nrmse_eq5"].median()),
                "median_nrmse_digits": float(g["nrmse_digits"].median()),
                **dict(zip(("mean_r2_diff", "mean_r2_diff_low", "mean_r2_diff_high"), mean)),
                **dict(zip(("median_r2_diff", "median_r2_diff_low", "median_r2_diff_high"), med)),
                **dict(zip(("digits_better", "digits_better_low", "digits_better_high"), share)),
                "verdict": "Eq. 5" if mean[1] > 0 else "digits" if mean[2] < 0 else "not distinguished",
                **dict(zip(("t100_increment", "t100_increment_low", "t100_increment_high"), t100)),
                "t100_increment_mean": float(g["t100_increment"].mean()),
            }
        )
    return pd.DataFrame(rows)


def capacity_tables(grids: dict, n_boot: int = BOOTSTRAP, seed: int = SEED, level: float = LEVEL) -> dict:
    """Rule neuron_bases' equal-capacity comparison of the units in the neuron stage's grids.h5
    arrays (``pre``, ``layer``, ``neuron``, ``rank``, ``place``: each unit on its place's cells, the
    whole grid for the whole number of one-token numbers and for the units digit): ``bases``
    (:func:`capacity_table` with ``rank``) and ``bases_summary`` (:func:`capacity_summary`)."""
    places = [p.decode() if isinstance(p, bytes) else str(p) for p in grids["place"]]
    table = capacity_table(grids["pre"], places, grids["layer"], grids["neuron"])
    table.insert(3, "rank", np.asarray(grids["rank"]))
    return {"bases": table, "bases_summary": capacity_summary(table, n_boot, seed, level)}

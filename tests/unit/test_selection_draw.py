"""Known-answer tests of a `select` finding's inference (README, "Findings"): an object (Table 1's
best layer, Fig. 5's best block) chosen on the job's selection draw and measured on all measuring
pairs with its own standard error (df C - 1) covers at its level, whatever the candidates, also
among the replicates where the choice is stable (the selection draw's two halves agree: an
event of the selection draw alone), and detects a planted effect as an exact t test does.  Two
wrong methods are arms the same checks reject: the fold bound (too wide: it covers about 0.99
and loses power; kept, labelled conservative, only where a job records no selection draw) and
choosing on the measuring pairs themselves (too narrow: the winner's curse)."""

from __future__ import annotations

import numpy as np
import pytest

from helixclock.stats.crossfit import choose, cross_fit, fold_bound, folds
from helixclock.stats.inference import resample, standard_error, t_interval

K, N, DRAW = 10, 50, 50  # candidates, measuring pairs, selection-draw pairs
REPLICATES = 20_000
BOOT = 400
SCENARIOS = {
    "tied nulls": np.zeros(K),
    "a clear winner": np.r_[1.0, np.zeros(K - 1)],
    "two close candidates": np.r_[0.2, 0.15, np.zeros(K - 2)],
    "a stable winner": np.r_[0.3, np.full(K - 1, -0.5)],
}


def candidates(mu: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """[R, K, n] per-pair values of K candidates of means ``mu`` and unit SD, correlated 0.5
    within a pair (the layers of one sweep see the same pair)."""
    shared = rng.normal(size=(REPLICATES, 1, n))
    own = rng.normal(size=(REPLICATES, K, n))
    return mu[None, :, None] + np.sqrt(0.5) * shared + np.sqrt(0.5) * own


def t_limits(values: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The findings' interval of a mean ([R, n] -> [R] each): bootstrap SE times sqrt(C/(C-1)), t on C - 1."""
    r = resample(values, None, BOOT, seed)
    se = standard_error(r.boot, r.n_clusters)
    return t_interval(r.estimate, se, r.n_clusters - 1)


def on_selection_draw(mu: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """The method: choose on the draw, measure the choice on all measuring pairs."""
    rng = np.random.default_rng(seed)
    draw, measure = candidates(mu, DRAW, rng), candidates(mu, N, rng)
    k = choose(draw, "max")  # [R]
    halves = [choose(draw[..., h::2], "max") for h in (0, 1)]  # the draw's folds: a stable choice
    low, high = t_limits(np.take_along_axis(measure, k[:, None, None], 1)[:, 0])
    return {"truth": mu[k], "low": low, "high": high, "agree": halves[0] == halves[1]}


def covered(out: dict, where=None) -> float:
    hit = (out["low"] <= out["truth"]) & (out["truth"] <= out["high"])
    return float(hit[where].mean() if where is not None else hit.mean())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_choice_on_the_selection_draw_covers_at_its_level(scenario):
    out = on_selection_draw(SCENARIOS[scenario], seed=1)
    assert covered(out) == pytest.approx(0.95, abs=0.015)
    assert out["agree"].sum() > 1800  # enough stable replicates to read a coverage among them
    assert covered(out, out["agree"]) == pytest.approx(0.95, abs=0.015)


def test_it_detects_a_stable_winner_as_a_t_test_does_and_the_fold_bound_does_not():
    """A winner of 0.3 SD over 50 pairs: the exact two-sided t test at 0.05 has power 0.56; the
    method rejects about that often, the fold bound (today's cross-fitted rows) about a third."""
    mu = SCENARIOS["a stable winner"]
    out = on_selection_draw(mu, seed=2)
    rejects = float(((out["low"] > 0) | (out["high"] < 0)).mean())
    assert rejects > 0.50
    rng = np.random.default_rng(2)
    measure = candidates(mu, N, rng)
    fold = folds(np.arange(N), seed=0)
    chosen = cross_fit(measure, measure, fold)
    bound = fold_bound(chosen.values, fold, np.arange(N), BOOT, 0)
    low, _ = t_interval(bound.estimate, bound.se, bound.df)
    assert float((low > 0).mean()) < 0.35  # the wrong arm: an interval too wide loses the effect


def test_the_wrong_arms_fail_the_coverage_check():
    """Tied nulls: the fold bound covers far above 0.95 (too wide); choosing and measuring on
    the same pairs far below (the winner's curse).  The coverage check above rejects both."""
    mu = SCENARIOS["tied nulls"]
    rng = np.random.default_rng(3)
    measure = candidates(mu, N, rng)
    fold = folds(np.arange(N), seed=0)
    chosen = cross_fit(measure, measure, fold)
    bound = fold_bound(chosen.values, fold, np.arange(N), BOOT, 0)
    low, high = t_interval(bound.estimate, bound.se, bound.df)
    wide = float(((low <= 0) & (0 <= high)).mean())
    assert wide > 0.95 + 0.015
    same = cross_fit(measure, measure, None)
    low, high = t_limits(same.values)
    narrow = float(((low <= 0) & (0 <= high)).mean())
    assert narrow < 0.95 - 0.015

"""Known answers for the multiplicity rules of stats/multiplicity.py at their edges (docs/findings.md,
"Findings"; the paper's claims are tested as a family, issue 53): Holm's step-down with a p-value
exactly at a step, ties, NaN and a single hypothesis; Benjamini-Hochberg with nothing passing;
Bonferroni's level; the verdict's rule; the noncentral-t minimal detectable effect against its
large-df limit (the z formula) and at df 1.  Written so that `make mutation` (docs/benchmarks.md,
"Mutation testing") has a test that fails on each wrong variant of these rules."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from helixclock.stats.multiplicity import benjamini_hochberg, bonferroni, holm, holm_adjusted, mde, verdict


def test_holm_rejects_a_p_value_exactly_at_its_step_and_the_last_failure_gets_its_own_step():
    # m = 4 at alpha 0.05: steps 0.0125, 0.05/3, 0.025, 0.05; p = alpha / m is rejected (p <= step)
    p = np.array([0.05 / 4, 0.9, 0.05 / 3, 0.02])
    reject, level = holm(p, 0.05)
    assert reject.dtype == bool
    assert reject.tolist() == [True, False, True, True]
    assert level.tolist() == [0.05 / 4, 0.05, 0.05 / 3, 0.025]
    # the last rank fails alone: its level is the last step, alpha, not the one before
    reject, level = holm([0.001, 0.9], 0.05)
    assert reject.tolist() == [True, False]
    assert level.tolist() == [0.025, 0.05]
    # from the first failure on, every rank gets that step's level
    reject, level = holm([0.001, 0.02, 0.03, 0.04], 0.05)
    assert reject.tolist() == [True, False, False, False]
    assert level.tolist() == [0.0125, 0.05 / 3, 0.05 / 3, 0.05 / 3]


def test_holm_on_nothing_tested_and_on_one_hypothesis():
    reject, level = holm([np.nan, np.nan], 0.05)
    assert reject.tolist() == [False, False] and np.isnan(level).all()
    reject, level = holm(np.array([]), 0.05)
    assert reject.shape == (0,) and level.shape == (0,)
    # one tested hypothesis (the NaN does not count in m): Holm is the plain test at alpha
    reject, level = holm([np.nan, 0.05], 0.05)
    assert reject.tolist() == [False, True] and np.isnan(level[0]) and level[1] == 0.05
    reject, level = holm([0.0501], 0.05)
    assert reject.tolist() == [False] and level.tolist() == [0.05]


def test_holm_breaks_ties_by_row_order_so_the_levels_do_not_depend_on_the_sort():
    # 24 rows, all rejected, p in three tied groups: within a group the steps go in row order
    rng = np.random.default_rng(53)
    p = rng.choice([1e-6, 2e-6, 3e-6], 24)
    reject, level = holm(p, 0.05)
    assert reject.all()
    rank = np.empty(24, int)
    rank[np.lexsort((np.arange(24), p))] = np.arange(24)
    np.testing.assert_array_equal(level, 0.05 / (24 - rank))


def test_holm_adjusted_p_values_are_capped_at_1_and_equal_for_ties():
    adj = holm_adjusted([0.6, 0.7, np.nan])
    assert adj[:2].tolist() == [1.0, 1.0] and np.isnan(adj[2])
    np.testing.assert_allclose(holm_adjusted([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])


def test_benjamini_hochberg_with_nothing_passing_one_passing_and_nothing_tested():
    # nothing passes (0.02 > 0.05 / 3, 0.04 > 2 (0.05) / 3, 0.9 > 0.05): the level is alpha / m
    reject, level = benjamini_hochberg([0.02, 0.04, 0.9], 0.05)
    assert reject.dtype == bool
    assert reject.tolist() == [False, False, False]
    np.testing.assert_array_equal(level, np.full(3, 0.05 / 3))
    # one rejection: the level is 1 alpha / m, not more
    reject, level = benjamini_hochberg([0.01, 0.04, 0.9], 0.05)
    assert reject.tolist() == [True, False, False]
    np.testing.assert_array_equal(level, np.full(3, 0.05 / 3))
    # a single tested hypothesis is the plain test at alpha
    reject, level = benjamini_hochberg([0.04, np.nan], 0.05)
    assert reject.dtype == bool and reject.tolist() == [True, False]
    assert level[0] == 0.05 and np.isnan(level[1])
    reject, level = benjamini_hochberg([np.nan, np.nan], 0.05)
    assert reject.tolist() == [False, False] and np.isnan(level).all()


def test_bonferroni_level():
    assert bonferroni(1) == 0.05
    assert bonferroni(4, 0.1) == 0.025
    assert np.isnan(bonferroni(0))


def test_verdict_rule_at_its_edges():
    assert verdict(1.0, True, "positive") == "holds"
    assert verdict(1.0, True, "negative") == "reversed"
    assert verdict(-0.5, True, "negative") == "holds"
    assert verdict(1.0, False, "positive") == "not distinguished"
    # a rejection with no sign to read is no verdict either way
    assert verdict(0.0, True, "positive") == "not distinguished"
    assert verdict(0.0, True, "negative") == "not distinguished"
    assert verdict(np.nan, True, "positive") == "not distinguished"
    with pytest.raises(ValueError, match=r"^verdict: expect 'up'; allowed: positive, negative$"):
        verdict(1.0, True, "up")


@pytest.mark.parametrize("alpha_prime", [0.5, 0.05, 0.0125])
@pytest.mark.parametrize("power", [0.5, 0.8, 0.99])
def test_mde_tends_to_the_z_formula_on_many_degrees_of_freedom(alpha_prime, power):
    # noncentral t(df, delta) -> N(delta, 1) as df grows: delta -> z_{1 - alpha'/2} + z_power, and the
    # MDE is delta sd / sqrt(n) (sd 2, n 16: half of delta)
    z = stats.norm.ppf(1 - alpha_prime / 2) + stats.norm.ppf(power)
    got = mde(2.0, 16, alpha_prime, power, df=1e6)
    assert isinstance(got, float)  # a scalar in, a scalar out
    assert got == pytest.approx(z / 2, rel=1e-5)


def test_mde_at_df_1_and_where_it_is_not_defined():
    # df 1 is the smallest allowed: its delta gives the stated power, exactly
    delta = float(mde(1.0, 1, 0.0125, df=1))
    crit = stats.t.ppf(1 - 0.0125 / 2, 1)
    assert stats.nct.sf(crit, 1, delta) == pytest.approx(0.8, abs=1e-8)
    assert delta > 15 * float(mde(1.0, 1, 0.0125, df=24))  # 65.3 against 3.57
    out = mde(np.array([1.0, 1.0, 1.0]), np.array([4.0, 0.0, 4.0]), 0.0125, df=np.array([1.0, 6.0, 0.5]))
    assert out[0] == pytest.approx(delta / 2, rel=1e-9)
    assert np.isnan(out[1:]).all()  # no pairs; fewer than 1 degree of freedom

"""Fig. F4's base rate for the digit logit lens (App. F; docs/several-tokens.md "Numbers of several tokens"):
the Poisson-binomial against brute-force enumeration; the power shares by Parseval; a DE set drawn
from its layers' own population gives p-values that are not small (about uniform: the test holds
its level), a DE set with real period structure a small p; a population that leans to period 10
makes "10 of 10" unremarkable; the fallback population is the other top units of the layer and
place; digit_lens_tables carries the null."""

import itertools

import numpy as np
import pandas as pd
import pytest
from helpers.findings import committed_findings

from helixclock.stages.mistakes.lens_null import (
    LENS,
    NULL_COLUMNS,
    digit_lens_period,
    lens_null,
    poisson_binomial_pmf,
    poisson_binomial_sf,
    power_shares,
)
from helixclock.stages.mistakes.logit_lens import digit_lens_tables

D = np.arange(10)


def test_poisson_binomial_equals_brute_force_enumeration():
    rng = np.random.default_rng(0)
    for n in range(0, 9):
        q = rng.uniform(size=n)
        pmf = np.zeros(n + 1)
        for outcome in itertools.product((0, 1), repeat=n):
            o = np.array(outcome, dtype=np.int64)
            pmf[int(o.sum())] += np.prod(np.where(o == 1, q, 1 - q))
        assert np.allclose(poisson_binomial_pmf(q), pmf, atol=1e-14)
        for m in range(-1, n + 2):
            assert poisson_binomial_sf(m, q) == pytest.approx(pmf[max(m, 0) :].sum(), abs=1e-14)
    assert poisson_binomial_sf(3, [0.5, 0.5, 0.5]) == 0.125 and poisson_binomial_sf(1, [0.0, 0.0]) == 0.0
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        poisson_binomial_pmf([0.2, 1.5])


def test_power_shares_split_the_variance_by_frequency():
    lens = np.stack(
        [
            np.cos(2 * np.pi * D / 10),
            np.cos(2 * np.pi * D / 5 + 0.3),
            (-1.0) ** D,  # period 2: the Nyquist bin
            np.cos(2 * np.pi * D / 10) + np.cos(2 * np.pi * D / 2),
            D.astype(float),  # a trend: mostly period 10
        ]
    )
    lens = np.concatenate([lens, np.full((5, 1), 7.0)], 1)  # the end token is not a digit
    s = power_shares(lens)
    assert np.allclose(s.sum(1), 1) and np.all(s[:, 0] == 0)
    assert s[0, 1] == pytest.approx(1) and s[1, 2] == pytest.approx(1) and s[2, 5] == pytest.approx(1)
    # cos over 10 digits has sum of squares 5, (-1)^d has 10: two thirds at f = 5
    assert s[3, 1] == pytest.approx(1 / 3) and s[3, 5] == pytest.approx(2 / 3)
    assert s[4, 1] > 0.6 and digit_lens_period(lens[4:5])[0] == 10  # measured 0.63: a ramp is mostly f = 1
    assert np.isnan(power_shares(np.ones((1, 10)))).all()


def biased_population(rng, n, lean=1.0):
    """Lenses of n neurons: a random trend over the digits (the unembedding's digit geometry leans
    every write to period 10) plus noise."""
    return lean * rng.normal(size=(n, 1)) * (D - 4.5) / 4.5 + rng.normal(size=(n, 10))


def layout(units_lens, layer_lens, predicted):
    """Units (place "units", layer 0, neurons 0..k-1: row i of layer_lens[0] is unit i's lens) and
    their F4 table (matches = lens period is the predicted one)."""
    k = len(units_lens)
    units = pd.DataFrame({"place": "units", "layer": 0, "neuron": np.arange(k)})
    periods = units.assign(predicted_period=predicted, lens_period=digit_lens_period(units_lens))
    periods["matches"] = np.isclose(periods["lens_period"], periods["predicted_period"])
    return periods, units


def test_a_de_set_drawn_from_its_own_layer_gives_large_p_values():
    """The DE set's units are ordinary neurons of their layer: M is about E, and p is not small
    (over 200 planted sets, p < 0.05 at most about as often as 5%: the discrete test is
    conservative), both for the matches and for the power share."""
    rng = np.random.default_rng(1)
    ps, pp, gaps = [], [], []
    for _ in range(200):
        layer = biased_population(rng, 300)[None]
        predicted = rng.choice([10, 10, 10, 5, 2], size=10)
        periods, units = layout(layer[0, :10], np.concatenate([layer, np.zeros((1, 300, 1))], 2)[..., :10], predicted)
        _, null = lens_null(periods, layer[0, :10], units, layer, draws=500, seed=len(ps))
        row = null.set_index("place").loc["all"]
        ps.append(row["p_matches"])
        pp.append(row["p_power"])
        gaps.append(row["matches"] - row["expected"])
    ps, pp = np.array(ps), np.array(pp)
    assert np.mean(ps < 0.05) <= 0.07 and np.median(ps) > 0.4
    assert np.mean(pp < 0.05) <= 0.08 and np.median(pp) > 0.35
    assert abs(np.mean(gaps)) < 0.4  # M is E on average (measured -0.25, 2 SE of 200 sets; 0 over 1,200 more)


def test_real_period_structure_gives_a_small_p_and_a_leaning_population_explains_ten_of_ten():
    rng = np.random.default_rng(2)
    layer = biased_population(rng, 400, lean=0.3)
    # ten units that write period 5 and period 2 over the digits, as predicted
    planted = [np.cos(2 * np.pi * D / 5 + rng.uniform(0, 6)) for _ in range(6)]
    planted += [(-1.0) ** D * rng.uniform(1, 2) for _ in range(4)]
    layer[:10] = np.stack(planted) + 0.3 * rng.normal(size=(10, 10))
    periods, units = layout(layer[:10], None, [5] * 6 + [2] * 4)
    per, null = lens_null(periods, layer[:10], units, layer[None], draws=2000)
    row = null.set_index("place").loc["all"]
    assert row["matches"] == 10 and row["expected"] < 2 and row["p_matches"] < 1e-6
    assert row["p_power"] == pytest.approx(1 / 2001) and row["power_share"] > 0.8
    assert (per["power_rank"] < 0.05).all() and (per["n_null"] == 399).all()  # measured at most 0.023
    # a population that leans to period 10 (about 90% of its lenses): ten units of period 10, all
    # predicted period 10, match ten of ten, and that is what the layer does anyway
    lean = biased_population(rng, 400, lean=12.0)
    ten = np.flatnonzero(digit_lens_period(lean) == 10)[:10]
    lean = np.concatenate([lean[ten], np.delete(lean, ten, axis=0)])
    periods, units = layout(lean[:10], None, [10] * 10)
    per, null = lens_null(periods, lean[:10], units, lean[None], draws=2000)
    row = null.set_index("place").loc["all"]
    assert row["matches"] == 10 and row["expected"] > 8.5 and row["p_matches"] > 0.2  # p = prod q_i
    assert per["q"].to_numpy() == pytest.approx(np.full(10, per["q"].iloc[0]), abs=0.01)  # one layer's rate
    assert list(null.columns) == list(NULL_COLUMNS) and null["lens"].eq(LENS).all()
    assert null["null_population"].eq("all neurons of the layer").all()
    assert declared(null) == {"matches": "not detected", "power": "not detected"}


def declared(null: pd.DataFrame) -> dict[str, str]:
    """The registry's lens findings on the "all" row of a null table: statistic -> verdict (the
    stage's p as it is, Holm over the rows the findings read)."""
    c = committed_findings(["lens_matches_above_base_rate", "lens_power_above_base_rate"], {"logit_lens_null": null})
    c = c["contrasts"]
    assert c["estimate"].to_numpy()[: len(null)] == pytest.approx((null["matches"] - null["expected"]).to_numpy())
    assert (c["p"].to_numpy() == pytest.approx(np.r_[null["p_matches"], null["p_power"]])) and (
        c["m"] == 2 * len(null)
    ).all()
    return {s: c.loc[f"lens_{s}_above_base_rate[place=all]", "verdict"] for s in ("matches", "power")}


def test_the_registry_declares_the_base_rate_test_and_its_verdict():
    """Real period structure: both statistics hold; a layer drawn from its own population: neither
    is detected (the stage's p, one-sided, with the family's Holm)."""
    rng = np.random.default_rng(2)
    layer = biased_population(rng, 400, lean=0.3)
    layer[:10] = np.stack([np.cos(2 * np.pi * D / 5 + rng.uniform(0, 6)) for _ in range(10)])
    periods, units = layout(layer[:10], None, [5] * 10)
    _, null = lens_null(periods, layer[:10], units, layer[None], draws=2000)
    assert declared(null) == {"matches": "holds", "power": "holds"}
    ordinary = biased_population(rng, 400)
    periods, units = layout(ordinary[:10], None, [10] * 10)
    _, null = lens_null(periods, ordinary[:10], units, ordinary[None], draws=2000)
    assert declared(null) == {"matches": "not detected", "power": "not detected"}


def test_without_every_neurons_lens_the_null_is_the_other_top_units_of_the_layer_and_place():
    lens = np.stack(
        [np.cos(2 * np.pi * D / 5), np.cos(2 * np.pi * D / 5 + 1), np.cos(2 * np.pi * D / 10), (-1.0) ** D]
        + [np.cos(2 * np.pi * D / 10)]
    )
    units = pd.DataFrame({"place": ["units", "units", "units", "units", "tens"], "layer": 3, "neuron": [0, 1, 2, 3, 0]})
    periods = units.iloc[[0, 4]].assign(predicted_period=[5.0, 10.0], lens_period=[5.0, 10.0], matches=True)
    per, null = lens_null(periods, lens, units)
    # unit (units, 3, 0): the others of its layer and place are neurons 1, 2, 3: one of three has period 5
    assert per["n_null"].tolist() == [3, 0] and per.loc[0, "q"] == pytest.approx(1 / 3) and np.isnan(per.loc[1, "q"])
    assert null.set_index("place").loc["units", "p_matches"] == pytest.approx(1 / 3)
    assert null.set_index("place").loc["tens", "n_units"] == 0  # no population: not counted
    assert null["null_population"].eq("other top units of the layer and place").all()
    with pytest.raises(ValueError, match="layer_lens of shape"):
        lens_null(periods, lens, units, np.zeros((2, 4, 10)))


def test_digit_lens_tables_carry_the_null():
    rng = np.random.default_rng(3)
    layer_lens = np.concatenate([biased_population(rng, 50)[None], biased_population(rng, 50)[None]])
    layer_lens = np.concatenate([layer_lens, rng.normal(size=(2, 50, 1))], 2)  # the end token
    neurons = pd.DataFrame(
        {
            "place": ["units", "units", "tens"],
            "layer": [0, 1, 1],
            "neuron": [4, 7, 9],
            "de": [1.0, 1.0, 1.0],
            "max_post": 1.0,
            "max_a": 3,
            "max_b": 4,
            "top_variable": "a+b",
            "top_period": [10, 5, 100],
        }
    )
    lens = layer_lens[neurons["layer"], neurons["neuron"]]
    out = digit_lens_tables(neurons, lens, [str(d) for d in D] + ["end"], layer_lens=layer_lens)
    per, null = out["logit_lens_periods"], out["logit_lens_null"]
    assert {"power_share", "q", "null_power_share", "power_rank", "n_null"} <= set(per.columns)
    assert (per["n_null"] == 49).all() and null["place"].tolist() == ["units", "tens", "all"]
    assert null.set_index("place").loc["all", "n_units"] == 3
    assert null.set_index("place").loc["all", "expected"] == pytest.approx(per["q"].sum())


def test_fig_f4_names_the_base_rate(tmp_path):
    from helpers.figures import save

    from helixclock.stages.mistakes.figures import figF4_logit_lens_periods

    rng = np.random.default_rng(4)
    layer = biased_population(rng, 100, lean=3.0)
    periods, units = layout(layer[:6], None, [10, 10, 10, 5, 5, 2])
    per, _ = lens_null(periods.assign(fitted_period=[10, 10, 10, 5, 5, 2]), layer[:6], units, layer[None])
    fig = figF4_logit_lens_periods(per, "toy")
    title = " ".join(fig.get_suptitle().split())  # the figure's title, broken at spaces to fit
    m = int(per["matches"].sum())
    assert f"by chance {per['q'].sum():.1f} of 6 expected" in title
    assert f"P(≥ {m}) = {poisson_binomial_sf(m, per['q']):.2g}" in title
    save(fig, tmp_path, "figF4_digit_lens_null")

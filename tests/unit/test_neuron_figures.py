"""The neuron figures (fig08, figD12, figD13, fig10) drawn from tables of real fits of planted
neurons; what they print (shares, R², rho) is checked against numbers computed here."""

import subprocess
import sys

import numpy as np
import pytest
from helpers.figures import save

from helixclock.stages.neurons.basis import PERIODS, planted_grids
from helixclock.stages.neurons.fit import fit_neurons
from helixclock.stages.neurons.neuron_files import neuron_table
from helixclock.stages.neurons.panels import (
    figD12_neuron_fourier,
    figD13_neuron_nrmse,
    layer_trends,
    neuron_preacts_panel,
    neuron_trends_panel,
    period_shares,
)

LAYERS = list(range(14, 28))


@pytest.fixture(scope="module")
def fitted():
    """120 planted neurons over layers 14..27: later layers lean on a+b terms (the paper's
    trend), noise grows with rank; TE falls with rank, DE/TE grows with layer."""
    rng = np.random.default_rng(0)
    n = 120
    layer = np.sort(rng.choice(LAYERS, n))
    lean = (layer - 14) / 13  # 0 .. 1
    A = rng.uniform(0.1, 1.0, size=(n, 3, len(PERIODS)))
    A[:, :2] *= (1.2 - lean)[:, None, None]
    A[:, 2] *= (0.2 + 2 * lean)[:, None]
    A[np.arange(n), 2, rng.integers(0, 4, n)] += 2.0 * lean  # a dominant a+b period in later layers
    d = rng.uniform(0, 1, size=A.shape) * np.asarray(PERIODS, dtype=float)
    noise = np.linspace(0.05, 0.8, n)
    grids = np.concatenate(
        [
            planted_grids(
                A[i : i + 1], d[i : i + 1], rng.normal(0, 0.3, (1, 3)), rng.normal(size=1), noise=noise[i], seed=i
            )
            for i in range(n)
        ]
    )
    fits = fit_neurons(grids, layer=layer, neuron=rng.integers(0, 16384, n))
    table = neuron_table(fits).assign(place="number")  # the units of a one-token model
    te = np.exp(rng.normal(0, 0.3, n)) * np.geomspace(3, 0.03, n)
    table["te"] = te
    table["de"] = te * (0.1 + 0.8 * lean + rng.normal(0, 0.05, n))
    table.loc[5, "te"] = -0.01  # a negative attribution: off the log axis
    return grids, fits, table


def test_figures_module_imports_no_torch():
    code = "import sys, helixclock.stages.neurons.figures; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_fig08_draws_each_neurons_grid_beside_its_fit_with_its_nrmse(fitted, tmp_path):
    grids, fits, table = fitted
    pick = [119, 100, 80, 60]
    fig = neuron_preacts_panel(grids[pick], fits.predict(pick), table.iloc[pick], "synthetic")
    titles = [sub.get_suptitle() for sub in fig.subfigs]
    assert all(f"NRMSE {table['nrmse'].iloc[i]:.3f}" in t for i, t in zip(pick, titles))
    assert all(table["top_terms"].iloc[i].split(" + ")[0] in t for i, t in zip(pick, titles))
    images = [ax.get_images()[0].get_array() for sub in fig.subfigs for ax in sub.axes if ax.get_images()]
    assert np.allclose(images[0], grids[119]) and np.allclose(images[1], fits.predict(119)[0])
    axis = fig.subfigs[0].axes[0]
    assert axis.get_xlabel() == "b" and axis.get_ylabel() == "a"
    save(fig, tmp_path, "fig08_neuron_preacts")
    with pytest.raises(ValueError, match="must agree"):
        neuron_preacts_panel(grids[pick], fits.predict(pick[:3]), table.iloc[pick], "synthetic")


def test_figD12_legend_gives_the_share_of_each_dominant_a_plus_b_period(fitted, tmp_path):
    _, _, table = fitted
    fig = figD12_neuron_fourier(table, "synthetic")
    ab = table["dominant_period_ab"].to_numpy()
    expected = {T: np.mean(np.abs(ab - T) <= 0.05 * T) for T in PERIODS}
    assert period_shares(ab) == pytest.approx(expected)
    assert sum(expected.values()) > 0.5  # the planted a+b periods are found
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == [f"T = {T}: {expected[T]:.1%}" for T in PERIODS]
    assert fig.axes[0].get_xscale() == "log" and "a+b" in fig.axes[0].get_xlabel()
    save(fig, tmp_path, "figD12_neuron_fourier")
    with pytest.raises(ValueError, match="dominant_period_ab"):
        figD12_neuron_fourier(table.drop(columns="dominant_period_ab"), "x")


def test_figD13_title_gives_the_rank_correlation_and_leaves_out_nonpositive_te(fitted, tmp_path):
    from scipy.stats import spearmanr

    _, _, table = fitted
    fig = figD13_neuron_nrmse(table, "synthetic")
    pos = table[table["te"] > 0]
    rho = spearmanr(pos["te"], pos["nrmse"]).statistic
    assert rho < -0.5  # planted: larger TE, smaller noise
    title = fig.axes[0].get_title()
    assert f"ρ = {rho:.2f}" in title and "1 with TE ≤ 0 not shown" in title
    assert fig.axes[0].get_xscale() == "log"
    assert len(fig.axes[0].collections[0].get_offsets()) == len(table) - 1
    save(fig, tmp_path, "figD13_neuron_nrmse")


def test_fig10_trends_are_layer_means_and_the_line_gives_its_r2(fitted, tmp_path):
    _, _, table = fitted
    circuit = [14, 15, 16, 17, 18, 19, 20, 21, 22, 24, 26]
    trends = layer_trends(table, circuit)
    for row in trends.itertuples():  # plain means over each layer's neurons
        part = table[table["layer"] == row.layer]
        assert row.n_neurons == len(part) and row.n_te_nonpositive == (part["te"] <= 0).sum()
        kept = part[part["te"] > 0]
        assert np.isclose(row.de_over_te, np.mean(kept["de"] / kept["te"]))
        assert np.isclose(row.ab_fraction, part["ab_fraction"].mean())
    assert list(trends["layer"]) == sorted(set(table["layer"]) & set(circuit))
    assert trends["ab_fraction"].iloc[-1] > trends["ab_fraction"].iloc[0] + 0.3  # the planted trend
    assert trends["n_te_nonpositive"].sum() == 1  # the one negative TE (a layer-14 neuron)
    fig = neuron_trends_panel(table, circuit, "synthetic")
    x, y = trends["ab_fraction"].to_numpy(), trends["de_over_te"].to_numpy()
    r2 = np.corrcoef(x, y)[0, 1] ** 2  # R^2 of a least-squares line = squared correlation
    (legend,) = fig.legends  # one, under the panels: the colour bar stays beside its panel
    assert [t.get_text() for t in legend.get_texts()][0] == f"least squares, R² = {r2:.2f}"
    assert len(fig.axes[0].collections[0].get_offsets()) == len(trends)
    save(fig, tmp_path, "fig10_neuron_trends")
    with pytest.raises(ValueError, match=r"\['de'\]"):
        layer_trends(table.drop(columns="de"), circuit)


def test_period_shares_count_periods_within_five_percent_and_nan_without_neurons():
    shares = period_shares(np.array([2.01, 4.9, 9.95, 99.5, 105.1, 50.0]))
    assert shares == pytest.approx({2: 1 / 6, 5: 1 / 6, 10: 1 / 6, 100: 1 / 6})
    assert np.isnan(period_shares(np.array([]))[2])


def test_fig10_with_few_layers_draws_no_line_and_shows_empty_circuit_mlps(fitted, tmp_path):
    """Through 2 layers a least-squares line has R^2 = 1 whatever they are: fewer than 3 layers
    get their points and no line; a circuit MLP without top neurons is named and marked."""
    _, _, table = fitted
    part = table[table["layer"].isin([14, 20])]
    trends = layer_trends(part, [14, 20, 3])
    assert trends["layer"].tolist() == [3, 14, 20] and trends["n_neurons"].tolist()[0] == 0
    assert np.isnan(trends["de_over_te"].iloc[0])
    fig = neuron_trends_panel(part, [14, 20, 3], "two layers")
    left, right = fig.axes[0], fig.axes[1]
    assert not [line for line in left.lines if line.get_label().startswith("least")]
    title = left.get_title()
    assert "no line (fewer than 3)" in title and "no top neurons: MLP3" in title
    assert [t.get_text() for t in right.get_xticklabels()] == ["MLP3", "MLP14", "MLP20"]
    assert "circuit MLP without top neurons" in [t.get_text() for t in fig.legends[0].get_texts()]
    save(fig, tmp_path, "fig10_two_layers")


def test_figD13_plots_the_ranked_effect_size(fitted, tmp_path):
    _, _, table = fitted
    sized = table.assign(effect=table["te"].abs() + 0.01)  # every size > 0: nobody dropped
    fig = figD13_neuron_nrmse(sized, "synthetic")
    assert len(fig.axes[0].collections[0].get_offsets()) == len(table)
    assert "not shown" not in fig.axes[0].get_title() and "effect" in fig.axes[0].get_xlabel()
    bar = fig.axes[1]
    ticks = bar.get_yticks()
    assert np.allclose(ticks, np.round(ticks))  # integer layer ticks
    save(fig, tmp_path, "figD13_effect")


def test_figD9_shows_both_readings_and_figD10_outlines_circuit_layers(tmp_path):
    import pandas as pd

    from helixclock.stages.neurons.figures import figD9_neuron_ablation, figD10_neuron_layers

    fractions = np.array([1, 2, 4, 20, 41, 102, 205, 2048]) / 2048
    rows = []
    for reading, acc in (
        ("frozen", [0.2, 0.3, 0.4, 0.6, 0.8, 0.98, 1, 1]),
        ("live", [0.1, 0.1, 0.2, 0.3, 0.5, 0.97, 1, 1]),
    ):
        for f, a in zip(fractions, acc):
            rows.append(
                {
                    "ranking": "mean_abs",
                    "k": int(f * 2048),
                    "fraction_kept": f,
                    "reading": reading,
                    "accuracy_mean": a,
                    "accuracy_low": a - 0.02,
                    "accuracy_high": a + 0.02,
                    "n_prompts": 1000,
                    "ld_mean": 1 - a,
                    "ld_low": 0.9 - a,
                    "ld_high": 1.1 - a,
                }
            )
    fig = figD9_neuron_ablation(pd.DataFrame(rows), "synthetic")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]  # one legend under both panels
    assert labels[:2] == [
        "kept neurons frozen at their unablated values",
        "kept neurons computed live in the ablated run",
    ]
    assert "mean |attribution| over pairs" in fig.get_suptitle()
    assert len([line for line in fig.axes[0].lines if len(line.get_xdata()) == len(fractions)]) == 2
    save(fig, tmp_path, "figD9_readings")
    neurons = pd.DataFrame({"layer": [0, 1, 1, 2, 3, 3, 3]})
    fig = figD10_neuron_layers(neurons, pd.DataFrame({"layer": [2, 3]}), "synthetic")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3"]
    (legend,) = fig.legends  # under the panel
    assert legend.legend_handles[1].get_facecolor()[3] == 0 and "57% of top neurons" in legend.get_texts()[1].get_text()
    save(fig, tmp_path, "figD10")

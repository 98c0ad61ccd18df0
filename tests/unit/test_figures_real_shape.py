"""The figures that break only on a real model (30 layers of 9 heads, 11 circuit MLPs, one k, two
readings, long labels, negative direct effects), drawn from tables of SmolLM2's shape
(tests/helpers/real_shaped.py) by the functions the plotting rules name, read by
tests/helpers/figures.problems; and the checker's four checks, each shown failing on a figure
drawn as the figures were drawn before (a wrong arm) and passing on its mended twin."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from helpers import real_shaped
from helpers.figures import narrow_panels, problems, save, shares_outside, tick_overlaps, unreached

from helixclock.plotting import figure_layout as layout
from helixclock.plotting import style

FIGURES = list(real_shaped.figures())


@pytest.fixture(scope="module")
def drawn():
    """Each figure of :data:`FIGURES`, drawn once for the module's tests (a second of drawing each)."""
    figures: dict = {}
    yield lambda name: figures[name] if name in figures else figures.setdefault(name, real_shaped.draw(name))
    for fig in figures.values():
        plt.close(fig)


def test_the_fixture_has_a_real_models_shape():
    """What the figures are drawn from: the shape of SmolLM2's tables from `make real`."""
    figures = real_shaped.figures()
    assert len(figures) == 13
    effects, screen = figures["figD4"][1]
    assert len(screen) == 30 * 9 and effects["reading"].unique().tolist() == ["last token", "answer positions"]
    stages = figures["fig07"][1][0]
    assert stages.groupby("reading").size().tolist() == [11, 11]
    sweep, best = figures["fig04"][1]
    assert best["k"].unique().tolist() == [4] and {"layer_span", "clean"} <= set(sweep["method"])  # long labels
    neurons = figures["fig10"][1][0]
    assert len(neurons) == 1380 and (neurons["de"] < 0).sum() == 629
    curves, left_out = figures["figC7"][1]
    assert curves["task"].nunique() == 2 and len(left_out) == 4


@pytest.mark.parametrize("name", FIGURES)
def test_a_real_models_figure_reads_well(name, drawn, tmp_path):
    """Each of the 13 figures: no legend over data, no empty panel, titles inside and apart, no
    two neighbouring tick labels touching, every panel at least 1.5 in and 40% of its cell wide, a
    share in [0, 1], a "smallest k for x%" that reaches x% (save runs problems())."""
    save(drawn(name), tmp_path, f"real_shape_{name}")


def _ticks(ax, axis="x") -> list[str]:
    """The tick labels ``ax`` draws on ``axis`` (inside its view)."""
    ax.figure.canvas.draw()
    ax_ = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax_.get_view_interval())
    return [t.get_text() for loc, t in zip(ax_.get_majorticklocs(), ax_.get_majorticklabels()) if lo <= loc <= hi]


def test_fig04_of_one_k_is_one_wide_panel_and_says_which_k_it_leaves_out(drawn):
    """SmolLM2's sweep has k = 4 alone: one panel over most of the figure's width (3% before), its
    legend under it, at most 12 layer ticks, LD named as the table has it (its numbers take
    several tokens), and the title names the paper's k it does not draw."""
    fig = drawn("fig04")
    (ax,) = fig.axes
    fig.canvas.draw()
    assert ax.bbox.width / fig.bbox.width > 0.8
    assert fig.legends[0].get_window_extent().y1 < ax.get_window_extent().y0
    assert _ticks(ax) == ["0", "3", "6", "9", "12", "15", "18", "21", "24", "27", "30"]
    assert ax.get_ylabel() == "LD (log-likelihood ratio)"  # "logit difference" before
    title = " ".join(fig.get_suptitle().split())
    assert title.endswith("not drawn: k = 1, k = 2, k = 3 (not fitted in this run; the paper's are)")


def test_figD5_names_a_share_never_reached_as_not_reached(drawn):
    """Fig. D5's curve peaks at 0.7995 (and 0.69): "80% not reached", with the highest point
    marked, never "smallest m for 80%: 10" (the table's fallback to the last m)."""
    fig = drawn("figD5")
    titles = [" ".join(ax.get_title().split()) for ax in fig.axes]
    assert titles == [
        "at the last token m = 2 used: 61%; 80% not reached (at most 79.95%, at m = 10)",
        "at the answer positions m = 2 used: 52%; 80% not reached (at most 69%, at m = 10)",
    ]
    for ax, peak in zip(fig.axes, (0.7995, 0.69)):
        (cross,) = [line for line in ax.lines if line.get_marker() == "X"]
        assert cross.get_xydata().tolist() == [[10, pytest.approx(peak)]]
        assert not [line for line in ax.lines if "smallest" in line.get_label()]


def test_figD11_shares_the_positive_de_on_one_scale(drawn):
    """SmolLM2's 629 of 1,380 neurons of negative DE: the running share of the positive DE climbs
    to 100% (178% and more before, a share of the signed total) and the counts for 70-95% are
    those of the positive DE; below, both sets as shares of their own neurons (bars of 225 beside
    bars of a few before), at most 12 layer ticks."""
    neurons = real_shaped.top_neurons()
    de = np.sort(neurons["de"].to_numpy())[::-1]
    share = np.cumsum(np.clip(de, 0, None)) / np.clip(de, 0, None).sum()
    expected = [int(np.argmax(share >= p - 1e-12)) + 1 for p in (0.7, 0.8, 0.9, 0.95)]
    fig = drawn("figD11")
    top, bottom = fig.axes[:2]
    curve = top.lines[0]  # the running share (then the counts' dotted lines)
    assert np.allclose(curve.get_ydata(), share) and curve.get_ydata().max() == 1.0
    box = top.texts[0].get_text().splitlines()
    assert box == [f"smallest number of neurons for {p}: {n}" for p, n in zip(("70%", "80%", "90%", "95%"), expected)]
    heights = {}
    for bar in bottom.patches:
        heights.setdefault(bar.get_facecolor(), []).append(bar.get_height())
    assert [pytest.approx(sum(h)) for h in heights.values()] == [1.0, 1.0]  # each set's own shares
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["all 1380 top neurons", f"the {expected[1]} holding 80% of the positive DE"]
    assert _ticks(bottom) == [str(layer) for layer in range(0, 30, 3)]


def test_figD11_of_a_table_an_older_run_wrote_shares_the_positive_de():
    """A cumulative_de.csv as 32a8dce wrote it (the running share of the signed total, to 3.38 on
    these DEs, and its counts where that share crosses 70-95%) is drawn as this code's table: the
    figure works the share out again from the DEs."""
    from helixclock.stages.neurons.figures import figD11_neuron_direct_effect
    from helixclock.stages.neurons.tables import cumulative_de
    from helixclock.stats.statistics import cumulative_shares

    table = cumulative_de(real_shaped.top_neurons())
    signed = cumulative_shares(table["de"].to_numpy())[1]
    old = table.assign(cumulative_share=signed, reaches="")
    for p in (0.7, 0.8, 0.9, 0.95):
        first = int(np.argmax(signed >= p))
        old.loc[first, "reaches"] = ",".join(x for x in (old.loc[first, "reaches"], f"{p:.0%}") if x)
    crossed = old.loc[old["reaches"] != "", "count"].to_numpy()
    assert signed.max() > 3 and (crossed < table.loc[table["reaches"] != "", "count"].to_numpy()).all()  # early
    fig = figD11_neuron_direct_effect(old, "older table")
    assert np.allclose(fig.axes[0].lines[0].get_ydata(), table["cumulative_share"])
    assert problems(fig) == []
    plt.close(fig)


def test_heatmaps_and_bars_of_30_layers_carry_a_tick_every_third_layer(drawn):
    """Figs. D4 and D10: 10 layer ticks (0, 3, ..., 27), not 30."""
    fig = drawn("figD4")
    assert _ticks(fig.axes[0], "y") == [str(layer) for layer in range(0, 30, 3)]
    assert _ticks(fig.axes[0], "x") == [str(head) for head in range(9)]
    fig = drawn("figD10")
    assert _ticks(fig.axes[0]) == [str(layer) for layer in range(0, 30, 3)]


def test_fig10_merges_the_labels_of_crowded_circuit_mlps(drawn):
    """SmolLM2's MLPs 22-25 sit at one point of Fig. 10's left panel: one label names them all; the
    colour bar beside its panel, the legend under both."""
    fig = drawn("fig10")
    left = fig.axes[0]
    labels = [t.get_text() for t in left.texts]
    assert "MLP22, 23, 24, 25" in labels
    assert sorted(labels) == sorted(set(labels))
    named = [n for label in labels for n in label.removeprefix("MLP").split(", ")]
    assert sorted(map(int, named)) == real_shaped.CIRCUIT
    fig.canvas.draw()
    bar = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"][0]
    assert (bar.get_window_extent().x0 - left.get_window_extent().x1) / fig.dpi < 0.5  # 2 in before
    assert len(fig.legends) == 1 and left.get_legend() is None


def test_figC7_names_the_tasks_table_1_leaves_out(drawn):
    fig = drawn("figC7")
    title = " ".join(fig.get_suptitle().split())
    assert (
        "not drawn: a//5 (6/10), a*1.5 (3/10), a mod 2 (9/10), x-a=0, x= (0/10) "
        "(too few correct prompts for the pairs or the fit: found/needed)" in title
    )
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2


def test_percent_short_of_never_prints_the_threshold():
    assert style.percent_short_of(0.7995, 0.8) == "79.95%"
    assert style.percent_short_of(0.69, 0.8) == "69%"
    assert style.percent_short_of(0.949, 0.95) == "94.9%"


def test_positive_shares_never_pass_one():
    from helixclock.stats.statistics import cumulative_shares, positive_shares

    values = np.array([3.0, -2.0, 1.0, -1.0])
    order, shares = positive_shares(values)
    assert order.tolist() == [0, 2, 3, 1] and shares.tolist() == [0.75, 1.0, 1.0, 1.0]
    assert cumulative_shares(values)[1].tolist() == [3.0, 4.0, 3.0, 1.0]  # the signed one: 300%
    assert np.isnan(positive_shares(np.array([-1.0, 0.0]))[1]).all()
    same = np.array([4.0, 1.0, 2.0])
    assert np.allclose(positive_shares(same)[1], cumulative_shares(same)[1])  # no negative DE: the paper's


# -- each new check of problems(), failing on the figures as they were drawn, passing mended -----


def _layers_bars(ticks_every_layer: bool):
    """Fig. D10 as it was (a tick for each of 30 layers, its legend beside the panel) or mended."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    layers = np.arange(30)
    ax.bar(layers, np.arange(30) % 7 + 1, label="top neurons (n = 1380)")
    ax.bar([0], [0], label="circuit MLP layers (outlined): 33% of top neurons")
    if ticks_every_layer:
        ax.set_xticks(layers)
        layout.legend_outside(ax)
    else:
        layout.category_ticks(ax, layers, layers)
        layout.shared_legend(fig, [ax])
    return fig, ax


def test_problems_finds_tick_labels_running_together():
    fig, ax = _layers_bars(ticks_every_layer=True)
    fig.canvas.draw()
    (found,) = tick_overlaps(ax, fig.canvas.get_renderer())
    assert found == "20 neighbouring x tick labels of 'an axes' overlap (the first: '9' and '10')"  # of 29 pairs
    assert found in problems(fig)
    fig, ax = _layers_bars(ticks_every_layer=False)
    assert problems(fig) == []


FIG4_LABELS = {
    "layer": "layer patch",
    "layer_span": "layer patch, all of a's tokens",
    "clean": "clean LD (clean run's own; a reference, not a bound)",
    "pca": "PCA (2k + 1 components)",
    "helix": "helix (the best periods T for k)",
    "circle": "circle (the best periods T for k)",
    "poly": "polynomial (degree 2k + 1)",
}


def _one_k(legend_beside: bool):
    """Fig. 4 of one k as it was (4 in wide for its one k, its 7 legend entries beside the panel)
    or mended (the figure 7 in wide, the legend under the panel)."""
    sweep, _ = real_shaped.helix_sweep()
    fig, ax = plt.subplots(figsize=(4.0, 3.8) if legend_beside else (7.0, 4.4))
    for method, part in sweep.groupby("method", sort=False):
        style.band(ax, part, FIG4_LABELS[method], None)
    style.ld_axes(ax, "k = 4 (n = 50 pairs)\nhelix and circle T=[2, 5, 10, 100]")
    (layout.legend_outside(ax) if legend_beside else layout.shared_legend(fig, [ax]))
    layout.suptitle(fig, "smollm2-135m: patching fits of h_a (clean a+b, corrupted a'+b; mean over pairs, 95% CI)")
    return fig, ax


def test_problems_finds_a_panel_squeezed_by_its_legend():
    fig, ax = _one_k(legend_beside=True)
    fig.canvas.draw()
    (found,) = narrow_panels(ax)
    inches = float(found.split(" is ")[1].split(" in wide")[0])
    assert inches < 0.5 and found.endswith(f"{inches / 4:.0%} of its cell of 4.00 in")  # 0.13 in, 3%
    assert found in problems(fig)
    fig, ax = _one_k(legend_beside=False)
    assert problems(fig) == []


def test_problems_finds_a_share_above_one():
    """Fig. D11 as it was: the running share of the signed total of SmolLM2-shaped DEs, which runs
    to 3.38; the share of the positive DE stays in [0, 1]."""
    from helixclock.stats.statistics import cumulative_shares, positive_shares

    de = real_shaped.top_neurons()["de"].to_numpy()
    for shares, bad in ((cumulative_shares(de)[1], True), (positive_shares(de)[1], False)):
        fig, ax = plt.subplots(figsize=(7, 3.4))
        ax.plot(np.arange(1, len(de) + 1), shares)
        ax.set_ylabel("running share of their total DE")
        found = shares_outside(ax)
        if bad:
            (line,) = found
            assert line.endswith(f"runs from {shares.min():.3g} to {shares.max():.3g}") and shares.max() > 1.5
            assert line in problems(fig)
        else:
            assert found == [] and problems(fig) == []
        plt.close(fig)


def test_problems_finds_a_smallest_k_that_is_not_reached():
    """Fig. D5 as it was: "smallest m for 80%: 10" at a curve that peaks at 0.7995 there."""
    part = real_shaped.mixed_heads().query("reading == 'last token'")
    for mended in (False, True):
        fig, ax = plt.subplots(figsize=(6.5, 4))
        style.fraction_curve(ax, part, "m", 0.8, "m")
        if mended:
            ax.set_title(style.smallest_mark(ax, part, "m", "fraction", 0.8, 10, "m"))
        else:
            ax.axvline(10, color="C3", ls=":", label="smallest m for 80%: 10")
        layout.shared_legend(fig, [ax])
        found = unreached(ax)
        if mended:
            assert found == [] and problems(fig) == []
        else:
            assert found == [
                "'smallest m for 80%: 10' of 'fraction of the all-components effect': the curve is at 0.7995 there, below 0.8"
            ]
            assert found[0] in problems(fig)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    part = part.assign(fraction=np.linspace(0.5, 0.9, len(part)))  # reaches 80% at m = 8
    style.fraction_curve(ax, part, "m", 0.8, "m")
    assert style.smallest_mark(ax, part, "m", "fraction", 0.8, 8, "m") == "smallest m for 80%: 8"
    assert unreached(ax) == []
    nothing = part.assign(fraction=np.nan)  # a reference effect of 0: no fraction, nothing marked
    assert style.smallest_mark(ax, nothing, "m", "fraction", 0.8, 10, "m").startswith("80% not reached (no fraction")
    ax.set_title("smallest m for 80%: 7")  # one m too early
    assert unreached(ax) == [
        "'smallest m for 80%: 7' of 'smallest m for 80%: 7': the curve is at 0.78 there, below 0.8"
    ]

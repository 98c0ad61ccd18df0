"""Figures a reader can read, in the cases the toys do not show, planted and checked by
tests/helpers/figures.problems (no legend over data, no empty panel, titles and labels inside
the figure and apart): Fig. C7 of a model that runs four of the six tasks, Fig. D2 of a model
whose heads were screened, Fig. 2 of a spectrum whose low-frequency bumps outgrow the paper's
peaks.  Every figure of the whole-DAG runs is checked in tests/dag/test_run_figures_readable.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.figures import problems, save


def _curves(tasks) -> pd.DataFrame:
    """Fig. C7's table for ``tasks``: every method's mean LD at 4 layers, falling with the layer."""
    rows = []
    for t, task in enumerate(tasks):
        for m, method in enumerate(("layer", "pca", "helix", "circle", "poly")):
            for layer in range(4):
                mean = (10 - 2 * m + t) * (3 - layer) / 3
                rows.append(
                    dict(task=task, method=method, layer=layer, ld_mean=mean, ld_low=mean - 1, ld_high=mean + 1)
                )
    return pd.DataFrame(rows).assign(n_pairs=100)


def _left_out(tasks) -> pd.DataFrame:
    """helix/other_tasks_left_out.csv of a model that runs ``tasks``: the others, too few pairs."""
    from helixclock.jobs.preconditions import LEFT_OUT_COLUMNS
    from helixclock.prompts.tasks import TASKS

    rows = [
        dict(task=t, label=TASKS[t].label, prompts=100, correct=3, found=3, minimum=10) for t in TASKS if t not in tasks
    ]
    return pd.DataFrame(rows, columns=LEFT_OUT_COLUMNS)


@pytest.mark.parametrize("tasks", [["add", "sub23", "mul1p5", "solve_x"], ["add", "sub23", "div5", "mod2", "solve_x"]])
def test_fig_c7_draws_a_panel_per_task_and_its_legend_beside_them(tasks, tmp_path):
    """SmolLM2 runs four or five of the six tasks (Table 1 leaves the others out): a panel for each
    task it has, none empty, one legend for all, under the panels and over no curve; the title
    names the tasks left out."""
    from helixclock.stages.helix.figures import figC7_other_tasks_patching

    fig = figC7_other_tasks_patching(_curves(tasks), _left_out(tasks), "four-tasks")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == len(tasks) and all(len(ax.lines) >= 5 for ax in panels)
    assert [ax.get_legend() for ax in panels] == [None] * len(tasks) and len(fig.legends) == 1
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["layer patch", "PCA", "helix", "circle", "polynomial"]
    assert fig.legends[0].get_window_extent().y1 < min(ax.get_window_extent().y0 for ax in panels)
    missing = {"mul1p5": "a*1.5", "div5": "a//5", "mod2": "a mod 2"}
    title = " ".join(fig.get_suptitle().split())
    assert "not drawn: " in title and "(too few correct prompts for the pairs or the fit: found/needed)" in title
    assert [f"{label} (3/10)" in title for t, label in missing.items()] == [t not in tasks for t in missing]
    rows = {round(ax.get_position().y0, 3) for ax in panels}
    assert len(rows) == 2  # 4 tasks: 2 x 2; 5 tasks: 3 over 2, the second row centred
    if len(tasks) == 5:
        bottom = sorted(panels, key=lambda ax: ax.get_position().y0)[:2]
        middle = np.mean([(ax.get_position().x0 + ax.get_position().x1) / 2 for ax in bottom])
        assert middle == pytest.approx(0.5, abs=0.05)
    save(fig, tmp_path, f"figC7_{len(tasks)}_tasks")  # and problems() finds nothing


def test_problems_finds_a_legend_over_curves_an_empty_panel_and_a_title_past_the_edge():
    """The checker itself: a figure with each fault is caught, its fixed twin is not."""
    import matplotlib.pyplot as plt

    from helixclock.plotting import figure_layout as layout

    fig, axes = plt.subplots(1, 2, figsize=(6, 3))
    x = np.linspace(0, 1, 50)
    axes[0].plot(x, np.ones_like(x) * 0.9, label="a curve at the top")
    axes[0].plot(x, x, label="a rising curve")
    axes[0].legend(loc="upper left")  # over both curves
    fig.suptitle("a title far too long for a figure six inches wide, " * 3)
    found = problems(fig)
    assert any("legend" in f and "covers line 'a curve at the top'" in f for f in found)
    assert any(f.startswith("empty panel") for f in found)
    assert any("runs past the figure's edge" in f for f in found)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(x, np.ones_like(x) * 0.9, label="a curve at the top")
    ax.plot(x, x, label="a rising curve")
    layout.legend_outside(ax)
    layout.suptitle(fig, "a title far too long for a figure six inches wide, " * 3)
    assert problems(fig) == []
    assert fig.get_suptitle().count("\n") >= 2  # broken at spaces, not cut
    plt.close(fig)


def _screened(n_layers: int = 6, n_heads: int = 4, keep: int = 9, seed: int = 0):
    """A model's head effects where the attribution screen kept the ``keep`` heads of largest
    |attribution| (every head in the screen table, only those in the effects table)."""
    rng = np.random.default_rng(seed)
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    attribution = rng.normal(0, 1, len(layer))
    screened = np.zeros(len(layer), bool)
    screened[np.argsort(-np.abs(attribution))[:keep]] = True
    screen = pd.DataFrame({"layer": layer, "head": head, "screened": screened, "pair_0": attribution})
    te = attribution + rng.normal(0, 0.1, len(layer))
    effects = pd.DataFrame(
        {
            "reading": "last token",
            "layer": layer,
            "head": head,
            "te": te,
            "de": te / 2,
            "n_pairs": 100,
            "fit_all": te * 0.8,
        }
    )[screened]
    return effects.reset_index(drop=True), screen


def test_fig_d2_marks_the_heads_the_screen_left_out_as_not_patched(tmp_path):
    """Fig. D2 (and D4) of a screened model: the grid is the model's (6 layers x 4 heads, not the
    patched heads' extent), the unpatched heads' cells are empty (NaN), hatched grey under the
    colour mesh, and a legend entry names them; the patched heads keep their effects."""
    from matplotlib.patches import Rectangle

    from helixclock.stages.heads.figures import figD2_head_patching, figD4_head_helix_fit

    effects, screen = _screened()
    fig = figD2_head_patching(effects, screen, "screened")
    te_ax = fig.axes[0]
    mesh = te_ax.collections[0]
    grid = np.ma.getdata(mesh.get_array()).reshape(6, 4)
    mask = np.ma.getmaskarray(mesh.get_array()).reshape(6, 4) | np.isnan(grid)
    patched = np.zeros((6, 4), bool)
    patched[effects["layer"], effects["head"]] = True
    assert (mask == ~patched).all()
    assert np.allclose(grid[effects["layer"], effects["head"]], effects["te"])
    hatch = [p for p in te_ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    assert len(hatch) == 1 and hatch[0].get_width() == 4 and hatch[0].get_height() == 6
    assert hatch[0].get_zorder() < mesh.get_zorder()
    (legend,) = fig.legends
    assert legend.get_texts()[0].get_text().startswith("not patched: outside the attribution screen (9 of 24")
    assert legend.legend_handles[0].get_hatch() == "///"
    save(fig, tmp_path, "figD2_screened")

    fig = figD4_head_helix_fit(effects, screen, "screened")
    assert any(p.get_hatch() for p in fig.axes[0].patches)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == ["TE below 5% of the largest", "not patched (outside the attribution screen)"]
    save(fig, tmp_path, "figD4_screened")

    fig = figD2_head_patching(_screened(keep=24)[0], "unscreened")  # called without a screen: nothing hatched
    assert not fig.legends and not [p for p in fig.axes[0].patches if p.get_hatch()]


def test_fig_2_labels_the_papers_periods_where_they_peak(tmp_path):
    """A spectrum over 0..359 with peaks at T = 2, 2.5, 5, 10 and larger low-frequency bumps at
    T = 36 and 90 (the toy's): every one of the paper's periods (2, 5, 10, 100) is labelled in red
    at its peak, T = 100 at the bin nearest it that peaks (90, as "T=90 ≈ 100"); T = 2.5, which
    the paper does not name, and the bumps get grey labels, and the title says so."""
    from helixclock.stages.structure.figures import HARMONICS, PAPER_PERIODS, fig02_fourier_pc1, paper_peaks

    n = 360
    k = np.arange(1, n // 2 + 1)
    magnitude = np.full(len(k), 0.5)
    for period, height in ((2, 3.4), (2.5, 3.9), (5, 4.8), (10, 3.8), (36, 4.6), (90, 5.1), (120, 4.1)):
        magnitude[k == round(n / period)] = height
    spectrum = pd.DataFrame(
        {"n_numbers": n, "layer": 1, "frequency": k, "period": n / k, "magnitude": magnitude, "main": True}
    ).assign(compat="corrected")
    peaks = paper_peaks(spectrum)
    assert list(peaks["paper_period"]) == list(PAPER_PERIODS) == [2, 5, 10, 100]
    assert np.allclose(peaks["period"].astype(float), [2, 5, 10, 90])  # 100: bins 90 and 120, 90 stronger
    assert HARMONICS == (2.5,) and np.allclose(paper_peaks(spectrum, HARMONICS)["period"].astype(float), [2.5])
    a = np.arange(100)
    pc1 = pd.DataFrame(
        {"range": "0-99", "a": a, "pc1": a / 10, "line": a / 10, "line_r2": 1.0, "explained_variance": 0.5}
    )
    fig = fig02_fourier_pc1(spectrum, pc1, "planted")
    top = fig.axes[0]
    labels = {t.get_text(): t.xy for t in top.texts}
    for T in (2, 2.5, 5, 10):
        x, y = labels[f"T={T:g}"]
        assert x == pytest.approx(T) and y == pytest.approx(magnitude[k == round(n / T)][0])
    assert labels["T=90 ≈ 100"][0] == pytest.approx(90)
    red = {t.get_text() for t in top.texts if t.get_color() == "#d62728"}
    assert red == {"T=2", "T=5", "T=10", "T=90 ≈ 100"}
    grey = {t.get_text() for t in top.texts if t.get_color() == "0.4"}
    assert {"T=2.5", "T=36"} <= grey  # T = 2.5 and the strongest bump beside them
    title = fig._suptitle.get_text().replace("\n", " ")
    assert "red: the paper's periods T = 2, 5, 10, 100" in title and "grey: T = 2.5" in title
    save(fig, tmp_path, "fig02_planted")


def test_fig_d11_shares_the_positive_de_when_the_top_neurons_de_sums_below_zero(tmp_path):
    """Gemma-3's top neurons' signed DE sums below 0 (make real): Fig. D11's running share is of
    their positive DE, so it is defined, rises to 100% at the last positive neuron and never
    passes it; a set of no positive DE draws the running total and says the share is not defined,
    instead of an empty panel, and names no "80%" set."""
    from helixclock.stages.neurons.figures import figD11_neuron_direct_effect
    from helixclock.stages.neurons.tables import cumulative_de

    rng = np.random.default_rng(0)
    n = 40
    neurons = pd.DataFrame(
        {
            "rank": np.arange(n),
            "layer": rng.integers(0, 4, n),
            "neuron": np.arange(n),
            "de": np.r_[0.4, 0.1, rng.normal(-0.05, 0.02, n - 2)],
            "in_circuit": False,
        }
    )
    neurons.loc[2:, "de"] = -neurons.loc[2:, "de"].abs()
    assert neurons["de"].sum() < 0
    table = cumulative_de(neurons)
    share = table["cumulative_share"].to_numpy()
    assert share[0] == pytest.approx(0.8) and (share[1:] == 1.0).all()  # 0.4 of 0.5, then all of it
    assert table.loc[table["reaches"] != "", "reaches"].tolist() == ["70%,80%", "90%,95%"]
    fig = figD11_neuron_direct_effect(table, "planted")
    save(fig, tmp_path, "figD11_total_below_zero")  # and problems() finds nothing (a share in [0, 1])
    top = fig.axes[0]
    assert top.get_ylabel() == "running share of their positive DE"
    assert top.get_title() == "38 of 40 with a negative DE (they add nothing to the share)"

    fig = figD11_neuron_direct_effect(cumulative_de(neurons.assign(de=-neurons["de"].abs())), "none positive")
    save(fig, tmp_path, "figD11_none_positive")
    top, bottom = fig.axes[:2]
    assert top.get_title().startswith("no running share: no neuron has a positive DE (they sum to")
    assert top.get_ylabel() == "running total of their DE"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["all 40 top neurons"]


def test_fig_d6_draws_the_digits_panel_only_where_a_number_has_a_tens_digit_of_its_own():
    """Fig. D6 of the paper's models (numbers of one token: no tens key, its attention NaN) has
    the paper's three panels, with no empty "attention to the digit" panel beside them; where some
    number's tens digit is a token of its own, a fourth panel shows the attention to each digit."""
    import matplotlib.pyplot as plt

    from helixclock.stages.heads.figures import figD6_head_categories

    props = pd.DataFrame(
        {
            "reading": "last token",
            "layer": [0, 1, 2],
            "head": [0, 1, 2],
            "category": ["a,b", "a+b", "mixed"],
            "attn_a": [0.2, 0.1, 0.3],
            "attn_b": [0.3, 0.2, 0.1],
            "attn_last": [0.1, 0.4, 0.2],
            "attn_a_units": [0.2, 0.1, 0.3],
            "attn_a_tens": np.nan,
            "attn_b_units": [0.3, 0.2, 0.1],
            "attn_b_tens": np.nan,
        }
    )
    one = figD6_head_categories(props, "one-token")
    assert len(one.axes) == 3 and one.axes[2].get_xlabel() == "attention to a token"
    several = figD6_head_categories(props.assign(attn_a_tens=[0.05, np.nan, 0.1]), "digits")
    assert len(several.axes) == 4 and several.axes[3].get_ylabel() == "attention to the digit"
    plt.close("all")


def test_fig_d6_is_the_same_file_on_every_run_and_leaves_numpys_generator_as_it_was(tmp_path):
    """The strip panels' jitter (seaborn's stripplot draws it from numpy's global generator) is
    seeded inside the figure: two draws give the same PNG bytes, and the caller's random state is
    not moved.  The wrong arm, a stripplot drawn as seaborn draws it, differs between two draws."""
    import matplotlib.pyplot as plt

    from helixclock.plotting.style import sns
    from helixclock.project.io import save_figure
    from helixclock.stages.heads.figures import figD6_head_categories

    props = pd.DataFrame(
        {
            "reading": "last token",
            "layer": [0, 0, 1, 1, 1],
            "category": ["a+b", "a+b", "mixed", "mixed", "mixed"],
            "attn_a": [0.2, 0.1, 0.3, 0.2, 0.4],
            "attn_b": [0.3, 0.2, 0.1, 0.5, 0.2],
            "attn_last": [0.1, 0.4, 0.2, 0.3, 0.1],
            "attn_a_tens": np.nan,
            "attn_b_tens": np.nan,
        }
    )

    def png(fig) -> bytes:  # the file as the pipeline writes it
        path = tmp_path / "fig.png"
        save_figure(fig, [path])
        return path.read_bytes()

    np.random.seed(123)
    before = np.random.random()
    np.random.seed(123)
    first = png(figD6_head_categories(props, "toy"))
    assert np.random.random() == before  # the caller's state, as it was
    assert png(figD6_head_categories(props, "toy")) == first

    def plain() -> bytes:
        fig, ax = plt.subplots()
        sns.stripplot(data=props, x="category", y="layer", ax=ax)
        return png(fig)

    assert plain() != plain()

"""Fig. 5 (last-token fits) and Fig. 6 (layer effects)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ...plotting.figure_layout import shared_legend, suptitle
from ...plotting.style import band, by_reading, ld_axes, sns

FIT_COLOR = {"layer patch": "k", "helix(a,b,a+b)": "C3", "helix(a+b)": "C2", "helix(a,b)": "C1"}


def fig05_last_token_helix(curves: pd.DataFrame, model: str):
    """Fig. 5: last-token fits patched at the output of every block (the paper's layers); for
    answers of several tokens beside the same fits at every position that predicts an answer
    token, patched together."""
    readings = by_reading(curves[curves["block_output"] >= 0])
    fig, axes = plt.subplots(1, len(readings), figsize=(7.5 * len(readings), 4.2), sharey=True, squeeze=False)
    for ax, (reading, part) in zip(axes[0], readings):
        pca_colors = iter(("C0", "C9", "C4"))
        for fit in dict.fromkeys(part["fit"]):
            n = part.loc[part["fit"] == fit, "n_params"].iloc[0]
            label = fit if fit == "layer patch" or fit.startswith("PCA") else f"{fit} ({int(n)} params)"
            color = FIT_COLOR.get(fit) or next(pca_colors)
            band(ax, part[part["fit"] == fit], label, color, x="block_output")
        where = "the last-token residual" if reading == "last token" else "the residuals at the answer positions"
        if len(readings) == 1:
            ld_axes(ax, f"{model}: fits of {where} (clean a+b, corrupted a'+b')", convention="output", pairs=part)
        else:
            ld_axes(ax, f"fits of {where}", convention="output", pairs=part)
    if len(readings) > 1:
        suptitle(fig, f"{model}: fits of the residual patched at the last token and at the answer positions "
                 "(clean a+b, corrupted a'+b')")  # fmt: skip
    shared_legend(fig, axes[0], "right")
    return fig


def fig06_layer_patching(effects: pd.DataFrame, model: str):
    """Fig. 6: TE and DE of each attention and MLP layer at the last token (answers of several
    tokens: a second row at every position that predicts an answer token, TE and DE on the
    same positions)."""
    readings = by_reading(effects)
    fig, grid = plt.subplots(len(readings), 2, figsize=(11, 3.8 * len(readings)), sharey=True, squeeze=False)
    for axes, (reading, table) in zip(grid, readings):
        _effect_panels(axes, table, reading)
    shared_legend(fig, grid.ravel(), "lower", ncols=2)
    suptitle(fig, f"{model}: which layers compute a+b")
    return fig


def _effect_panels(axes, effects: pd.DataFrame, reading: str) -> None:
    """Fig. 6's MLP and attention panels of one reading."""
    for ax, comp in zip(axes, ("MLP", "attention")):
        part = effects[effects["component"] == comp].sort_values("layer")
        long = pd.concat(
            [
                pd.DataFrame(
                    {
                        "layer": part["layer"],
                        "effect": part[e],
                        "low": part[f"{e}_low"],
                        "high": part[f"{e}_high"],
                        "kind": name,
                    }
                )
                for e, name in (("te", "total effect (activation patching)"), ("de", "direct effect (path patching)"))
            ]
        )
        sns.barplot(data=long, x="layer", y="effect", hue="kind", ax=ax, palette=["C0", "C1"], errorbar=None)
        for bars, (_, group) in zip(ax.containers, long.groupby("kind", sort=False)):
            x = [b.get_x() + b.get_width() / 2 for b in bars]
            ax.errorbar(
                x,
                group["effect"],
                yerr=[group["effect"] - group["low"], group["high"] - group["effect"]],
                fmt="none",
                ecolor="k",
                elinewidth=0.8,
                capsize=2,
            )
        where = "the last token" if reading == "last token" else "the answer positions"
        ld_axes(ax, f"{comp} outputs at {where}", convention="block", pairs=part)

"""Fig. D8 (top-k MLPs) and Fig. 7 (circuit MLPs build or read out a+b)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...style import topk_figure, with_pairs


def figD8_mlp_topk(topk: pd.DataFrame, model: str):
    """Fig. D8: top-k MLPs by TE patched together (each point names the MLP it adds)."""
    return topk_figure(topk, model, "MLPs", annotate=True)


def fig07_mlp_stages(stages: pd.DataFrame, model: str):
    """Fig. 7: per circuit MLP, helix(a+b)/TE and DE/TE."""
    long = pd.concat(
        [
            pd.DataFrame({"MLP": [f"MLP{l}" for l in stages["layer"]], "fraction": stages[col], "measure": label})
            for col, label in (("helix_sum_over_te", "helix(a+b) / TE"), ("de_over_te", "DE / TE"))
        ]
    )
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    sns.lineplot(
        data=long,
        x="MLP",
        y="fraction",
        hue="measure",
        style="measure",
        markers=True,
        dashes=False,
        palette=["C2", "C1"],
        ax=ax,
        sort=False,
    )
    ax.set_xlabel("circuit MLP")
    ax.set_ylabel("fraction of total effect")
    ax.axhline(0, color="grey", lw=0.6)
    ax.legend(title=None)
    ax.set_title(with_pairs(f"{model}: circuit MLPs build (helix) or read out (DE) a+b", stages))
    return fig

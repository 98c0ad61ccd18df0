"""A tour of a finished project's results through helixclock.project.results (docs/results-api.md).

    python docs/examples/results_tour.py PROJECT      # PROJECT: the folder Snakemake ran in

For every finished model (Results.models; an unfinished one, e.g. of an interrupted run, is named
with what it lacks and skipped): the a+b accuracy, Table 1 (the largest LD over layers of each
fit patched at the a token), the best layer of Fig. 4's helix, the findings' verdicts, and the
helix (T = 2, 5, 10, 100) fitted again to resid_pre at the a token of one layer of the cache,
with its R^2, the paper's §4.3 fit in a few lines of numpy.
"""

from __future__ import annotations

import sys

import numpy as np

from helixclock.project.results import Results


def helix_r2(values: np.ndarray, a: np.ndarray, periods=(2, 5, 10, 100)) -> float:
    """R^2 of the least-squares helix fit of ``values`` [n, d] on a: a constant, a linear term and
    cos/sin 2 pi a / T for each period (§4.2's basis)."""
    columns = [np.ones_like(a, dtype=float), a / a.max()]
    for T in periods:
        columns += [np.cos(2 * np.pi * a / T), np.sin(2 * np.pi * a / T)]
    basis = np.stack(columns, 1)
    coef, *_ = np.linalg.lstsq(basis, values, rcond=None)
    residual = values - basis @ coef
    return 1 - float((residual**2).sum() / ((values - values.mean(0)) ** 2).sum())


def tour(project: str) -> dict:
    run = Results(project)
    summary = {}
    for model in run.unfinished:
        lacks = run.lacks(model)
        print(
            f"== {model}: not finished, skipped (lacks {len(lacks)} of the outputs every model gets, e.g. "
            f"{', '.join(lacks[:3])}; rerun the pipeline in {project} to finish it)\n"
        )
    for model in run.models:
        accuracy = run.table("ADD_ACCURACY", model)["correct"].mean()
        table1 = run.table("tab01_other_tasks", model)
        sweep = run.table("HELIX_SUMMARY.sweep", model)
        helix = sweep[sweep["method"] == "helix"]
        best = helix.loc[helix["ld_mean"].idxmax()]
        verdicts = run.findings(model)["verdict"].value_counts().to_dict()
        values, ab = run.cache_layer(model, layer=1)
        r2 = helix_r2(values.astype(np.float64), ab[:, 0].astype(np.float64))
        print(f"== {model}: a+b accuracy {accuracy:.1%}")
        print(table1.to_string(index=False))
        print(f"Fig. 4: the helix restores most at layer {int(best['layer'])} (mean LD {best['ld_mean']:.2f})")
        print(f"findings: {verdicts}")
        print(f"helix fitted to resid_pre[1] at the a token: R^2 {r2:.3f} over {len(ab)} prompts\n")
        summary[model] = {"accuracy": accuracy, "best_layer": int(best["layer"]), "r2": r2, "verdicts": verdicts}
    return summary


if __name__ == "__main__":
    tour(sys.argv[1] if len(sys.argv) > 1 else ".")

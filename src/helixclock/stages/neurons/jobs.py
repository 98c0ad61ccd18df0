"""Neurons (section 5.4, appendix D.2): the model jobs' entry points, one implementation whatever
the tokenizer.

* :func:`neuron_attribution` - attribution of every unit, DE of the top units and Fig. D9's
  ablation sweep, with the mean activations the ablations use.
* :func:`neuron_grids` - the top units' N(a, b) over the 100 x 100 grid, their largest
  post-activation and logit lens (Figs. 8, F3, F4); :func:`save_grids` writes them.
* :func:`neuron_fit_eval` - Fig. 9 with the fitted grids.

Each composes the experiments of :mod:`.places` on units (layer, neuron, place) at the places of
the model's answers (:attr:`helixclock.prompts.layout.NumberTokens.places`): where every number is one
token an answer has one place, the whole number at the last token, and the jobs are the paper's
on its neurons at the last token; where numbers take several tokens, the digits' places.  Every
raw table of units carries its ``place``.
"""

from __future__ import annotations

from collections.abc import Sequence

import h5py
import numpy as np
import pandas as pd
import torch

from ...causal.pairs import (
    MEASURE,
    SELECT,
    SPLITS,
    Selection,
    draw_apart,
    model_pairs,
    pair_table,
    same_forced_pairs,
)
from ...patching import Pairs, PatchingEngine
from ...project.io import to_numpy
from ...prompts.sampling import seeded_rows
from .patching import (
    NeuronSettings,
    fitted_name,
    n_top,
    powers_of_two,
    preactivation_kinds,
    preactivation_name,
    sweep_counts,
)
from .places import (
    ablation_means,
    de_pairs_of,
    place_ablation,
    place_attribution,
    place_fit_evaluation,
    place_grids,
    place_lens,
    top_units,
    unit_direct_effects,
)


# -- the rules' entry points -----------------------------------------------------------------
def neuron_attribution(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
    selection: Selection | None = None,
) -> dict:
    """Rule neuron_attribution: every unit's attribution by place (``attribution``), the top
    units' DE (``direct_effects``), Fig. D9's sweep (``ablation``), the job's pairs (``pairs``)
    and the ablation means (``means`` [L, rows, slots, d_mlp], :func:`.places.ablation_means`:
    one row for every ablation prompt where they share one token layout, the paper's mean
    last-token post-activation for one-token numbers; else per ablation prompt in the order of
    :func:`~helixclock.causal.pairs.same_forced_pairs`).  The top units are chosen on the attribution
    pairs; their DE is measured on pairs apart from them where ``selection`` says so
    (:func:`de_pairs`)."""
    model = engine.model
    correct = accuracy[accuracy["correct"]]
    pairs = model_pairs(model, correct, settings.attribution_pairs, settings.seed, template, ("a", "b"))
    scores = place_attribution(engine, pairs, settings.ranking).assign(ranking=settings.ranking)
    top = top_units(scores, top_count(engine, settings))
    measured, drawn = de_pairs(engine, correct, pairs, template, settings, selection)
    de = unit_direct_effects(engine, measured, top)
    prompts = same_forced_pairs(model, seeded_rows(correct, settings.ablation_prompts, settings.seed), template)
    means = ablation_means(engine, seeded_rows(accuracy, settings.mean_prompts, settings.seed), template, prompts)
    ablation = place_ablation(engine, prompts, scores, means, sweep_counts(neurons_of(engine)))
    ablation.insert(0, "ranking", settings.ranking)
    return {"attribution": scores, "direct_effects": de, "ablation": ablation, "pairs": drawn, "means": to_numpy(means)}


def de_pairs(
    engine: PatchingEngine,
    correct: pd.DataFrame,
    attribution: Pairs,
    template: str,
    settings: NeuronSettings,
    selection: Selection | None,
) -> tuple[Pairs, pd.DataFrame]:
    """The pairs the top units' DE is measured on, and the job's pairs table: ``settings.de_pairs``
    pairs drawn apart from the attribution pairs that chose the units
    (:func:`helixclock.causal.pairs.draw_apart`, docs/findings.md "Findings") where ``selection`` separates them;
    else (``compat: authors``, or no ``selection``) the paper's, taken from the attribution
    pairs (:func:`.places.de_pairs_of`: the first ones; pairs of several token layouts: spread
    over every layout in proportion)."""
    separate = selection is not None and selection.separate
    if separate:
        n, seed = settings.de_pairs, settings.seed
        measured = draw_apart(engine.model, correct, attribution, n, seed, template, ("a", "b"))
    else:
        measured = de_pairs_of(attribution, settings.de_pairs)
    split = SPLITS[separate]
    table = pd.concat([pair_table(attribution, SELECT, split), pair_table(measured, MEASURE, split)])
    return measured, table.reset_index(drop=True)


def neuron_grids(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    scores: pd.DataFrame,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
) -> dict:
    """Rule neuron_grids: the grids of the top ``settings.top_share`` of every place of the
    attribution table ``scores`` (its rows ranked within each place): each unit's N(a, b) at its
    place [n_units, 100, 100] (the preactivation; in a gated MLP what
    ``settings.gated_preactivation`` says, with ``up`` the up projection's grids when both are
    fitted; NaN where a + b lacks the place), its largest post-activation and that prompt's a and
    b, the units' ``place``, layer, neuron and rank, their logit lens (:func:`.places.place_lens`:
    ``lens`` over ``lens_tokens``; at the digits' places every neuron's, ``layer_lens``) and
    ``quantity``: what N is."""
    top = top_units(scores, top_count(engine, settings))
    grid = _grid(accuracy).assign(answer=lambda g: g["a"] + g["b"])
    kinds = preactivation_kinds(engine.adapter, settings.gated_preactivation)
    out = place_grids(engine, grid, template, top, kinds)
    arg = out["post_argmax"]
    extra = {"up": out["up"].reshape(len(top), 100, 100)} if "up" in out else {}
    return {
        "pre": out["pre"].reshape(len(top), 100, 100),
        **extra,
        "post_max": out["post_max"],
        "max_a": grid["a"].to_numpy()[arg],
        "max_b": grid["b"].to_numpy()[arg],
        **place_lens(engine, top, grid),
        "layer": top["layer"].to_numpy(),
        "neuron": top["neuron"].to_numpy(),
        "rank": top["rank"].to_numpy(),
        "place": np.array(list(top["place"]), dtype="S"),
        "quantity": preactivation_name(engine.adapter.gated, settings.gated_preactivation),
    }


def neuron_fit_eval(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    top: pd.DataFrame,
    fitted_grids: Sequence[np.ndarray],
    means: np.ndarray,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
) -> pd.DataFrame:
    """Rule neuron_fit_eval: Fig. 9 on the ablation prompts (``top``: place, rank, layer, neuron
    of the fitted units in the fits' order, and ``fitted_grids`` [n_units, 100, 100] per hook
    point of :func:`.patching.preactivation_kinds`, the gate's then the up's:
    :func:`~.neuron_files.fitted_units`; ``means``: the attribution job's), k running over the
    powers of two up to the units of a place; the raw table's ``quantity`` says what was
    fitted."""
    model = engine.model
    prompts = same_forced_pairs(
        model, seeded_rows(accuracy[accuracy["correct"]], settings.ablation_prompts, settings.seed), template
    )
    kinds = preactivation_kinds(engine.adapter, settings.gated_preactivation)
    if len(fitted_grids) != len(kinds):
        raise ValueError(f"{len(fitted_grids)} fitted grids for the {len(kinds)} fitted points {kinds}")
    a, b = prompts.meta["clean_a"], prompts.meta["clean_b"]
    fitted = {kind: g[:, a, b] for kind, g in zip(kinds, fitted_grids)}
    per_place = int(top.groupby("place").size().max())
    means = torch.as_tensor(means, device=model.device)
    raw = place_fit_evaluation(engine, prompts, top, fitted, means, powers_of_two(per_place))
    raw.insert(0, "quantity", fitted_name(engine.adapter.gated, settings.gated_preactivation))
    return raw


# -- what the jobs share ---------------------------------------------------------------------------
def neurons_of(engine: PatchingEngine) -> int:
    """The neurons of one place: every layer's MLP's hidden units."""
    return engine.adapter.n_layers * engine.adapter.d_mlp


def top_count(engine: PatchingEngine, settings: NeuronSettings) -> int:
    """The top units of each place: the paper's top 1% (``settings.top_share``) of the neurons."""
    return n_top(neurons_of(engine), settings.top_share)


def _grid(accuracy: pd.DataFrame) -> pd.DataFrame:
    """The 100 x 100 grid of a+b prompts, a-major (the grids' row order)."""
    grid = accuracy.sort_values(["a", "b"])
    if len(grid) != 10000 or grid["a"].max() != 99 or grid["b"].max() != 99:
        raise ValueError(f"the grids need every a+b prompt with a, b in 0..99; the accuracy table has {len(grid)}")
    return grid


def save_grids(path, grids: dict, model: str) -> None:
    """The grids job's arrays to HDF5 (:func:`neuron_grids`): pre [n_units, 100, 100] (a, b),
    up, post_max, max_a, max_b, lens [n_units, tokens] with lens_tokens, layer_lens, layer,
    neuron, rank, place, and quantity (a string: what ``pre`` holds); ``lens_what`` (what the lens
    is) becomes the lens's attribute."""
    grids = dict(grids)
    lens_what = grids.pop("lens_what")
    with h5py.File(path, "w") as f:
        for key, value in grids.items():
            f.create_dataset(
                key, data=value, compression="gzip" if not isinstance(value, str) and np.ndim(value) > 1 else None
            )
        f["pre"].attrs["axes"] = "neuron, a, b"
        f["pre"].attrs["what"] = f"last-token N(a, b): {grids.get('quantity', 'preactivation')}"
        f["lens"].attrs["what"] = lens_what
        f.attrs["model"] = model

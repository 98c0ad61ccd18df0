"""Neurons at the last token (section 5.4, appendix D.2): the model jobs' entry points.

* :func:`neuron_attribution` - attribution of every neuron, DE of the top neurons and figD9's
  ablation sweep, with the mean activations the ablations use.
* :func:`neuron_grids` - the top neurons' N(a, b) over the 100 x 100 grid, their largest
  post-activation and logit lens (figs. 8, F3, F4); :func:`save_grids` writes them.
* :func:`neuron_fit_eval` - fig09 with the fitted grids.

Each entry point chooses its path by :attr:`helixclock.models.LoadedModel.tokens`: the paper's
neurons at the last token (``last_token_*``, composing the experiments of :mod:`.patching`) or,
for answers of several tokens, units by place (``place_*_job``, those of :mod:`.places`).
"""

from __future__ import annotations

from collections.abc import Sequence

import h5py
import numpy as np
import pandas as pd
import torch

from ...io import to_numpy
from ...pairs import (
    MEASURE,
    SELECT,
    SPLITS,
    Selection,
    draw_apart,
    draw_pairs,
    model_pairs,
    pair_table,
    prompt_ids,
    same_forced_pairs,
    same_prompt_pairs,
)
from ...patching import Pairs, PatchingEngine
from ...sampling import seeded_rows
from .layer_lens import layer_digit_lens
from .patching import (
    NeuronSettings,
    attribution_scores,
    fit_evaluation,
    fitted_name,
    logit_lens,
    mean_activations,
    n_top,
    neuron_ablation,
    neuron_direct_effects,
    powers_of_two,
    preactivation_grids,
    preactivation_kinds,
    preactivation_name,
    sweep_counts,
)
from .places import (
    ablation_means,
    digit_lens,
    lens_tokens,
    place_ablation,
    place_attribution,
    place_fit_evaluation,
    place_grids,
    top_units,
    unit_direct_effects,
)


# -- the rules' entry points -----------------------------------------------------------------
def neuron_attribution(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    positions: dict[str, int] | None,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
    selection: Selection | None = None,
) -> dict:
    """Rule neuron_attribution: :func:`last_token_attribution` at the card's last token
    (``positions["last"]``), or for numbers of several tokens (``positions`` None)
    :func:`place_attribution_job`.  The top units are chosen on the attribution pairs; their DE
    is measured on pairs apart from them where ``selection`` says so (:func:`de_pairs`), and
    ``pairs`` (table) lists both draws."""
    if engine.model.tokens.several:
        return place_attribution_job(engine, accuracy, template, settings, selection)
    return last_token_attribution(engine, accuracy, template, positions["last"], settings, selection)


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
    (:func:`helixclock.pairs.draw_apart`, docs/findings.md "Findings") where ``selection`` separates them;
    else (``compat: authors``, or no ``selection``) the paper's, taken from the attribution
    pairs (the first ones; numbers of several tokens: spread over every layout in proportion)."""
    separate = selection is not None and selection.separate
    if separate:
        n, seed = settings.de_pairs, settings.seed
        measured = draw_apart(engine.model, correct, attribution, n, seed, template, ("a", "b"))
    elif engine.model.tokens.several:
        measured = attribution.spread(settings.de_pairs)  # every layout, in proportion
    else:
        measured = attribution.take(settings.de_pairs)
    split = SPLITS[separate]
    table = pd.concat([pair_table(attribution, SELECT, split), pair_table(measured, MEASURE, split)])
    return measured, table.reset_index(drop=True)


def neuron_grids(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    positions: dict[str, int] | None,
    scores: pd.DataFrame,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
) -> dict:
    """Rule neuron_grids: the grids of the top ``settings.top_share`` of the attribution table
    ``scores`` (its rows ranked), :func:`last_token_grids` at the card's last token, or for
    numbers of several tokens (``positions`` None) the first units of every place,
    :func:`place_grids_job`."""
    if engine.model.tokens.several:
        top = top_units(scores, n_top(int(scores.groupby("place").size().iloc[0]), settings.top_share))
        return place_grids_job(engine, accuracy, template, top, settings)
    top = scores.iloc[: n_top(len(scores), settings.top_share)]
    return last_token_grids(engine, accuracy, template, positions["last"], top, settings)


def neuron_fit_eval(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    positions: dict[str, int] | None,
    top: pd.DataFrame,
    fitted_grids: Sequence[np.ndarray],
    means: np.ndarray,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
) -> pd.DataFrame:
    """Rule neuron_fit_eval (``top`` and ``fitted_grids``:
    :func:`~.neuron_files.fitted_units`): :func:`last_token_fit_eval` at the card's last token,
    or for numbers of several tokens (``positions`` None) :func:`place_fit_eval_job`."""
    if engine.model.tokens.several:
        return place_fit_eval_job(engine, accuracy, template, top, fitted_grids, means, settings)
    return last_token_fit_eval(engine, accuracy, template, positions["last"], top, fitted_grids, means, settings)


# -- the paper's path: neurons at the last token ------------------------------------------------
def last_token_attribution(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    last: int,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
    selection: Selection | None = None,
) -> dict:
    """Attribution of every neuron, DE of the top neurons (on :func:`de_pairs`) and the ablation
    sweep (figD9), plus the mean activations the ablations use.  Returns raw tables, the pairs
    table and ``means`` [L, d_mlp]."""
    tok, device = engine.model.tokenizer, engine.model.device
    correct = accuracy[accuracy["correct"]]
    pairs = draw_pairs(correct, settings.attribution_pairs, settings.seed, tok, template, ("a", "b"), device=device)
    scores = attribution_scores(engine, pairs, last, settings.ranking).assign(ranking=settings.ranking)
    top = scores.iloc[: n_top(len(scores), settings.top_share)]
    measured, drawn = de_pairs(engine, correct, pairs, template, settings, selection)
    de = neuron_direct_effects(engine, measured, top, last)
    means = mean_activations(
        engine, prompt_ids(tok, template, seeded_rows(accuracy, settings.mean_prompts, settings.seed), device), last
    )
    prompts = same_prompt_pairs(tok, seeded_rows(correct, settings.ablation_prompts, settings.seed), template, device)
    ablation = neuron_ablation(engine, prompts, scores, means, sweep_counts(len(scores)), last)
    ablation.insert(0, "ranking", settings.ranking)
    return {"attribution": scores, "direct_effects": de, "ablation": ablation, "pairs": drawn, "means": to_numpy(means)}


def last_token_grids(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    last: int,
    top: pd.DataFrame,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
) -> dict:
    """N(a, b) of the top neurons over the 100 x 100 grid [n_top, 100, 100] (the preactivation;
    in a gated MLP what ``settings.gated_preactivation`` says, with ``up`` the up projection's
    grids when both are fitted), their largest post-activation and its (a, b), their logit lens
    over the answers 0..198, and ``quantity``: what N is."""
    grid = _grid(accuracy)
    kinds = preactivation_kinds(engine.adapter, settings.gated_preactivation)
    out = preactivation_grids(
        engine, prompt_ids(engine.model.tokenizer, template, grid, engine.model.device), top, last, kinds
    )
    answers = grid.drop_duplicates("answer").set_index("answer").loc[np.arange(199), "answer_token"].to_numpy()
    return {
        **_grid_arrays(out, grid, top, logit_lens(engine, top, answers)),
        "quantity": preactivation_name(engine.adapter.gated, settings.gated_preactivation),
    }


def last_token_fit_eval(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    last: int,
    top: pd.DataFrame,
    fitted_grids: np.ndarray | Sequence[np.ndarray],
    means: np.ndarray,
    settings: NeuronSettings = NeuronSettings(),  # noqa: B008 (frozen dataclass, defined in .patching)
) -> pd.DataFrame:
    """fig09 on the ablation prompts: the fitted grids [n_top, 100, 100] read at each prompt,
    one per hook point of :func:`preactivation_kinds` (for gate and up: the gate's, then the
    up's); the raw table's ``quantity`` says what was fitted."""
    device = engine.model.device
    rows = seeded_rows(accuracy[accuracy["correct"]], settings.ablation_prompts, settings.seed)
    prompts = same_prompt_pairs(engine.model.tokenizer, rows, template, device)
    kinds = preactivation_kinds(engine.adapter, settings.gated_preactivation)
    grids = [fitted_grids] if isinstance(fitted_grids, np.ndarray) else list(fitted_grids)
    if len(grids) != len(kinds):
        raise ValueError(f"{len(grids)} fitted grids for the {len(kinds)} fitted points {kinds}")
    a, b = rows["a"].to_numpy(), rows["b"].to_numpy()
    fitted = {kind: torch.as_tensor(g[:, a, b].T, dtype=torch.float32, device=device) for kind, g in zip(kinds, grids)}
    raw = fit_evaluation(
        engine, prompts, top, fitted, torch.as_tensor(means, device=device), powers_of_two(len(top)), last
    )
    raw.insert(0, "quantity", fitted_name(engine.adapter.gated, settings.gated_preactivation))
    return raw


# -- the model jobs for answers of several tokens: units by place (:mod:`.places`) ------------
def place_attribution_job(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    settings: NeuronSettings,
    selection: Selection | None = None,
) -> dict:
    """:func:`last_token_attribution` for answers of several tokens: every unit's attribution by
    place, the top units' DE, Fig. D9's sweep and the ablation means (``means`` [L, n_prompts,
    slots, d_mlp], per ablation prompt in the order of :func:`~helixclock.pairs.same_forced_pairs`)."""
    model, ad = engine.model, engine.adapter
    correct = accuracy[accuracy["correct"]]
    pairs = model_pairs(model, correct, settings.attribution_pairs, settings.seed, template, ("a", "b"))
    scores = place_attribution(engine, pairs, settings.ranking).assign(ranking=settings.ranking)
    neurons = ad.n_layers * ad.d_mlp
    top = top_units(scores, n_top(neurons, settings.top_share))
    measured, drawn = de_pairs(engine, correct, pairs, template, settings, selection)
    de = unit_direct_effects(engine, measured, top)
    prompts = same_forced_pairs(model, seeded_rows(correct, settings.ablation_prompts, settings.seed), template)
    means = ablation_means(engine, seeded_rows(accuracy, settings.mean_prompts, settings.seed), template, prompts)
    ablation = place_ablation(engine, prompts, scores, means, sweep_counts(neurons))
    ablation.insert(0, "ranking", settings.ranking)
    return {"attribution": scores, "direct_effects": de, "ablation": ablation, "pairs": drawn, "means": to_numpy(means)}


def place_grids_job(
    engine: PatchingEngine, accuracy: pd.DataFrame, template: str, top: pd.DataFrame, settings: NeuronSettings
) -> dict:
    """:func:`last_token_grids` for answers of several tokens: each top unit's N(a, b) at its place
    [n_units, 100, 100] (NaN where a + b lacks the place), ``place`` per unit, and the digit
    logit lens ``lens`` [n_units, 10 or 11] over ``lens_tokens`` (the digits, and the token that
    ends an answer), and every neuron's ``layer_lens`` [n_layers, d_mlp, 10 or 11]."""
    grid = _grid(accuracy).assign(answer=lambda g: g["a"] + g["b"])
    kinds = preactivation_kinds(engine.adapter, settings.gated_preactivation)
    out = place_grids(engine, grid, template, top, kinds)
    labels, ids = lens_tokens(engine.model.tokenizer, engine.model.info.get("answer_end"))
    return {
        **_grid_arrays(out, grid, top, digit_lens(engine, top, ids)),
        "layer_lens": layer_digit_lens(engine, ids),  # every neuron's lens: Fig. F4's base rate
        "lens_tokens": np.array(labels, dtype="S"),
        "place": np.array(list(top["place"]), dtype="S"),
        "quantity": preactivation_name(engine.adapter.gated, settings.gated_preactivation),
    }


def place_fit_eval_job(
    engine: PatchingEngine,
    accuracy: pd.DataFrame,
    template: str,
    top: pd.DataFrame,
    fitted_grids: Sequence[np.ndarray],
    means: np.ndarray,
    settings: NeuronSettings,
) -> pd.DataFrame:
    """:func:`last_token_fit_eval` for answers of several tokens (``top``: layer, neuron, place, rank
    of the fitted units, in the fits' order)."""
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


def _grid_arrays(out: dict, grid: pd.DataFrame, top: pd.DataFrame, lens: np.ndarray) -> dict:
    """The grids job's arrays common to both kinds of unit: N(a, b) ``pre`` (and ``up``) as
    [n, 100, 100], the largest post-activation and its prompt's a and b, the logit lens ``lens``,
    and the units' layer, neuron and attribution rank."""
    arg = out["post_argmax"]
    extra = {"up": out["up"].reshape(len(top), 100, 100)} if "up" in out else {}
    return {
        "pre": out["pre"].reshape(len(top), 100, 100),
        **extra,
        "post_max": out["post_max"],
        "max_a": grid["a"].to_numpy()[arg],
        "max_b": grid["b"].to_numpy()[arg],
        "lens": lens,
        "layer": top["layer"].to_numpy(),
        "neuron": top["neuron"].to_numpy(),
        "rank": top["rank"].to_numpy(),
    }


def _grid(accuracy: pd.DataFrame) -> pd.DataFrame:
    """The 100 x 100 grid of a+b prompts, a-major (the grids' row order)."""
    grid = accuracy.sort_values(["a", "b"])
    if len(grid) != 10000 or grid["a"].max() != 99 or grid["b"].max() != 99:
        raise ValueError(f"the grids need every a+b prompt with a, b in 0..99; the accuracy table has {len(grid)}")
    return grid


def save_grids(path, grids: dict, model: str) -> None:
    """The grids job's arrays to HDF5: pre [n_top, 100, 100] (a, b), post_max, max_a, max_b,
    lens [n_top, 199], layer, neuron, rank, and quantity (a string: what ``pre`` holds)."""
    with h5py.File(path, "w") as f:
        for key, value in grids.items():
            f.create_dataset(
                key, data=value, compression="gzip" if not isinstance(value, str) and np.ndim(value) > 1 else None
            )
        f["pre"].attrs["axes"] = "neuron, a, b"
        f["pre"].attrs["what"] = f"last-token N(a, b): {grids.get('quantity', 'preactivation')}"
        f["lens"].attrs["what"] = "W_U[answer 0..198] @ W_out[:, n]: no final norm, no unembedding bias"
        f.attrs["model"] = model

"""Neurons at the last token (section 5.4, appendix D.2): the model jobs.

* :func:`attribution_scores` - attribution patching of every last-token neuron (the engine's
  gradient path), ranked; the top share are the "top neurons".
* :func:`neuron_direct_effects` - each top neuron's write (post_clean - post_base) * W_out[:, n]
  added to the final residual (path patching to the logits).
* :func:`ablation_sweep` - keep the top k neurons (their unablated values), mean-ablate every
  other last-token neuron of every layer; accuracy and LD vs k (figD9).
* :func:`neuron_grids` - preactivations N(a, b) of the top neurons over all 10,000 prompts,
  their maximum post-activation and logit lens (figs. 8, F3, F4).
* :func:`fit_evaluation` - the top k neurons given their actual or their fitted preactivations,
  the rest mean-ablated (fig09).

A neuron is a hidden unit of a layer's MLP at the last token: ``neuron_post`` is the input of
the MLP output projection (act(gate) * up in gated MLPs) and ``neuron_pre`` the input of the
nonlinearity (the gate's preactivation in gated MLPs), which is what Eq. 5 fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...io import to_numpy
from ...pairs import draw_pairs, prompt_ids, same_prompt_pairs, seeded_rows
from ...patching import Pairs, Patch, PatchingEngine, Point
from ...patching.metrics import answer_correct
from ...statistics import raw_table


@dataclass(frozen=True)
class NeuronSettings:
    """Pair and prompt counts of the neuron experiments and the share called "top"."""

    attribution_pairs: int = 1000
    de_pairs: int = 300
    ablation_prompts: int = 1000
    mean_prompts: int = 100
    top_share: float = 0.01
    seed: int = 0


def neuron_sites(adapter, last: int, kind: str = "neuron_post") -> list[Point]:
    """One point per layer covering all its neurons at the last token."""
    return [Point(kind, layer, (last,)) for layer in range(adapter.n_layers)]


def attribution_scores(engine: PatchingEngine, pairs: Pairs, last: int) -> pd.DataFrame:
    """Every neuron's mean attribution over the pairs, ranked (rank 0 = largest, signed)."""
    sites = neuron_sites(engine.adapter, last)
    scores = engine.attribute(pairs, sites, desc="attribution")
    values = torch.stack([scores[p][0] for p in sites])  # [L, d_mlp]
    L, m = values.shape
    df = pd.DataFrame({"layer": np.repeat(np.arange(L), m), "neuron": np.tile(np.arange(m), L),
                       "attribution": to_numpy(values).ravel()})
    df = df.sort_values("attribution", ascending=False, kind="stable").reset_index(drop=True)
    df.insert(0, "rank", np.arange(len(df)))
    return df


def n_top(n_neurons: int, share: float) -> int:
    """The paper's "top 1%": int(share * all neurons), at least one."""
    return max(1, int(share * n_neurons))


def neuron_direct_effects(engine: PatchingEngine, pairs: Pairs, top: pd.DataFrame, last: int) -> pd.DataFrame:
    """DE of each top neuron over ``pairs``: raw table (rank, layer, neuron, pairs)."""
    points = [Point("neuron_post", int(r.layer), (last,), index=int(r.neuron)) for r in top.itertuples()]
    de = engine.direct_effects(pairs, points)
    return raw_table(de, top[["rank", "layer", "neuron"]].to_dict("records"))


def mean_activations(engine: PatchingEngine, ids: torch.Tensor, last: int) -> torch.Tensor:
    """Mean last-token post-activation of every neuron over the prompts ``ids``: [L, d_mlp]."""
    sites = neuron_sites(engine.adapter, last)
    values, _ = engine.collect(ids, sites, logits=False, desc="mean activations")
    return torch.stack([values[p][:, 0].float().mean(0) for p in sites])


def keep_masks(order: pd.DataFrame, k: int, shape: tuple[int, int], device) -> torch.Tensor:
    """Boolean [L, d_mlp]: the first k neurons of ``order`` (columns layer, neuron)."""
    mask = torch.zeros(shape, dtype=torch.bool, device=device)
    head = order.iloc[:k]
    mask[torch.as_tensor(head["layer"].to_numpy()), torch.as_tensor(head["neuron"].to_numpy())] = True
    return mask


def powers_of_two(n: int) -> list[int]:
    """1, 2, 4, ... below n, and n."""
    ks = [2 ** j for j in range(int(np.log2(max(n, 1))) + 1) if 2 ** j < n]
    return ks + [n]


def _ablation_variant(sites, keep: torch.Tensor, means: torch.Tensor) -> list[Patch]:
    """Every layer's last-token neurons mean-ablated except those kept, which get their
    values from the unablated run."""
    return [Patch(p, "clean", where=keep[p.layer]) for p in sites] + \
        [Patch(p, means[p.layer][None, None], where=~keep[p.layer]) for p in sites]


def ablation_sweep(engine: PatchingEngine, prompts: Pairs, order: pd.DataFrame, means: torch.Tensor,
                   ks: Sequence[int], last: int) -> pd.DataFrame:
    """figD9: for each k, the top k of ``order`` kept and every other neuron mean-ablated, on
    ``prompts`` (pairs whose corrupted prompt is the clean one): raw table with rows
    (k, measure) for measure "correct" (0/1 per prompt) and "ld" (logit_unablated(answer) -
    logit_ablated(answer))."""
    sites = neuron_sites(engine.adapter, last)
    variants = [_ablation_variant(sites, keep_masks(order, k, tuple(means.shape), means.device), means) for k in ks]
    res = engine.run(prompts, variants, metric=answer_correct, desc="neuron ablation")
    unablated = prompts.clean_run.answer_logit(engine, prompts.clean_answer)
    total = int(means.numel())
    labels = [{"k": k, "fraction_kept": k / total} for k in ks]
    return pd.concat([raw_table(res.metric, labels, measure="correct"),
                      raw_table(unablated[None] - res.answer_logit, labels, measure="ld")], ignore_index=True)


def neuron_grids(engine: PatchingEngine, ids: torch.Tensor, top: pd.DataFrame, last: int) -> dict[str, np.ndarray]:
    """Last-token preactivations of the top neurons for every prompt of ``ids`` (all 10,000
    a+b prompts, a-major), and each neuron's largest post-activation with its prompt row.

    Returns pre [n_top, n_prompts] and post_max, post_argmax [n_top]."""
    layers = sorted(set(int(x) for x in top["layer"]))
    pre_sites = {layer: Point("neuron_pre", layer, (last,)) for layer in layers}
    post_sites = {layer: Point("neuron_post", layer, (last,)) for layer in layers}
    where = {layer: np.flatnonzero(top["layer"].to_numpy() == layer) for layer in layers}
    index = {layer: torch.as_tensor(top["neuron"].to_numpy()[where[layer]], device=engine.model.device)
             for layer in layers}
    pre, post = [], []
    for chunk in engine.iter_collect(ids, list(pre_sites.values()) + list(post_sites.values()), logits=False,
                                     desc="neuron grids"):
        rows = len(chunk[pre_sites[layers[0]]])
        p_pre = torch.empty(len(top), rows, device=engine.model.device)
        p_post = torch.empty_like(p_pre)
        for layer in layers:
            rows_of = torch.as_tensor(where[layer], device=p_pre.device)
            p_pre[rows_of] = chunk[pre_sites[layer]][:, 0, index[layer]].float().T
            p_post[rows_of] = chunk[post_sites[layer]][:, 0, index[layer]].float().T
        pre.append(p_pre)
        post.append(p_post)
    pre_all, post_all = torch.cat(pre, 1), torch.cat(post, 1)
    best = post_all.max(1)
    return {"pre": to_numpy(pre_all), "post_max": to_numpy(best.values), "post_argmax": to_numpy(best.indices)}


def logit_lens(engine: PatchingEngine, top: pd.DataFrame, answer_tokens: np.ndarray) -> np.ndarray:
    """(W_U W_out[:, n]) over the answer tokens for each top neuron: [n_top, len(answer_tokens)].
    No final norm and no unembedding bias (App. F's Decision: the bias adds one fixed pattern
    to every neuron)."""
    hf, ad = engine.model.hf, engine.adapter
    W_U = hf.get_submodule(ad.unembed).weight[torch.as_tensor(answer_tokens, device=engine.model.device)]  # [A, d]
    top = top.reset_index(drop=True)
    lens = np.empty((len(top), len(answer_tokens)), dtype=np.float32)
    with torch.no_grad():
        for layer, part in top.groupby("layer", sort=False):
            w = ad.neuron_weights(hf, int(layer))[torch.as_tensor(part["neuron"].to_numpy())]  # [k, d]
            lens[part.index.to_numpy()] = to_numpy(w.float() @ W_U.float().T)
    return lens


def fit_evaluation(engine: PatchingEngine, prompts: Pairs, top: pd.DataFrame, fitted: torch.Tensor,
                   means: torch.Tensor, ks: Sequence[int], last: int) -> pd.DataFrame:
    """fig09: for each k, the top k neurons keep (a) their actual values (as in figD9) or (b)
    get their fitted preactivation N^(a, b) (then the model's own nonlinearity), every other
    neuron mean-ablated; ``fitted`` [n_prompts, n_top] holds N^ at each prompt's (a, b).
    Raw table with rows (k, preactivation, measure): "correct" (0/1) and "ld"
    (logit_unablated(answer) - logit(answer))."""
    sites = neuron_sites(engine.adapter, last)
    L, m = means.shape
    device = means.device
    per_layer = {}  # the fitted preactivations of every top neuron, laid out per layer [n, 1, d_mlp]
    for layer, part in top.reset_index(drop=True).groupby("layer"):
        values = torch.zeros(len(prompts), 1, m, device=device)
        values[:, 0, torch.as_tensor(part["neuron"].to_numpy(), device=device)] = \
            fitted[:, torch.as_tensor(part.index.to_numpy(), device=device)].to(device)
        per_layer[int(layer)] = values
    variants, labels = [], []
    for k in ks:
        keep = keep_masks(top, k, (L, m), device)
        variants.append(_ablation_variant(sites, keep, means))
        labels.append({"k": k, "preactivation": "actual"})
        fitted_patches = [Patch(Point("neuron_pre", layer, (last,)), values, where=keep[layer])
                          for layer, values in per_layer.items()]
        variants.append(fitted_patches + [Patch(p, means[p.layer][None, None], where=~keep[p.layer]) for p in sites])
        labels.append({"k": k, "preactivation": "fitted"})
    res = engine.run(prompts, variants, metric=answer_correct, desc="fit evaluation")
    unablated = prompts.clean_run.answer_logit(engine, prompts.clean_answer)
    return pd.concat([raw_table(res.metric, labels, measure="correct"),
                      raw_table(unablated[None] - res.answer_logit, labels, measure="ld")], ignore_index=True)


# -- the model jobs ---------------------------------------------------------------------------
def attribution_job(engine: PatchingEngine, accuracy: pd.DataFrame, template: str, last: int,
                    settings: NeuronSettings = NeuronSettings()) -> dict:
    """Attribution of every neuron, DE of the top neurons and the ablation sweep (figD9), plus
    the mean activations the ablations use.  Returns raw tables and ``means`` [L, d_mlp]."""
    tok, device = engine.model.tokenizer, engine.model.device
    correct = accuracy[accuracy["correct"]]
    pairs = draw_pairs(correct, settings.attribution_pairs, settings.seed, tok, template, ("a", "b"), device=device)
    scores = attribution_scores(engine, pairs, last)
    top = scores.iloc[:n_top(len(scores), settings.top_share)]
    sub = Pairs(*(x[:settings.de_pairs] for x in (pairs.clean, pairs.corrupted, pairs.clean_answer,
                                                  pairs.corrupted_answer)))
    de = neuron_direct_effects(engine, sub, top, last)
    means = mean_activations(engine, prompt_ids(tok, template, seeded_rows(accuracy, settings.mean_prompts,
                                                                          settings.seed), device), last)
    prompts = same_prompt_pairs(tok, seeded_rows(correct, settings.ablation_prompts, settings.seed), template, device)
    ablation = ablation_sweep(engine, prompts, scores, means, powers_of_two(len(scores)), last)
    return {"attribution": scores, "direct_effects": de, "ablation": ablation, "means": to_numpy(means)}


def grids_job(engine: PatchingEngine, accuracy: pd.DataFrame, template: str, last: int, top: pd.DataFrame
              ) -> dict[str, np.ndarray]:
    """N(a, b) of the top neurons over the 100 x 100 grid [n_top, 100, 100], their largest
    post-activation and its (a, b), and their logit lens over the answers 0..198."""
    grid = accuracy.sort_values(["a", "b"])
    if len(grid) != 10000 or grid["a"].max() != 99 or grid["b"].max() != 99:
        raise ValueError(f"the grids need every a+b prompt with a, b in 0..99; the accuracy table has {len(grid)}")
    out = neuron_grids(engine, prompt_ids(engine.model.tokenizer, template, grid, engine.model.device), top, last)
    answers = grid.drop_duplicates("answer").set_index("answer").loc[np.arange(199), "answer_token"].to_numpy()
    arg = out.pop("post_argmax")
    return {"pre": out["pre"].reshape(len(top), 100, 100), "post_max": out["post_max"],
            "max_a": grid["a"].to_numpy()[arg], "max_b": grid["b"].to_numpy()[arg],
            "lens": logit_lens(engine, top, answers), "layer": top["layer"].to_numpy(),
            "neuron": top["neuron"].to_numpy(), "rank": top["rank"].to_numpy()}


def fit_eval_job(engine: PatchingEngine, accuracy: pd.DataFrame, template: str, last: int, top: pd.DataFrame,
                 fitted_grids: np.ndarray, means: np.ndarray, settings: NeuronSettings = NeuronSettings()
                 ) -> pd.DataFrame:
    """fig09 on the ablation prompts: the fitted grids [n_top, 100, 100] read at each prompt."""
    device = engine.model.device
    rows = seeded_rows(accuracy[accuracy["correct"]], settings.ablation_prompts, settings.seed)
    prompts = same_prompt_pairs(engine.model.tokenizer, rows, template, device)
    fitted = torch.as_tensor(fitted_grids[:, rows["a"].to_numpy(), rows["b"].to_numpy()].T, dtype=torch.float32)
    return fit_evaluation(engine, prompts, top, fitted.to(device), torch.as_tensor(means, device=device),
                          powers_of_two(len(top)), last)


def save_grids(path, grids: dict[str, np.ndarray], model: str) -> None:
    """The grids job's arrays to HDF5: pre [n_top, 100, 100] (a, b), post_max, max_a, max_b,
    lens [n_top, 199], layer, neuron, rank."""
    import h5py

    with h5py.File(path, "w") as f:
        for key, value in grids.items():
            f.create_dataset(key, data=value, compression="gzip" if np.ndim(value) > 1 else None)
        f["pre"].attrs["axes"] = "neuron, a, b"
        f["pre"].attrs["what"] = "last-token preactivation (input of the MLP nonlinearity; gate in gated MLPs)"
        f["lens"].attrs["what"] = "W_U[answer 0..198] @ W_out[:, n]: no final norm, no unembedding bias"
        f.attrs["model"] = model

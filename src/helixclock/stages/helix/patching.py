"""Causal tests of the helix fits (sections 4.4-4.5, appendix C).

Following Engels et al., a fit is tested by patching it in: on the corrupted prompt a'+b,
the residual at the a token of layer l is replaced by the fit evaluated at the clean a, and
LD measures how much of the clean answer comes back.  Baselines: the clean residual itself
(layer patch), its first 2k+1 principal components (PCA), a circle (no linear term) and a
polynomial of degree 2k+1.  Every fit of every layer is one variant of a single batched
engine run; the results are raw per-pair tables (``helixclock.statistics``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ...bases import Basis, FitSettings, full_bases
from ...experiments import patch_sweep, stack_points
from ...fits import Fits, fit_token, subspace_projector
from ...models import several_tokens
from ...pairs import draw_pairs, prompt_rows, prompt_shapes
from ...patching import Patch, PatchingEngine, Point
from ...patching.runs import Pairs
from ...sampling import pairs_available, split_values
from ...statistics import raw_table
from ...tasks import check_task_tokens, get_task

log = logging.getLogger("helixclock")


def ablation_sweep(
    engine: PatchingEngine, pairs: Pairs, fits: Fits, basis: Basis, layers: Sequence[int], position: int
) -> pd.DataFrame:
    """Mean-ablate the helix subspace (span of C's directions) of h_a at each layer, versus
    mean-ablating h_a entirely; ``pairs`` must have corrupted == clean (``Pairs.same``), so
    LD is the change of the clean answer's logit.  Raw table."""
    C = fits.coefficients(basis)  # [L, m, d]
    variants, labels = [], []
    for layer in layers:
        mean = fits.pca.mean[layer].float()
        P = subspace_projector(C[layer].float())

        def helix_ablate(clean, cur, mean=mean, P=P):
            return cur - (cur - mean) @ P

        def full_ablate(clean, cur, mean=mean):
            return mean.expand_as(cur)

        point = Point("resid_pre", layer, (position,))
        variants += [[Patch(point, helix_ablate)], [Patch(point, full_ablate)]]
        labels += [
            {"layer": layer, "method": "helix subspace", "basis": basis.name},
            {"layer": layer, "method": "entire h_a", "basis": basis.name},
        ]
    return raw_table(engine.run(pairs, variants, desc="ablation").metric, labels)


def _control_has_pairs(
    correct: pd.DataFrame, vary: Sequence[str], control: str, clean_a=None, shape: Sequence | None = None
) -> bool:
    """Whether a control's own pairs can be drawn at all; a weak model's held-out a or its
    pairs a+b' may have none, and the control is then left out (with a warning), not the stage.
    ``shape``: the prompts' shapes (numbers of several tokens: partners share one)."""
    if pairs_available(correct, vary, clean_a, shape) > 0:
        return True
    log.warning(
        "control %r left out: no clean/corrupted pairs varying %s%s among %d correct prompts",
        control,
        ", ".join(vary),
        "" if clean_a is None else " with a held-out clean a",
        len(correct),
    )
    return False


def helix_stage(
    engine: PatchingEngine,
    correct: pd.DataFrame,
    cache,
    fits: Fits,
    template: str,
    settings: FitSettings | None = None,
    n_pairs: int = 100,
    seed: int = 0,
    test_fraction: float = 0.2,
) -> dict[str, pd.DataFrame]:
    """Everything of section 4.4 and appendix C that runs the model, for a+b (raw tables).

    sweep: every fit of every layer patched at the a token (Fig. 4 picks from it)
    controls: (1) one seeded split of a values, fitted on 80% and patched with the held-out
    20%; (2) a helix fitted to shuffled a, beside the layer patch and the helix; (3) helix(b)
    at the b token with pairs a+b' -> a+b
    ablation: the helix subspace mean-ablated from h_a vs h_a mean-ablated entirely
    """
    settings = settings or FitSettings()
    model = engine.model
    tok, device = model.tokenizer, model.device
    periods, n_components = settings.periods, settings.pca_components
    layers = list(range(int(cache.attrs["n_layers"])))
    several = several_tokens(model)
    # one-token numbers: the positions every prompt shares; several tokens: each layout's
    pos_a, pos_b = ("a", "b") if several else (int(cache.attrs["position_a"]), int(cache.attrs["position_b"]))
    H_a = torch.from_numpy(cache.a).transpose(0, 1).to(device)  # [L+1, n, d]
    a_vals, b_vals = cache.ab[:, 0], cache.ab[:, 1]
    pairs = draw_pairs(correct, n_pairs, seed, tok, template, ("a",), device=device, several=several)
    sweep = patch_sweep(engine, pairs, fits, layers, pos_a, pairs.meta["clean_a"])
    bases = full_bases(periods, compat=settings.compat)
    helix = bases[0]
    k = (len(periods),)

    train_a, test_a = split_values(a_vals, test_fraction, seed)
    rows = np.isin(a_vals, train_a)
    fits_train = fit_token(
        H_a[:, torch.as_tensor(np.flatnonzero(rows), device=device)], a_vals[rows], bases, n_components
    )
    split = pd.DataFrame()
    shape = prompt_shapes(tok, template, correct) if several else None
    if _control_has_pairs(correct, ("a",), "train/test split", test_a, shape):
        pairs_test = draw_pairs(
            correct, n_pairs, seed, tok, template, ("a",), clean_a=test_a, device=device, several=several
        )
        split = patch_sweep(
            engine,
            pairs_test,
            fits_train,
            layers,
            pos_a,
            pairs_test.meta["clean_a"],
            bases,
            pca_ks=k,
            desc="train/test control",
            control="train/test split",
            test_a=" ".join(map(str, test_a)),
        )

    perm = np.random.default_rng(seed + 1).permutation(int(a_vals.max()) + 1)
    fits_shuf = fit_token(H_a, perm[a_vals], [helix], n_components)
    shuffled = patch_sweep(
        engine,
        pairs,
        fits_shuf,
        layers,
        pos_a,
        perm[pairs.meta["clean_a"]],
        [helix],
        pca_ks=(),
        layer_patch=False,
        desc="shuffled control",
        control="shuffled a",
    )
    shuffled["method"] = "helix (shuffled a)"
    reference = sweep[
        (sweep["method"] == "layer")
        | ((sweep["method"] == "helix") & (sweep["periods"] == ",".join(map(str, periods))))
    ].copy()
    reference["control"] = "shuffled a"

    H_b = torch.from_numpy(cache.b).transpose(0, 1).to(device)
    bases_b = full_bases(periods, "b", settings.compat)
    fits_b = fit_token(H_b, {"b": b_vals}, bases_b, n_components, dedupe=False)
    b_token = pd.DataFrame()
    if _control_has_pairs(correct, ("b",), "b token", shape=shape):
        pairs_b = draw_pairs(correct, n_pairs, seed, tok, template, ("b",), device=device, several=several)
        b_token = patch_sweep(
            engine,
            pairs_b,
            fits_b,
            layers,
            pos_b,
            {"b": pairs_b.meta["clean_b"]},
            bases_b,
            pca_ks=k,
            desc="b-token control",
            control="b token",
        )

    ablation = ablation_sweep(engine, pairs.same(), fits, helix, layers, pos_a)
    controls = pd.concat([split, reference, shuffled, b_token], ignore_index=True)
    return {"sweep": sweep, "controls": controls, "ablation": ablation}


def other_tasks_stage(
    engine: PatchingEngine,
    frames: dict[str, pd.DataFrame],
    prompts: dict[str, str],
    settings: FitSettings | None = None,
    n_pairs: int = 100,
    seed: int = 0,
) -> pd.DataFrame:
    """Table 1: full helix, circle, polynomial and PCA fits patched at the a token, per task
    (raw table with a ``task`` column)."""
    settings = settings or FitSettings()
    model = engine.model
    layers = list(range(model.adapter.n_layers))
    k = len(settings.periods)
    out = []
    for task, acc in frames.items():
        correct = acc[acc["correct"]]
        if correct["answer"].nunique() < 2:
            raise ValueError(f"task {task!r}: fewer than two distinct correct answers; cannot draw pairs")
        several = several_tokens(model)
        pos = (
            "a"
            if several
            else check_task_tokens(
                model.tokenizer, model.name, get_task(task), prompts[task], answers=False
            ).positions.a
        )
        points = [Point("resid_pre", layer, (pos,)) for layer in layers]
        ids, groups, order = prompt_rows(model.tokenizer, prompts[task], correct, several=several)
        values, _ = engine.collect(ids, points, logits=False, desc=f"a-token residuals {task}", groups=groups)
        bases = full_bases(settings.periods, compat=settings.compat)
        a_values = correct["a"].to_numpy()[order]
        fits = fit_token(stack_points(values, points), a_values, bases, settings.pca_components)
        pairs = draw_pairs(
            correct, n_pairs, seed, model.tokenizer, prompts[task], ("a",), device=model.device, several=several
        )
        out.append(
            patch_sweep(
                engine,
                pairs,
                fits,
                layers,
                pos,
                pairs.meta["clean_a"],
                bases,
                pca_ks=(k,),
                desc=f"patching {task}",
                task=task,
            )
        )
    return pd.concat(out, ignore_index=True)

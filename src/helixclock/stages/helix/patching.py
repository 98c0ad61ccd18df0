"""Causal tests of the helix fits (sections 4.4-4.5, appendix C).

Following Engels et al., a fit is tested by patching it in: on the corrupted prompt a'+b,
the residual at the a token of layer l is replaced by the fit evaluated at the clean a, and
LD measures how much of the clean answer comes back.  Baselines: the clean residual itself
(layer patch), its first 2k+1 principal components (PCA), a circle (no linear term) and a
polynomial of degree 2k+1.  Every fit of every layer is one variant of a single batched
engine run; the results are raw per-pair tables (``helixclock.stats.statistics``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ...causal.experiments import answer_residuals, layer_grid, ld_table, patch_sweep, stack_points
from ...causal.pairs import Selection, job_pairs, model_pairs, pair_table, prompt_rows, ranking_draw
from ...fitting.bases import Basis, FitSettings, full_bases
from ...fitting.fits import Fits, fit_token, subspace_projector
from ...patching import Patch, PatchingEngine, Point
from ...patching.runs import Pairs
from ...project.cache import ResidualCache
from ...prompts.numbers import prompt_shapes
from ...prompts.sampling import pairs_available, split_values
from ...stats.statistics import PAIR, pair_columns
from .nested import causal_nested, causal_nested_first_difference, declared_sigma

log = logging.getLogger("helixclock")


def helix_ablation(
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
    return ld_table(engine.run(pairs, variants, desc="ablation"), pairs, labels)


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


@dataclass
class HelixControls:
    """What the three controls of Fig. C5 share: the model's engine, the correct a+b prompts
    and their template, the a token's residuals and the patching settings."""

    engine: PatchingEngine
    correct: pd.DataFrame
    template: str
    H_a: Tensor  # [L+1, n, d] the a token's cached residuals
    a_values: np.ndarray  # [n]
    layers: list[int]
    positions: tuple  # (a, b): shared integer positions, or the roles "a", "b"
    settings: FitSettings
    n_pairs: int
    seed: int
    shape: list | None  # the prompts' shapes (numbers of several tokens), else None

    def draw(self, vary: Sequence[str], clean_a=None) -> Pairs:
        return model_pairs(
            self.engine.model, self.correct, self.n_pairs, self.seed, self.template, vary, clean_a=clean_a
        )

    def sweep(self, pairs: Pairs, fits: Fits, values, bases, position, **kwargs) -> pd.DataFrame:
        return patch_sweep(self.engine, pairs, fits, self.layers, position, values, bases, **kwargs)


def train_test_control(c: HelixControls, bases: Sequence[Basis], test_fraction: float) -> pd.DataFrame:
    """Fig. C5 (1): one seeded split of the a values; the fits of the 80% patched into pairs
    whose clean a is among the held-out 20%."""
    train_a, test_a = split_values(c.a_values, test_fraction, c.seed)
    rows = torch.as_tensor(np.flatnonzero(np.isin(c.a_values, train_a)), device=c.H_a.device)
    fits_train = fit_token(c.H_a[:, rows], c.a_values[rows.cpu().numpy()], bases, c.settings.pca_components)
    if not _control_has_pairs(c.correct, ("a",), "train/test split", test_a, c.shape):
        return pd.DataFrame()
    pairs = c.draw(("a",), clean_a=test_a)
    return c.sweep(
        pairs,
        fits_train,
        pairs.meta["clean_a"],
        bases,
        c.positions[0],
        pca_ks=(len(c.settings.periods),),
        desc="train/test control",
        control="train/test split",
        test_a=" ".join(map(str, test_a)),
    )


def shuffled_control(c: HelixControls, pairs: Pairs, helix: Basis, sweep: pd.DataFrame) -> pd.DataFrame:
    """Fig. C5 (2): a helix fitted to a consistently relabelled (shuffled) a, beside the layer
    patch and the helix of the main sweep (``sweep``)."""
    perm = np.random.default_rng(c.seed + 1).permutation(int(c.a_values.max()) + 1)
    fits_shuf = fit_token(c.H_a, perm[c.a_values], [helix], c.settings.pca_components)
    shuffled = c.sweep(
        pairs,
        fits_shuf,
        perm[pairs.meta["clean_a"]],
        [helix],
        c.positions[0],
        pca_ks=(),
        layer_patch=False,
        desc="shuffled control",
        control="shuffled a",
    )
    shuffled["method"] = "helix (shuffled a)"
    full = ",".join(map(str, c.settings.periods))
    reference = sweep[(sweep["method"] == "layer") | ((sweep["method"] == "helix") & (sweep["periods"] == full))]
    return pd.concat([reference.assign(control="shuffled a"), shuffled], ignore_index=True)


def b_token_control(c: HelixControls, H_b: Tensor, b_values: np.ndarray) -> pd.DataFrame:
    """Fig. C5 (3): helix(b) fitted at the b token and patched into pairs a+b' -> a+b."""
    bases_b = full_bases(c.settings.periods, "b", c.settings.compat)
    fits_b = fit_token(H_b, {"b": b_values}, bases_b, c.settings.pca_components, dedupe=False)
    if not _control_has_pairs(c.correct, ("b",), "b token", shape=c.shape):
        return pd.DataFrame()
    pairs_b = c.draw(("b",))
    return c.sweep(
        pairs_b,
        fits_b,
        {"b": pairs_b.meta["clean_b"]},
        bases_b,
        c.positions[1],
        pca_ks=(len(c.settings.periods),),
        desc="b-token control",
        control="b token",
    )


def helix_patching(
    engine: PatchingEngine,
    correct: pd.DataFrame,
    cache: ResidualCache,
    fits: Fits,
    template: str,
    settings: FitSettings | None = None,
    n_pairs: int = 100,
    seed: int = 0,
    test_fraction: float = 0.2,
    layer_step: int = 1,
    period_subsets: bool = True,
    selection: Selection | None = None,
) -> dict[str, pd.DataFrame]:
    """Rule helix_patching: everything of section 4.4 and appendix C that runs the model, for
    a+b (raw tables).  Without ``period_subsets`` (registry key, a lever for slow models) the
    sweep patches what Fig. 4 and Table 1 plot, the fits with every period and the PCA of as
    many parameters, rather than every subset of the periods (Fig. 4 and Table 1 then have k = all only).

    sweep: every fit of every layer patched at the a token (Fig. 4 picks from it; every
    ``layer_step``-th layer and the last: :func:`helixclock.causal.experiments.layer_grid`)
    controls: (1) one seeded split of a values, fitted on 80% and patched with the held-out
    20%; (2) a helix fitted to shuffled a, beside the layer patch and the helix; (3) helix(b)
    at the b token with pairs a+b' -> a+b
    ablation: the helix subspace mean-ablated from h_a vs h_a mean-ablated entirely
    nested: the causal nested T = 100 test (:mod:`.nested`) on the measuring pairs at every layer of
    the sweep: held-out fits of the digits, the digits with the T = 100 circle and the digits with a
    placebo circle patched at a's last token (over a) and at the last prompt token (over a+b), and
    where answers take several tokens at the first differing token (over a+b, by stratum)
    sweep_selection: the helix (every period) patched at every layer on the job's selection draw
    (:func:`helixclock.causal.pairs.ranking_draw`, ``selection``), where Table 1's best layer is
    chosen (docs/findings.md, "Findings"); no rows where the choice stays on the measuring pairs
    pairs: the measuring pairs and the selection draw's (column ``draw``)
    """
    settings = settings or FitSettings()
    model = engine.model
    several = model.tokens.several
    positions = ("a", "b")  # roles of each pair's layout (one-token numbers: the positions every prompt shares)
    c = HelixControls(
        engine,
        correct,
        template,
        torch.from_numpy(cache.a).transpose(0, 1).to(model.device),
        cache.ab[:, 0],
        layer_grid(int(cache.attrs["n_layers"]), layer_step),
        positions,
        settings,
        n_pairs,
        seed,
        prompt_shapes(model.tokenizer, template, correct) if several else None,
    )
    pairs = c.draw(("a",))
    plotted = {} if period_subsets else {"bases": full_bases(settings.periods, compat=settings.compat)}
    if not period_subsets:
        plotted["pca_ks"] = (len(settings.periods),)
    sweep = patch_sweep(
        engine, pairs, fits, c.layers, positions[0], pairs.meta["clean_a"], references=several, **plotted
    )
    bases = full_bases(settings.periods, compat=settings.compat)
    split = train_test_control(c, bases, test_fraction)
    shuffled = shuffled_control(c, pairs, bases[0], sweep)
    H_b = torch.from_numpy(cache.b).transpose(0, 1).to(model.device)
    b_token = b_token_control(c, H_b, cache.ab[:, 1])
    ablation = helix_ablation(engine, pairs.same(), fits, bases[0], c.layers, positions[0])
    controls = pd.concat([split, shuffled, b_token], ignore_index=True)
    H_last = torch.from_numpy(cache.last).transpose(0, 1)  # on the host: only its means by a+b move
    residuals = {"a": (c.H_a, c.a_values), "last": (H_last, cache.ab.sum(1))}
    nested = causal_nested(engine, pairs, residuals, c.layers, declared_sigma(seed))
    if several:  # and at the first differing token, fitted at the answer positions, teacher-forced
        answer = answer_residuals(engine, correct, template, c.layers)
        at_p_star = causal_nested_first_difference(engine, pairs, answer, c.layers, declared_sigma(seed))
        nested = pd.concat([nested, at_p_star], ignore_index=True)
        nested = nested[[*(col for col in nested if not col.startswith(PAIR)), *pair_columns(nested)]]
    ranked = ranking_draw(model, correct, pairs, selection or Selection(n_pairs=0), seed, template, ("a",))
    chosen_on = best_layer_sweep(engine, ranked, fits, bases[0], c.layers, positions[0], sweep)
    tables = {
        "sweep": sweep,
        "controls": controls,
        "ablation": ablation,
        "nested": nested,
        "sweep_selection": chosen_on,
    }
    return {**tables, "pairs": job_pairs(pairs, ranked)}


def best_layer_sweep(
    engine: PatchingEngine, ranked: Pairs | None, fits: Fits, helix: Basis, layers, position, like: pd.DataFrame
) -> pd.DataFrame:
    """The helix ``helix`` patched at every layer of ``layers`` at ``position`` on the selection
    draw ``ranked`` (raw table, the sweep's label columns): what Table 1's best layer is chosen
    by.  ``ranked`` None: a table of the sweep's (``like``) label columns and no rows."""
    labels = [c for c in like.columns if not c.startswith("pair_")]
    if ranked is None:
        return pd.DataFrame(columns=labels)
    table = patch_sweep(
        engine,
        ranked,
        fits,
        layers,
        position,
        ranked.meta["clean_a"],
        [helix],
        pca_ks=(),
        layer_patch=False,
        desc="helix patching (selection draw)",
    )
    return table.reindex(columns=labels + [c for c in table.columns if c.startswith("pair_")])


def other_tasks_patching(
    engine: PatchingEngine,
    frames: dict[str, pd.DataFrame],
    prompts: dict[str, str],
    settings: FitSettings | None = None,
    n_pairs: int = 100,
    seed: int = 0,
    layer_step: int = 1,
) -> dict[str, pd.DataFrame]:
    """Rule other_tasks_patching, Table 1: full helix, circle, polynomial and PCA fits patched
    at the a token, per task (``raw``: a raw table with a ``task`` column), at every
    ``layer_step``-th layer and the last (fitted at every layer), and each task's pairs
    (``pairs``: :func:`~helixclock.causal.pairs.pair_table` with a ``task`` column)."""
    settings = settings or FitSettings()
    model = engine.model
    layers = list(range(model.adapter.n_layers))
    patched = layer_grid(model.adapter.n_layers, layer_step)
    k = len(settings.periods)
    out, drawn = [], []
    for task, acc in frames.items():
        correct = acc[acc["correct"]]
        if correct["answer"].nunique() < 2:
            raise ValueError(f"task {task!r}: fewer than two distinct correct answers; cannot draw pairs")
        pos = "a"  # the role: a's last token in each prompt's layout (one-token numbers: one layout)
        points = [Point("resid_pre", layer, (pos,)) for layer in layers]
        ids, groups, order = prompt_rows(model.tokenizer, prompts[task], correct, several=model.tokens.several)
        values, _ = engine.collect(ids, points, logits=False, desc=f"a-token residuals {task}", groups=groups)
        bases = full_bases(settings.periods, compat=settings.compat)
        a_values = correct["a"].to_numpy()[order]
        fits = fit_token(stack_points(values, points), a_values, bases, settings.pca_components)
        pairs = model_pairs(model, correct, n_pairs, seed, prompts[task], ("a",))
        drawn.append(pair_table(pairs).assign(task=task))
        out.append(
            patch_sweep(
                engine,
                pairs,
                fits,
                patched,
                pos,
                pairs.meta["clean_a"],
                bases,
                pca_ks=(k,),
                desc=f"patching {task}",
                references=model.tokens.several,
                task=task,
            )
        )
    return {"raw": pd.concat(out, ignore_index=True), "pairs": pd.concat(drawn, ignore_index=True)}

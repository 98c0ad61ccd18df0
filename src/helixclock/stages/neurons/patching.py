"""The neuron stage's settings and the parts its experiments share (section 5.4, appendix D.2):
how neurons are ranked by their attribution (:data:`RANKINGS`, :func:`rank_neurons`), the share
called "top" (:func:`n_top`), Fig. D9's sweep (:func:`sweep_counts`) and readings
(:data:`READINGS`), what a neuron's preactivation N(a, b) is (:func:`preactivation_kinds`), the
paper's logit lens (:func:`logit_lens`, App. F) and the ablations' raw table
(:func:`accuracy_and_ld`).  The experiments themselves, one implementation whatever the
tokenizer, are :mod:`.places`' (units by place; one-token numbers: the paper's neurons at the
last token), composed by the model jobs of :mod:`.jobs`.

A neuron is a hidden unit of a layer's MLP (at the last token, or at a position that predicts an
answer token): ``neuron_post`` is the input of the MLP output projection and ``neuron_pre`` the
input of the nonlinearity.  The paper studies
GPT-J's plain MLP, sigma(x W_up) W_down, and calls x W_up the preactivation: that is what Eq. 5
fits there, for the paper's reason that it is a linear read of the residual stream, which the
helices describe.  A gated MLP (Llama family) computes (act(x W_gate) * x W_up) W_down: its
hidden unit has two such linear reads.  What "the preactivation" is there is helixclock's
choice (:data:`GATED_PREACTIVATIONS`, config key ``neurons.gated_preactivation``):

* ``gate_and_up`` (default) - both inputs of the unit's nonlinearity: the gate and the up
  projection are each fitted with Eq. 5, and Fig. 9 patches both, the model's own
  act(gate) * up combining them (as GPT-J's fitted preactivation goes through its GELU).
  Figs. 8, D12, D13, 10 and the tables show the gate's fit (the up's NRMSE is in the table).
* ``gate`` - the gate alone; Fig. 9 then leaves the up projection live in the ablated run.
* ``product`` - act(gate) * up, what the down projection reads (not a linear read of the
  residual: products of helices have sum and difference frequencies Eq. 5 lacks).

Measured on toy-llama (docs/differences.md, "Differences from the authors' code"): Fig. 9 recovers 0.68 of
the actual accuracy with gate and up fitted, 0.29 with the gate alone, 0.23 with the product.
The paper analyses neurons in GPT-J only; the gated-MLP neuron analysis is helixclock's
extension.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...patching import Pairs, PatchingEngine, Point
from ...patching.metrics import answer_correct
from ...project.io import to_numpy
from ...stats.statistics import raw_table

# How neurons are ranked by their attribution scores a_n(pair) (``neurons.ranking``).  The paper
# (section 5.4) uses attribution patching to "approximate the total effect of each neuron" and
# then keeps the top 1%, mean-ablating the rest; it does not say how scores become a ranking.
# Mean ablation removes a neuron's contribution on every prompt whatever its sign, so what
# matters is the size of its effect, and the attribution-patching literature (Nanda 2023;
# Kramar et al. 2024, the paper's reference; Syed et al. 2023) ranks components by the
# magnitude of their estimated effect, never by its sign.  Ranked by sign, the neurons with
# large negative scores come last although they matter most when ablated (toy-gptj: accuracy
# 0.43 from 6% to 50% of the neurons kept).  Two magnitudes are defensible:
#   mean_abs - mean over pairs of |a_n|: the default.  The pairs have different answers, and a
#              Clock neuron raises the clean answer on some pairs and lowers it on others (its
#              effect follows a+b mod T), so its signed scores cancel in a mean although it
#              matters on every prompt; the mean size counts it.
#   abs_mean - |mean over pairs of a_n|: the size of the average effect (AtP's c(n) read as a
#              magnitude); blind to neurons whose effects cancel across pairs.
#   signed   - the mean itself, largest first (earlier versions): kept to measure the difference.
# The tables keep the signed mean as the neuron's attribution TE either way.
RANKINGS = ("mean_abs", "abs_mean", "signed")

# What a gated MLP's neuron "preactivation" is for section 5.4 (``neurons.gated_preactivation``;
# module docstring): the hook points fitted with Eq. 5 and patched in Fig. 9, the first one the
# N(a, b) that the figures and tables show.
GATED_PREACTIVATIONS = ("gate_and_up", "gate", "product")
_GATED_KINDS = {"gate_and_up": ("neuron_pre", "neuron_up"), "gate": ("neuron_pre",), "product": ("neuron_post",)}
_GATED_NAMES = {"gate_and_up": "gate preactivation", "gate": "gate preactivation", "product": "act(gate)·up"}

# figD9's two readings of "keep the top k and mean-ablate the rest": the kept neurons keep
# their values from the unablated run ("frozen", like Fig. 9's "actual"), or are computed live
# in the ablated run ("live", the stricter reading).
READINGS = ("frozen", "live")

# Fractions of all neurons the figD9 sweep always includes beside the powers of two.
SWEEP_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


@dataclass(frozen=True)
class NeuronSettings:
    """Pair and prompt counts of the neuron experiments, the share called "top", how neurons
    are ranked (:data:`RANKINGS`) and what a gated neuron's preactivation is
    (:data:`GATED_PREACTIVATIONS`)."""

    attribution_pairs: int = 1000
    de_pairs: int = 300
    ablation_prompts: int = 1000
    mean_prompts: int = 100
    top_share: float = 0.01
    seed: int = 0
    ranking: str = "mean_abs"
    gated_preactivation: str = "gate_and_up"

    def __post_init__(self):
        for key, allowed in (("ranking", RANKINGS), ("gated_preactivation", GATED_PREACTIVATIONS)):
            if getattr(self, key) not in allowed:
                raise ValueError(f"neurons.{key}={getattr(self, key)!r}; allowed: {', '.join(allowed)}")


def neuron_sites(adapter, position: int | str, kind: str = "neuron_post") -> list[Point]:
    """One point per layer covering all its neurons at ``position`` (a token position or a role)."""
    return [Point(kind, layer, (position,)) for layer in range(adapter.n_layers)]


def preactivation_kinds(adapter, choice: str = "gate_and_up") -> tuple[str, ...]:
    """The hook points fitted with Eq. 5 and patched with their fits in Fig. 9, the first being
    the N(a, b) the figures show: the input of the nonlinearity (``neuron_pre``) in a plain MLP;
    in a gated MLP, by ``choice``, the gate and the up projection (``neuron_pre``,
    ``neuron_up``), the gate alone, or act(gate) * up (``neuron_post``)."""
    if choice not in GATED_PREACTIVATIONS:
        raise ValueError(f"neurons.gated_preactivation={choice!r}; allowed: {', '.join(GATED_PREACTIVATIONS)}")
    return _GATED_KINDS[choice] if adapter.gated else ("neuron_pre",)


def preactivation_name(gated: bool, choice: str = "gate_and_up") -> str:
    """What the N(a, b) of the figures and tables is, in words for axes and column names."""
    return _GATED_NAMES[choice] if gated else "preactivation"


def fitted_name(gated: bool, choice: str = "gate_and_up") -> str:
    """What Fig. 9's fitted variant patches, in words."""
    if not gated:
        return "preactivation"
    return {
        "gate_and_up": "gate and up preactivations",
        "gate": "gate preactivation (up live)",
        "product": "act(gate)·up",
    }[choice]


def rank_neurons(scores: pd.DataFrame, ranking: str = "mean_abs") -> pd.DataFrame:
    """``scores`` (layer, neuron, attribution = signed mean over pairs, attribution_abs = mean
    of |attribution| over pairs) sorted by ``ranking`` (:data:`RANKINGS`), largest first, with
    ``effect`` (the ranked quantity) and ``rank`` (0 = first); ties keep the input order."""
    if ranking not in RANKINGS:
        raise ValueError(f"neurons.ranking={ranking!r}; allowed: {', '.join(RANKINGS)}")
    effect = {
        "mean_abs": scores["attribution_abs"],
        "abs_mean": scores["attribution"].abs(),
        "signed": scores["attribution"],
    }[ranking]
    df = scores.drop(columns=["rank", "effect"], errors="ignore").assign(effect=effect.to_numpy())
    df = df.sort_values("effect", ascending=False, kind="stable").reset_index(drop=True)
    df.insert(0, "rank", np.arange(len(df)))
    return df


def n_top(n_neurons: int, share: float) -> int:
    """The paper's "top 1%": int(share * all neurons), at least one."""
    return max(1, int(share * n_neurons))


def powers_of_two(n: int) -> list[int]:
    """1, 2, 4, ... below n, and n."""
    ks = [2**j for j in range(int(np.log2(max(n, 1))) + 1) if 2**j < n]
    return ks + [n]


def sweep_counts(n: int, fractions: Sequence[float] = SWEEP_FRACTIONS) -> list[int]:
    """figD9's k: the powers of two up to n and the counts nearest each fraction of n (at
    least 1), sorted, without repeats."""
    return sorted(set(powers_of_two(n)) | {max(1, int(round(f * n))) for f in fractions if 0 < f <= 1})


def logit_lens(engine: PatchingEngine, top: pd.DataFrame, answer_tokens: np.ndarray) -> np.ndarray:
    """(W_U W_out[:, n]) over the answer tokens for each top neuron: [n_top, len(answer_tokens)].
    No final norm and no unembedding bias (App. F; the authors skip the norm too; the bias would add one fixed pattern
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


def accuracy_and_ld(engine: PatchingEngine, prompts: Pairs, variants, labels: list[dict], desc: str) -> pd.DataFrame:
    """The ablation experiments' raw table (Figs. D9, 9): per variant (``labels``) and prompt of
    ``prompts`` (pairs whose corrupted prompt is the clean one), measure "correct" (0/1: greedy
    decoding's answer) and "ld" (the unablated answer's score, its logit or, for answers of
    several tokens, its log-likelihood, minus the ablated run's)."""
    res = engine.run(prompts, variants, metric=answer_correct, desc=desc)
    unablated = prompts.clean_run.answer_score()  # one-token answers: the answer's logit (metrics.answer_score)
    return pd.concat(
        [
            raw_table(res.metric, labels, measure="correct"),
            raw_table(unablated[None] - res.answer_logit, labels, measure="ld"),
        ],
        ignore_index=True,
    )

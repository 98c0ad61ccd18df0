"""Tables shaped as a real model's (SmolLM2-135M from `make real`), for the figures that only
break on one: 30 blocks of 9 heads, sweeps every 3rd layer, 11 circuit MLPs, Fig. 4's one k
(k = 4, every period), two readings (the last token and the answer positions: numbers of several
tokens), the long labels of the references, top-k curves that stop just short of their
threshold, 1,380 top neurons of which 629 have a negative direct effect, 2 of the 6 tasks of
Table 1 (4 left out for too few pairs).  Every value is planted from a seeded generator; what a
figure draws from them is checked by tests/unit/test_figures_real_shape.py.

``FIGURES`` maps each of the 13 figures to its plotting function (the one its rule names) and
its tables, in the order the rule passes them."""

from __future__ import annotations

import numpy as np
import pandas as pd

LAYERS, HEADS = 30, 9
SWEEP_LAYERS = [*range(0, LAYERS, 3), LAYERS - 1]  # layer_step: 3, and the last block
CIRCUIT = [0, 1, 2, 19, 20, 21, 22, 23, 24, 25, 29]
READINGS = ("last token", "answer positions")
PERIODS = "2, 5, 10, 100"
N_NEURONS, N_NEGATIVE = 1380, 629
PAIRS = 50


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _band(mean) -> dict:
    mean = np.asarray(mean, float)
    return {"ld_mean": mean, "ld_low": mean - 0.3, "ld_high": mean + 0.3, "n_pairs": PAIRS}


def helix_sweep() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 4's sweep and best fits: one k (4, every period), the layer patch of a's last token and
    of all its tokens, the clean LD; LD falls from about 6 to 0 over the layers."""
    layer = np.array(SWEEP_LAYERS)
    fall = 6.0 * np.clip(1 - layer / 20, 0, 1)
    parts = []
    for method, scale, k, periods in (
        ("layer", 1.0, np.nan, ""),
        ("layer_span", 1.1, np.nan, ""),
        ("clean", 0.0, np.nan, ""),
        ("pca", 0.8, 4, ""),
        ("helix", 0.7, 4, PERIODS),
        ("circle", 0.5, 4, PERIODS),
        ("poly", 0.4, 4, ""),
    ):
        mean = np.full(len(layer), 6.5) if method == "clean" else scale * fall
        parts.append(pd.DataFrame({"method": method, "k": k, "periods": periods, "layer": layer, **_band(mean)}))
    best = pd.DataFrame({"method": ["helix", "circle"], "k": [4, 4], "periods": [PERIODS, PERIODS]})
    sweep = pd.concat(parts, ignore_index=True)
    sweep.attrs["ld"] = "log-likelihood ratio"  # as helixclock.stats.statistics.primary reads a table of terms
    return sweep, best


def other_tasks() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. C7's curves of the 2 tasks the model runs, and the 4 Table 1 leaves out (fewer than
    10 pairs of correct prompts), as helix/other_tasks_left_out.csv has them."""
    sweep, _ = helix_sweep()
    curves = sweep[sweep["method"].isin(["layer", "layer_span", "clean", "pca", "helix", "circle", "poly"])]
    curves = pd.concat([curves.assign(task=t) for t in ("add", "sub23")], ignore_index=True)
    labels = {"div5": "a//5", "mul1p5": "a*1.5", "mod2": "a mod 2", "solve_x": "x-a=0, x="}
    left_out = pd.DataFrame(
        {
            "task": list(labels),
            "label": list(labels.values()),
            "prompts": 10_000,
            "correct": [6, 3, 9, 0],
            "what": "pairs",
            "found": [6, 3, 9, 0],  # pairs
            "minimum": 10,
            "source": "helix.n_pairs",
            "reason": "too few pairs",
        }
    )
    return curves, left_out


def _topk(n: int, peak_k: int, threshold: float, top: float, names=None) -> pd.DataFrame:
    """A top-k curve of ``n`` components (k = 0..n) rising to ``top`` (of its largest, at ``peak_k``) with a
    step at ``peak_k``, its smallest k for ``threshold`` as the tables compute it (the last k when
    the curve never reaches it)."""
    k = np.arange(0, n + 1)  # k = 0: nothing patched
    ld = 2.0 * (1 - np.exp(-k / 3)) + 0.4 * (k >= peak_k)
    ld = np.where(k > peak_k, ld[peak_k] - 0.01 * (k - peak_k), ld)
    df = pd.DataFrame({"k": k, **_band(ld)})
    df["max_effect"] = df["ld_mean"].max()
    df["fraction_of_max"] = df["ld_mean"] / df["max_effect"] * top
    df["all_effect"] = df["max_effect"] / 0.9
    df["fraction"] = df["ld_mean"] / df["all_effect"]
    df["threshold"] = threshold
    hit = df.loc[df["fraction_of_max"] >= threshold, "k"]
    df["smallest_k"] = int(hit.min()) if len(hit) else n
    hit = df.loc[df["fraction"] >= threshold, "k"]
    df["smallest_k_all"] = int(hit.min()) if len(hit) else n
    if names is not None:
        df["added"] = ["", *names[:n]]
    return df


def head_topk() -> pd.DataFrame:
    """Fig. D3: the top 20 heads of the screen, a reading each, reaching 80% of their largest
    effect at k = 5 or so."""
    return pd.concat(
        [
            _topk(20, 6, 0.8, 1.0).assign(reading="last token"),
            _topk(20, 7, 0.8, 1.0).assign(reading="answer positions"),
        ],
        ignore_index=True,
    )


def mlp_topk() -> pd.DataFrame:
    """Fig. D8: the 30 MLPs by TE, each point naming the MLP it adds; a plateau from k = 11."""
    order = [f"MLP{l}" for l in [*CIRCUIT[3:], *CIRCUIT[:3], *range(3, 19), 26, 27, 28]]
    return pd.concat([_topk(30, 11, 0.95, 1.0, order).assign(reading=r) for r in READINGS], ignore_index=True)


def mixed_heads() -> pd.DataFrame:
    """Fig. D5: m = 0..10 mixed heads; the curve peaks at 0.7995 (80% never reached), the tables'
    smallest_m falls back to the last m, 10."""
    m = np.arange(11)
    parts = []
    for reading, peak in zip(READINGS, (0.7995, 0.69)):
        fraction = peak * (0.7 + 0.3 * m / 10)
        df = pd.DataFrame({"m": m, **_band(fraction * 2.0)})
        df["all_effect"] = 2.0
        df["fraction"] = fraction
        df["threshold"] = 0.8
        df["m_used"] = 2
        df["smallest_m"] = 10
        parts.append(df.assign(reading=reading))
    return pd.concat(parts, ignore_index=True)


def head_effects() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. D4: the 20 heads of the attribution screen patched in each reading (of 270), with the
    fraction of their TE their helix fit keeps; the raw screen of every head."""
    rng = _rng(1)
    layer, head = np.divmod(np.arange(LAYERS * HEADS), HEADS)
    attribution = rng.normal(0, 1, len(layer))
    screened = np.zeros(len(layer), bool)
    screened[np.argsort(-np.abs(attribution))[:20]] = True
    screen = pd.DataFrame({"layer": layer, "head": head, "screened": screened, "pair_0": attribution})
    parts = []
    for reading in READINGS:
        te = attribution[screened] + rng.normal(0, 0.1, screened.sum())
        parts.append(
            pd.DataFrame(
                {
                    "layer": layer[screened],
                    "head": head[screened],
                    "te": te,
                    "de": te / 2,
                    "fit_all": te * rng.uniform(0.3, 1.0, len(te)),
                    "n_pairs": PAIRS,
                    "reading": reading,
                }
            )
        )
    return pd.concat(parts, ignore_index=True), screen


def head_categories() -> pd.DataFrame:
    """Fig. D6: the 10 top heads' categories, layers and attention (the digits' too), a reading each."""
    rng = _rng(2)
    rows = []
    for reading in READINGS:
        for i, category in enumerate(["a,b"] * 5 + ["a+b"] * 3 + ["mixed"] * 2):
            attn = rng.dirichlet([1, 1, 1, 1])
            rows.append(
                dict(
                    reading=reading,
                    category=category,
                    layer=int(rng.integers(0, LAYERS)),
                    head=f"L{i}H{i % HEADS}",
                    attn_last=attn[0],
                    attn_a=attn[1],
                    attn_b=attn[2],
                    attn_a_units=attn[1] / 2,
                    attn_a_tens=attn[1] / 2,
                    attn_b_units=attn[2] / 2,
                    attn_b_tens=attn[2] / 2,
                )
            )
    return pd.DataFrame(rows)


def mlp_stages() -> pd.DataFrame:
    """Fig. 7: the 11 circuit MLPs, a reading each, their helix(a+b)/TE and DE/TE."""
    rng = _rng(3)
    parts = [
        pd.DataFrame(
            {
                "layer": CIRCUIT,
                "helix_sum_over_te": rng.uniform(-0.2, 1.0, len(CIRCUIT)),
                "de_over_te": rng.uniform(-0.3, 1.0, len(CIRCUIT)),
                "n_pairs": PAIRS,
                "reading": reading,
            }
        )
        for reading in READINGS
    ]
    return pd.concat(parts, ignore_index=True)


def top_neurons() -> pd.DataFrame:
    """The 1,380 top neurons over the 30 layers (a third in the circuit MLPs' layers), 629 of them
    with a negative direct effect; their TE, DE, ranked effect sizes and a+b fractions (the
    circuit MLPs 22-25 at nearly one point, as SmolLM2's)."""
    rng = _rng(4)
    layer = np.r_[rng.choice(CIRCUIT, 460), rng.integers(0, LAYERS, N_NEURONS - 460)]
    de = np.abs(rng.lognormal(-3, 1, N_NEURONS))
    de[rng.choice(N_NEURONS, N_NEGATIVE, replace=False)] *= -0.9
    te = np.abs(de) * rng.uniform(1.2, 3.0, N_NEURONS)
    ab = np.clip(0.1 + layer / LAYERS * 0.6 + rng.normal(0, 0.02, N_NEURONS), 0, 1)
    ab = np.where(np.isin(layer, [22, 23, 24, 25]), 0.52 + 0.002 * (layer - 22), ab)
    return pd.DataFrame(
        {
            "rank": np.arange(N_NEURONS),
            "layer": layer,
            "neuron": rng.integers(0, 1536, N_NEURONS),
            "te": te,
            "de": de,
            "effect": te,
            "de_effect": np.abs(de) * np.where(np.isin(layer, [22, 23, 24, 25]), 0.3, 1.0),
            "ab_fraction": ab,
            "in_circuit": np.isin(layer, CIRCUIT),
            "n_pairs": 20,
        }
    )


def fit_eval() -> pd.DataFrame:
    """Fig. 9: accuracy with the top k neurons' actual values and their fits."""
    k = np.array([1, 3, 10, 30, 100, 300, 1000, 1380])
    actual = np.linspace(0.05, 0.6, len(k))
    return pd.DataFrame(
        {
            "k": k,
            "actual_accuracy": actual,
            "fitted_accuracy": actual * 0.7,
            "fitted_over_actual": 0.7,
            "n_prompts": 100,
            "quantity": "gate preactivation",
        }
    )


def digit_periods() -> pd.DataFrame:
    """Fig. F4 of numbers of several tokens: units of the 80% DE set by place and fitted period,
    whether their lens's period over the digits is the one T predicts, with the base rate."""
    rng = _rng(5)
    rows = []
    for place, periods in (("units", (2, 5, 10, 100)), ("tens", (10, 100))):
        for T in periods:
            predicted = {("units", 2): 2, ("units", 5): 5, ("units", 10): 10, ("tens", 100): 10}.get((place, T))
            for _ in range(int(rng.integers(3, 12))):
                rows.append(
                    dict(
                        place=place,
                        fitted_period=T,
                        predicted_period=np.nan if predicted is None else predicted,
                        matches=bool(rng.random() < 0.5) if predicted else False,
                        q=np.nan if predicted is None else 0.2,
                    )
                )
    return pd.DataFrame(rows)


def figures() -> dict[str, tuple[str, tuple]]:
    """The 13 figures: id -> ("module:function", its tables in the rule's order)."""
    from helixclock.stages.neurons.tables import cumulative_de

    neurons = top_neurons()
    stages = mlp_stages()
    effects, screen = head_effects()
    return {
        "fig04": ("helixclock.stages.helix.figures:fig04_helix_patching", helix_sweep()),
        "fig07": ("helixclock.stages.mlps.figures:fig07_mlp_stages", (stages,)),
        "fig09": ("helixclock.stages.neurons.figures:fig09_neuron_fit_eval", (fit_eval(),)),
        "fig10": ("helixclock.stages.neurons.figures:fig10_neuron_trends", (neurons, stages)),
        "figC7": ("helixclock.stages.helix.figures:figC7_other_tasks_patching", other_tasks()),
        "figD3": ("helixclock.stages.heads.figures:figD3_head_topk", (head_topk(),)),
        "figD4": ("helixclock.stages.heads.figures:figD4_head_helix_fit", (effects, screen)),
        "figD5": ("helixclock.stages.heads.figures:figD5_mixed_heads", (mixed_heads(),)),
        "figD6": ("helixclock.stages.heads.figures:figD6_head_categories", (head_categories(),)),
        "figD8": ("helixclock.stages.mlps.figures:figD8_mlp_topk", (mlp_topk(),)),
        "figD10": ("helixclock.stages.neurons.figures:figD10_neuron_layers", (neurons, stages)),
        "figD11": ("helixclock.stages.neurons.figures:figD11_neuron_direct_effect", (cumulative_de(neurons),)),
        "figF4": ("helixclock.stages.mistakes.figures:figF4_logit_lens_periods", (digit_periods(),)),
    }


def draw(name: str, model: str = "smollm2-135m"):
    """Figure ``name`` of :func:`figures`, drawn by its plotting function."""
    import importlib

    function, tables = figures()[name]
    module, fn = function.split(":")
    return getattr(importlib.import_module(module), fn)(*tables, model)

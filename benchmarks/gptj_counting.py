"""The formula check of benchmarks/paper_shape.py: every model job's library calls on a tiny
random-weight GPT-J, with hooks counting token-rows, unembedding rows, gradient rows and passes."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
from gptj_workload import (
    JOBS,
    PAPER_ACCURACY,
    Counts,
    Geometry,
    Shape,
    counts_from,
    fabricated_tables,
    geometry,
    path_counts,
    totals,
)
from transformers import GPTJConfig, GPTJForCausalLM

from helixclock.bases import FitSettings, standard_bases
from helixclock.cache import read_residual_cache
from helixclock.cache_writer import write_residual_cache
from helixclock.fits import fit_token, to_device
from helixclock.models import wrap_model
from helixclock.pairs import draw_pairs, prompt_ids
from helixclock.patching import PatchingEngine
from helixclock.sampling import seeded_rows
from helixclock.stages.accuracy.sweep import ANSWER_NUMBERS, task_accuracy
from helixclock.stages.heads.patching import HeadSettings, last_token_heads
from helixclock.stages.helix.patching import helix_patching, other_tasks_patching
from helixclock.stages.last_token.patching import last_token_curves, layer_effects
from helixclock.stages.mlps.patching import last_token_mlps
from helixclock.stages.neurons.fit import fit_neurons
from helixclock.stages.neurons.jobs import last_token_attribution, last_token_fit_eval, last_token_grids
from helixclock.stages.neurons.patching import NeuronSettings
from helixclock.stages.neurons.patching import n_top as top_count
from helixclock.tasks import check_all_tasks, check_task_tokens, get_task
from helixclock.toy import build_tokenizer


# -- counting on a tiny model ---------------------------------------------------------------------------
class Counter:
    """Token-rows through block 0 and the unembedding, rows with gradients, forward passes."""

    def __init__(self, hf):
        self.n = {"block_rows": 0, "unembed_rows": 0, "grad_rows": 0, "passes": 0}
        hf.transformer.h[0].register_forward_hook(self._block)
        hf.lm_head.register_forward_hook(self._unembed)
        self.t0 = time.perf_counter()

    def _block(self, module, args, out):
        h = out[0] if isinstance(out, tuple) else out
        rows = h.shape[0] * h.shape[1]
        self.n["block_rows"] += rows
        self.n["passes"] += 1
        if torch.is_grad_enabled() and h.requires_grad:
            self.n["grad_rows"] += rows

    def _unembed(self, module, args, out):
        self.n["unembed_rows"] += out.numel() // out.shape[-1]

    def take(self) -> dict:
        out = {**self.n, "seconds": time.perf_counter() - self.t0}
        self.n = dict.fromkeys(self.n, 0)
        self.t0 = time.perf_counter()
        return out


def tiny_config(cfg: dict) -> dict:
    """The config with counts small enough for a tiny model on the CPU in seconds."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in cfg.items()}
    out["helix"].update(n_pairs=10, pca_components=20)
    out["clock"].update(n_pairs=10, fit_prompts=60, pca_components=30)
    out["neurons"].update(attribution_pairs=40, de_pairs=12, ablation_prompts=24, mean_prompts=16, top_share=0.05)
    return out


def count_tiny(cfg: dict, entry: dict, batch: int, seed: int = 0) -> tuple[dict[str, dict], Shape, Geometry, Counts]:
    """Run every model job's library calls on a tiny random GPT-J; counts per job."""

    prompts, tasks = entry["prompts"], tuple(cfg["accuracy"]["tasks"])
    tok = build_tokenizer(prompts, 399, bos=False)
    shape = Shape(n_layers=3, n_heads=4, d_model=32, d_mlp=64, vocab=len(tok))
    torch.manual_seed(seed)
    hf = GPTJForCausalLM(
        GPTJConfig(
            vocab_size=shape.vocab,
            n_positions=64,
            n_embd=shape.d_model,
            n_layer=shape.n_layers,
            n_head=shape.n_heads,
            rotary_dim=4,
            n_inner=shape.d_mlp,
            bos_token_id=None,
            eos_token_id=None,
        )
    )
    model = wrap_model(hf.eval(), tok, name="tiny-gptj")
    name, template, device = model.name, prompts["add"], model.device
    geo = geometry(tok, prompts, tasks, cfg["cache"]["largest_bare_number"], name)
    helix, clock = cfg["helix"], cfg["clock"]
    fit = FitSettings(helix["periods"], helix["pca_components"], cfg.get("compat", "corrected"))
    neurons = NeuronSettings(
        **{
            k: cfg["neurons"][k]
            for k in ("attribution_pairs", "de_pairs", "ablation_prompts", "mean_prompts", "top_share")
        },
        seed=cfg["seed"],
    )
    positions = check_task_tokens(tok, name, get_task("add"), template, answers=False).positions.as_dict()
    last = positions["last"]
    counter = Counter(hf)
    engine = lambda: PatchingEngine(model, batch_size=batch, progress=False)  # noqa: E731  (one per job, as the scripts)
    got: dict[str, dict] = {}

    check_all_tasks(tok, name, prompts, tasks)
    eng = engine()
    counter.take()
    for t in tasks:
        task_accuracy(model, get_task(t), prompts[t], eng, keep=ANSWER_NUMBERS if t == "add" else None)
    got["accuracy"] = counter.take()
    tables = fabricated_tables(tok, tasks, PAPER_ACCURACY, seed)  # a random model gets nothing right
    acc = tables["add"]
    correct = acc[acc["correct"]]

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "residuals.h5"
        write_residual_cache(
            model,
            template,
            correct["a"].to_numpy(),
            correct["b"].to_numpy(),
            path,
            dtype="float32",
            largest_bare_number=cfg["cache"]["largest_bare_number"],
            engine=engine(),
        )
        got["residual_cache"] = counter.take()
        cache = read_residual_cache(path)
    H = torch.from_numpy(cache.a).transpose(0, 1)  # helix_fits, a CPU job
    fits = fit_token(H, cache.ab[:, 0], standard_bases(fit.periods, compat=fit.compat), fit.pca_components)

    counter.take()
    helix_patching(
        engine(),
        correct,
        cache,
        to_device(fits, device),
        template,
        fit,
        n_pairs=helix["n_pairs"],
        seed=cfg["seed"],
        test_fraction=helix["test_fraction"],
    )
    got["helix_patching"] = counter.take()
    other_tasks_patching(engine(), tables, prompts, fit, n_pairs=helix["n_pairs"], seed=cfg["seed"])
    got["other_tasks_patching"] = counter.take()

    def clock_pairs():
        return draw_pairs(correct, clock["n_pairs"], cfg["seed"], tok, template, tuple(clock["corrupt"]), device=device)

    eng = engine()
    pairs = clock_pairs()
    last_token_curves(eng, pairs, cache, fit.periods, clock["pca_components"])
    effects = layer_effects(eng, pairs)
    got["last_token_patching"] = counter.take()

    rows = seeded_rows(correct, clock["fit_prompts"], cfg["seed"])  # the fitted sample, as clock_job draws it
    ids, a, b = prompt_ids(tok, template, rows), rows["a"].to_numpy(), rows["b"].to_numpy()
    heads = last_token_heads(
        engine(),
        clock_pairs(),
        ids,
        a,
        b,
        positions,
        HeadSettings(clock["top_heads"], clock["mixed_heads"], fit.periods, fit.pca_components),
    )
    got["head_patching"] = counter.take()
    paths = heads["paths"]

    def role_layers(side):
        return tuple(int(h.split("H")[0][1:]) for h in paths[paths["analysis"] == side].drop_duplicates("role")["head"])

    observed = {
        "top_heads": len(heads["categories"]),
        "senders": role_layers("sender"),
        "receivers": role_layers("receiver"),
    }
    want = path_counts(shape, observed["senders"], observed["receivers"])[0]
    if want != len(paths):
        raise AssertionError(f"Fig. D7 paths: the formula says {want}, the job patched {len(paths)}")

    last_token_mlps(engine(), clock_pairs(), ids, a, b, last, effects, fit.periods, fit.pca_components)
    got["mlp_patching"] = counter.take()

    out = last_token_attribution(engine(), acc, template, last, neurons)
    got["neuron_attribution"] = counter.take()
    scores = out["attribution"]
    top = scores.iloc[: top_count(len(scores), neurons.top_share)]
    grids = last_token_grids(engine(), acc, template, last, top)
    got["neuron_grids"] = counter.take()
    nf = fit_neurons(grids["pre"], fit.periods, layer=grids["layer"], neuron=grids["neuron"])  # neuron_fits, CPU
    counter.take()
    last_token_fit_eval(
        engine(),
        acc,
        template,
        last,
        pd.DataFrame({"layer": nf.layer, "neuron": nf.neuron}),
        nf.predict(),
        out["means"],
        neurons,
    )
    got["neuron_fit_eval"] = counter.take()

    counts = counts_from(cfg, entry, tables, batch, **observed)
    return got, shape, geo, counts


def check_formulas(got: dict[str, dict], shape: Shape, geo: Geometry, counts: Counts) -> list[str]:
    """Each job's counted rows and passes against its formula; returns the mismatches."""
    bad = []
    for job, fn in JOBS.items():
        want = totals(fn(shape, geo, counts), shape, geo.prompts["add"].length)
        for key in ("block_rows", "unembed_rows", "grad_rows", "passes"):
            if want[key] != got[job][key]:
                bad.append(f"{job}: {key} counted {got[job][key]}, formula {want[key]}")
    return bad

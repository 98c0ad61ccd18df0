"""Every model job's library calls as its script makes them (:func:`run_jobs`), on any model,
with hooks counting token-rows through the blocks, rows through the unembedding, rows with a
backward pass and forward passes: the plan's counts (benchmarks/plan.py counts the paper's models
on narrow ones; benchmarks/gpu_probe.py times them on a GPU) and the tiny GPT-J whose counts
tests/unit/test_gpu_costs.py keeps in step with the committed plan."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from plan import (
    ADD_ACCURACY,
    PAPER_ACCURACY,
    SHAPES,
    Shape,
    fabricated_tables,
    gpt2_tokenizer,
    narrow,
    plan_config,
    random_model,
    read_config,
)
from transformers import GPTJConfig, GPTJForCausalLM

from helixclock.causal.pairs import Selection, draw_pairs, ranking_draw
from helixclock.fitting.bases import FitSettings, standard_bases
from helixclock.fitting.fits import fit_token, to_device
from helixclock.jobs.cache_writer import write_residual_cache
from helixclock.lm.models import wrap_model
from helixclock.lm.toy import build_tokenizer
from helixclock.patching import PatchingEngine
from helixclock.project.cache import read_residual_cache
from helixclock.prompts.sampling import seeded_rows
from helixclock.prompts.tasks import check_all_tasks, check_task_tokens, get_task
from helixclock.stages.accuracy.sweep import ANSWER_NUMBERS, task_accuracy
from helixclock.stages.heads.jobs import head_patching
from helixclock.stages.heads.patching import HeadSettings
from helixclock.stages.helix.patching import helix_patching, other_tasks_patching
from helixclock.stages.last_token.patching import best_block_sweep, last_token_curves, layer_effects
from helixclock.stages.mlps.patching import mlp_patching
from helixclock.stages.neurons.fit import fit_neurons
from helixclock.stages.neurons.jobs import neuron_attribution, neuron_fit_eval, neuron_grids
from helixclock.stages.neurons.patching import NeuronSettings


# -- counting on a tiny model ---------------------------------------------------------------------------
class Counter:
    """Token-rows through block 0 and the unembedding, rows with gradients, forward passes."""

    def __init__(self, hf, adapter=None):
        self.n = {"block_rows": 0, "unembed_rows": 0, "grad_rows": 0, "passes": 0}
        first, unembed = (adapter.block_path(0), adapter.unembed) if adapter else ("transformer.h.0", "lm_head")
        hf.get_submodule(first).register_forward_hook(self._block)
        hf.get_submodule(unembed).register_forward_hook(self._unembed)
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


@dataclass
class TinyRun:
    """A tiny random-weight GPT-J with the counter on it, and the config's settings as its jobs
    read them (what every counted job below shares)."""

    cfg: dict
    prompts: dict
    tok: Any
    shape: Shape
    model: Any
    counter: Counter
    batch: int
    fit: FitSettings
    neurons: NeuronSettings

    @property
    def template(self) -> str:
        return self.prompts["add"]

    def engine(self) -> PatchingEngine:
        """A new engine, as each job's script makes one."""
        return PatchingEngine(self.model, batch_size=self.batch, progress=False)


def tiny_gptj(prompts: dict, seed: int) -> tuple[Any, Any, Shape]:
    """The toy tokenizer of ``prompts``, a random-weight GPT-J on it (3 layers, 4 heads, d 32,
    MLP 64; weights seeded) and its shape."""
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
    return tok, hf, shape


def job_settings(cfg: dict) -> tuple[FitSettings, NeuronSettings]:
    """The helix fits' and the neuron stage's settings of ``cfg``."""
    helix = cfg["helix"]
    fit = FitSettings(helix["periods"], helix["pca_components"], cfg.get("compat", "corrected"))
    keys = ("attribution_pairs", "de_pairs", "ablation_prompts", "mean_prompts", "top_share")
    return fit, NeuronSettings(**{k: cfg["neurons"][k] for k in keys}, seed=cfg["seed"])


def count_accuracy(run: TinyRun, tasks: tuple[str, ...]) -> dict:
    """The accuracy sweep of every task (one engine for all, as the job)."""
    check_all_tasks(run.tok, run.model.name, run.prompts, tasks)
    eng = run.engine()
    run.counter.take()
    for t in tasks:
        task_accuracy(run.model, get_task(t), run.prompts[t], eng, keep=ANSWER_NUMBERS if t == "add" else None)
    return run.counter.take()


def count_cache(run: TinyRun, correct: pd.DataFrame) -> tuple[dict, Any]:
    """The residual cache of the correct a+b prompts, written and read back: its counts and the
    cache."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "residuals.h5"
        write_residual_cache(
            run.model,
            run.template,
            correct["a"].to_numpy(),
            correct["b"].to_numpy(),
            path,
            dtype="float32",
            largest_bare_number=run.cfg["cache"]["largest_bare_number"],
            engine=run.engine(),
        )
        counted = run.counter.take()
        return counted, read_residual_cache(path)


def helix_fits_of(run: TinyRun, cache):
    """The a token's helix fits as helix_fits makes them (a CPU job, not counted), on the
    model's device."""
    fit = run.fit
    H = torch.from_numpy(cache.a).transpose(0, 1).to(run.model.device)
    fits = fit_token(H, cache.ab[:, 0], standard_bases(fit.periods, compat=fit.compat), fit.pca_components)
    run.counter.take()
    return to_device(fits, run.model.device)


def count_helix_patching(run: TinyRun, correct: pd.DataFrame, cache, fits) -> dict:
    """helix_patching."""
    helix = run.cfg["helix"]
    helix_patching(
        run.engine(),
        correct,
        cache,
        fits,
        run.template,
        run.fit,
        n_pairs=helix["n_pairs"],
        seed=run.cfg["seed"],
        test_fraction=helix["test_fraction"],
        selection=selection(run),
    )
    return run.counter.take()


def selection(run: TinyRun) -> Selection:
    """The selection draw of the jobs that choose by a sweep (helix, last token): config keys
    compat and clock.selection_pairs, as the rules pass them."""
    return Selection(compat=run.cfg["compat"], n_pairs=run.cfg["clock"]["selection_pairs"])


def count_other_tasks(run: TinyRun, tables: dict) -> dict:
    """other_tasks_patching."""
    other_tasks_patching(
        run.engine(), tables, run.prompts, run.fit, n_pairs=run.cfg["helix"]["n_pairs"], seed=run.cfg["seed"]
    )
    return run.counter.take()


def clock_pairs(run: TinyRun, correct: pd.DataFrame):
    """The clock stages' pairs, drawn as their jobs draw them."""
    clock, seed, device = run.cfg["clock"], run.cfg["seed"], run.model.device
    return draw_pairs(correct, clock["n_pairs"], seed, run.tok, run.template, tuple(clock["corrupt"]), device=device)


def count_last_token(run: TinyRun, correct: pd.DataFrame, cache) -> tuple[dict, Any]:
    """last_token_patching (Fig. 5's curves and the layer effects, one engine): its counts and
    the layer effects the MLP job reads."""
    eng = run.engine()
    pairs = clock_pairs(run, correct)
    fits = last_token_curves(eng, pairs, cache, run.fit.periods, run.cfg["clock"]["pca_components"])
    effects = layer_effects(eng, pairs)
    clock = run.cfg["clock"]
    ranked = ranking_draw(run.model, correct, pairs, selection(run), run.cfg["seed"], run.template, clock["corrupt"])
    best_block_sweep(eng, ranked, 1, fits)
    return run.counter.take(), effects


def fitted_prompts(run: TinyRun, correct: pd.DataFrame) -> pd.DataFrame:
    """The prompts the heads' and MLPs' fits read, as clock_job draws them."""
    return seeded_rows(correct, run.cfg["clock"]["fit_prompts"], run.cfg["seed"])


def count_heads(run: TinyRun, correct: pd.DataFrame, sample: pd.DataFrame) -> dict:
    """head_patching."""
    clock, fit = run.cfg["clock"], run.fit
    settings = HeadSettings(clock["top_heads"], clock["mixed_heads"], fit.periods, fit.pca_components)
    head_patching(run.engine(), clock_pairs(run, correct), sample, run.template, settings)
    return run.counter.take()


def count_mlps(run: TinyRun, correct: pd.DataFrame, sample: pd.DataFrame, effects) -> dict:
    """mlp_patching at the last token."""
    fit = run.fit
    effects = effects.assign(reading="last token")  # Fig. 6's raw table as last_token_patching writes it
    mlp_patching(
        run.engine(), clock_pairs(run, correct), sample, run.template, effects, fit.periods, fit.pca_components
    )
    return run.counter.take()


def count_neurons(run: TinyRun, acc: pd.DataFrame, last: int, measure=lambda job, fn: fn()) -> dict[str, dict]:
    """neuron_attribution, neuron_grids of its top units, neuron_fits (a CPU job, not counted)
    and neuron_fit_eval, each through ``measure`` (:func:`run_jobs`); ``last`` is unused (the
    jobs read their units at the places of the model's answers: the last token here)."""
    got = {}
    neurons, template = run.neurons, run.template

    def attribution():
        out = neuron_attribution(run.engine(), acc, template, neurons)
        return run.counter.take(), out

    got["neuron_attribution"], out = measure("neuron_attribution", attribution)

    def grids_job():
        grids = neuron_grids(run.engine(), acc, template, out["attribution"], neurons)
        return run.counter.take(), grids

    got["neuron_grids"], grids = measure("neuron_grids", grids_job)
    ids = {"layer": grids["layer"], "neuron": grids["neuron"]}
    fits = [fit_neurons(grids[k], run.fit.periods, **ids) for k in ("pre", "up") if k in grids]  # gated: gate, up
    run.counter.take()
    fitted = pd.DataFrame(
        {"layer": fits[0].layer, "neuron": fits[0].neuron, "place": [p.decode() for p in grids["place"]]}
    ).assign(rank=grids["rank"])
    predicted = [f.predict() for f in fits]

    def fit_eval():
        neuron_fit_eval(run.engine(), acc, template, fitted, predicted, out["means"], neurons)
        return run.counter.take()

    got["neuron_fit_eval"] = measure("neuron_fit_eval", fit_eval)
    return got


def count_tiny(cfg: dict, entry: dict, batch: int, seed: int = 0, device: str = "cpu") -> dict[str, dict]:
    """Every model job's library calls on a tiny random GPT-J (on ``device``) at ``cfg``'s counts
    (:func:`tiny_config`), on accuracy tables fabricated at the paper's accuracies: counts per job."""
    prompts, tasks = entry["prompts"], tuple(cfg["accuracy"]["tasks"])
    tok, hf, shape = tiny_gptj(prompts, seed)
    model = wrap_model(hf.eval().to(device), tok, name="tiny-gptj")
    fit, neurons = job_settings(cfg)
    run = TinyRun(cfg, prompts, tok, shape, model, Counter(hf), batch, fit, neurons)
    tables = fabricated_tables(tok, tasks, PAPER_ACCURACY, seed)  # a random model gets nothing right
    return run_jobs(run, tables, lambda job, fn: fn())


def count_plan(name: str, cfg: dict, measure=None) -> dict[str, dict]:
    """Every model job's passes and rows for the paper's model ``name`` (gptj, pythia, llama) at
    ``cfg``'s counts, counted on its narrow model (plan.narrow) on the CPU; ``measure`` as
    :func:`run_jobs` takes it (default: count only)."""
    shape, family = SHAPES[name]
    small = narrow(shape)
    cfg = plan_config(cfg, shape, small)
    tok = gpt2_tokenizer()
    entry = read_config(name)[1]
    hf = random_model(small, family, torch.device("cpu"), torch.float32)
    model = wrap_model(hf, tok, name=f"narrow-{name}", family=family)
    fit, neurons = job_settings(cfg)
    run = TinyRun(cfg, entry["prompts"], tok, small, model, Counter(hf, model.adapter), cfg["batch_size"], fit, neurons)
    tasks = tuple(cfg["accuracy"]["tasks"])
    tables = fabricated_tables(tok, tasks, {**PAPER_ACCURACY, "add": ADD_ACCURACY[name]}, cfg["seed"])
    got = run_jobs(run, tables, measure or (lambda job, fn: fn()))
    keys = ("passes", "block_rows", "unembed_rows", "grad_rows")
    return {job: {k: int(c[k]) for k in keys} for job, c in got.items()}


# the model jobs in the order run_jobs runs them (the residual cache first: two jobs read it)
JOB_ORDER = (
    "residual_cache",
    "helix_patching",
    "neuron_attribution",
    "last_token_patching",
    "mlp_patching",
    "neuron_grids",
    "neuron_fit_eval",
    "accuracy",
    "other_tasks_patching",
    "head_patching",
)


def run_jobs(run: TinyRun, tables: dict, measure) -> dict[str, dict]:
    """Every model job's library calls on ``run``'s model, in :data:`JOB_ORDER`, each through
    ``measure(job, fn)`` (which calls ``fn`` and returns what it returns, or raises to stop the
    rest): each job's counts."""
    tasks = tuple(tables)
    positions = check_task_tokens(run.tok, run.model.name, get_task("add"), run.template, answers=False).positions
    last = positions.last
    acc = tables["add"]
    correct = acc[acc["correct"]]
    got: dict[str, dict] = {}
    got["residual_cache"], cache = measure("residual_cache", lambda: count_cache(run, correct))
    fits = helix_fits_of(run, cache)
    got["helix_patching"] = measure("helix_patching", lambda: count_helix_patching(run, correct, cache, fits))
    got |= count_neurons(run, acc, last, measure)
    got["last_token_patching"], effects = measure("last_token_patching", lambda: count_last_token(run, correct, cache))
    sample = fitted_prompts(run, correct)
    got["mlp_patching"] = measure("mlp_patching", lambda: count_mlps(run, correct, sample, effects))
    got["accuracy"] = measure("accuracy", lambda: count_accuracy(run, tasks))
    got["other_tasks_patching"] = measure("other_tasks_patching", lambda: count_other_tasks(run, tables))
    got["head_patching"] = measure("head_patching", lambda: count_heads(run, correct, sample))
    return got

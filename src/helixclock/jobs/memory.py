"""The memory a model job holds at its peak, summed from what is resident at once
(docs/memory.md; README, "Sending the DAG to a Slurm cluster"): :func:`job_peak_bytes` for the
GPU (weights, activations and what the job keeps there), and :mod:`helixclock.jobs.placement` turns it
into a job's ``gpu_mem_mb`` and, on the CPU where the same items live in host memory, ``mem_mb``.

Each job's items are read from its code (helixclock.stages, helixclock.patching.engine) as
functions of the model's :class:`Shape`, the batch and the config's counts (:class:`Work`):

* **a forward batch** (:func:`forward_bytes`): every layer's keys and values (transformers keeps
  a cache of the whole prompt, the shared prefix included, for ``B`` rows), and then the larger of
  the MLP's intermediates and the logits of the positions run (in the activations' dtype) with
  the last position's float32 copy, its clone and a comparison over the vocabulary;
* **a fit** (:func:`fit_bytes`, :func:`helixclock.fitting.fits.fit_token`): layers are fitted in chunks of
  at most 2^27 residual entries; a chunk's peak holds :data:`FIT_CHUNK_COPIES` float64 copies
  (the residuals in float64, centred and weighted, the SVD's copy of its input and U) beside the
  right singular vectors of every chunk so far (the PCA keeps a view of them);
* **the residual cache's tensors** a job moves to the device (helix_patching: the a and b
  tokens'; last_token_patching: the last token's), [correct prompts, layers + 1, d_model] float32;
* **collected values** a job stacks before fitting (head, MLP outputs of ``fit_prompts`` prompts);
* **the attribution's backward** (neuron_attribution, and head_patching's screen of every head):
  the activations a backward pass needs, :data:`SAVED_PER_TOKEN_LAYER` values of d_model and of
  d_mlp per token and layer, by MLP kind;
* **direct effects** (:func:`direct_bytes`, :func:`helixclock.patching.paths.direct_effects`): a
  chunk of components' writes unembedded at once, logits [chunk, pairs, positions, vocabulary];
* **neurons of a batch** (neuron_grids, neuron_fit_eval): every layer's pre- and post-activations.

Numbers of several tokens (``Work.several``: SmolLM2-135M, Gemma-3-270M) add what the code of
that path keeps: values at every position that predicts an answer token besides the last token
(:attr:`Work.positions`), the teacher-forced answer's tokens in every run (:attr:`Work.seq_tokens`),
a patching sweep's keys and values twice (``forward_bytes(sweep=True)``), the logits of the
answer positions alone and their gradient in an attribution, greedy decoding in the accuracy
job.  Calibrated on the host peaks of make real (benchmarks/measured/host_peaks_make_real.csv;
tests/unit/test_host_peaks.py) and, on the GPU, the H200's.

A job's peak is its resident items plus the largest of its phases: the items of one phase are
freed before the next (a batch's activations before a fit, a fit's chunk before the sweep).
Halving the batch (the engine's answer to CUDA out-of-memory) shrinks the forward and backward
items alone: :func:`job_peak_bytes` with ``work.batch`` halved says what it saves.

Imports nothing beyond the standard library: the DAG's build reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

FIT_ELEMENTS = 2**27  # helixclock.fitting.fits.fit_token's max_elements: residual entries a fit chunk holds
FIT_CHUNK_COPIES = 4  # float64 copies of a chunk at a fit's peak (H, X, the SVD's input, U)
# Values a backward pass keeps per token and layer, in units of d_model and d_mlp (activations'
# dtype), calibrated on the H200 (benchmarks/measured/gpu_probe_h200_*.jsonl): GPT-J's MLP
# (gelu_new's intermediates) and Llama's gated MLP with float32 norms.
SAVED_PER_TOKEN_LAYER = {False: (3, 4), True: (26, 4)}
WORKSPACE_BYTES = 50_000_000  # allocated beside the weights by the CUDA libraries (the toys' smallest jobs)


@dataclass(frozen=True)
class Shape:
    """A model's shape: layers, width, MLP width, key/value width (heads x head size; less with
    grouped-query attention), vocabulary, heads, whether the MLP is gated, the bytes of its
    activations (its dtype: 2 for bfloat16 and float16, 4 for float32) and the width of the
    heads' outputs (heads x head size, the attention output projection's input)."""

    n_layers: int
    d_model: int
    d_mlp: int
    kv_width: int
    vocab: int
    n_heads: int
    gated: bool
    act_bytes: int = 2
    head_width: int | None = None  # the heads' outputs' width, heads x head size (None: d_model; Gemma-3-270M: 4 x 256)

    @property
    def heads_width(self) -> int:
        return self.head_width or self.d_model


@dataclass(frozen=True)
class Work:
    """What a model job runs on, from the config and the accuracy tables: the batch; the a+b
    prompt's tokens, those every prompt shares (run once: the prefix) and the answer positions
    whose logits are read; the correct a+b prompts (the residual cache's rows) and the largest
    other task's; helix and clock pairs; the prompts the last-token fits read; the neuron stage's
    pairs and prompts; the top neurons; the layer grid's step of the sweeps (registry
    ``layer_step``); the heads head_patching screens in (``clock.head_screen``; 0: every head) and
    the pairs its attribution screen reads (None: the clock pairs, where it screens the measuring
    pairs)."""

    batch: int
    tokens: int
    prefix: int = 0
    answer: int = 1
    several: bool = False  # numbers of several tokens: logits of the answer positions alone
    add_rows: int = 10_000
    task_rows: int = 400
    helix_pairs: int = 100
    clock_pairs: int = 100
    fit_prompts: int = 2000
    attribution_pairs: int = 1000
    ablation_prompts: int = 1000
    top_neurons: int = 0
    helix_bases: int = 34
    helix_components: int = 100
    last_components: int = 500
    layer_step: int = 1
    head_screen: int = 0
    screen_pairs: int | None = None

    @property
    def run_tokens(self) -> int:
        """Tokens of the prompt a batch runs past the shared prefix (at least the answer's): what
        an attribution's backward pass keeps activations of (:func:`backward_bytes`)."""
        return max(self.answer, self.tokens - self.prefix)

    @property
    def seq_tokens(self) -> int:
        """Tokens of a row a forward pass holds keys and values of: the prompt's and, with numbers
        of several tokens, its teacher-forced answer's (the pairs' runs and the fitted prompts,
        :func:`helixclock.causal.pairs.forced_rows`, carry the answer's tokens after the prompt)."""
        return self.tokens + (self.answer if self.several else 0)

    @property
    def positions(self) -> int:
        """Positions a job reads a value at per prompt: the last token, and with numbers of several
        tokens every position that predicts an answer token (role "answer": :attr:`answer` of them)."""
        return self.answer if self.several else 1

    @property
    def fit_rows(self) -> int:
        """The prompts a head's or an MLP's output is fitted on: ``fit_prompts`` of the correct
        a+b prompts, all of them where fewer are correct (helixclock.prompts.sampling.seeded_rows)."""
        return min(self.fit_prompts, self.add_rows)

    @property
    def screen_rows(self) -> int:
        """The pairs head_patching's attribution screen reads (at most the correct prompts)."""
        return min(self.add_rows, self.clock_pairs if self.screen_pairs is None else self.screen_pairs)

    def grid_layers(self, n_layers: int) -> int:
        """Layers of the sweeps' grid (helixclock.causal.experiments.layer_grid): every
        ``layer_step``-th of ``n_layers`` and the last."""
        return len({*range(0, n_layers, max(1, self.layer_step)), n_layers - 1})


def forward_bytes(
    s: Shape, w: Work, rows: int | None = None, logits: bool = True, tokens: int | None = None, sweep: bool = False
) -> int:
    """One forward batch of ``rows`` (default the batch): every layer's keys and values of the
    whole prompt (:attr:`Work.seq_tokens`), then the larger of the MLP's intermediates and (with
    ``logits``) the logits of the positions run with the last one's float32 copy, clone and
    comparison; with numbers of several tokens the logits of the answer positions alone
    (``logits_to_keep``) and their float32 copy, none where the activations are float32 already
    (``Tensor.float`` returns the tensor itself).  ``sweep``: a batch of a patching sweep
    (:meth:`helixclock.patching.PatchingEngine.run`), which with numbers of several tokens starts at
    the first position it touches from the corrupted run's keys and values before it
    (``_Sweep._start``: concatenated per layer for the batch's rows), held beside the cache the
    forward grows from them: the keys and values twice."""
    rows = min(rows or w.batch, w.batch)
    tokens = tokens or w.seq_tokens
    run = max(w.answer, tokens - w.prefix)
    kv = 2 * s.n_layers * rows * tokens * s.kv_width * s.act_bytes
    if sweep and w.several:
        kv *= 2
    mlp = (3 if s.gated else 2) * rows * run * s.d_mlp * s.act_bytes
    if w.several:  # logits_to_keep: the answer's positions alone, and their float32 copy
        out = rows * w.answer * s.vocab * (s.act_bytes + (4 if s.act_bytes != 4 else 0))
    else:  # every position run; the last one's float32 copy, its clone and a comparison
        out = rows * run * s.vocab * s.act_bytes + 9 * rows * s.vocab
    out = out if logits else 0
    return kv + max(mlp, out)


def fit_bytes(rows: int, width: int, layers: int, bases: int, components: int) -> int:
    """:func:`helixclock.fitting.fits.fit_token` of ``layers`` x ``rows`` x ``width`` residuals without
    dedupe, ``bases`` fitted in ``components`` PCA dimensions: every chunk's right singular vectors
    so far (float64, ``min(rows, width) x width`` a layer) beside the larger of a chunk's SVD
    (:data:`FIT_CHUNK_COPIES` float64 copies of it) and its least squares (the projection P, and
    per basis its prediction, the residual and its square: 3 x bases + 1 copies of P)."""
    step = max(1, FIT_ELEMENTS // max(1, rows * width))
    layers_in_chunk = min(step, layers)
    p = min(components, width, rows)
    svd = FIT_CHUNK_COPIES * layers_in_chunk * rows * width * 8
    lstsq = (3 * bases + 1) * layers_in_chunk * rows * p * 8
    return max(svd, lstsq) + layers * min(rows, width) * width * 8


def cache_bytes(s: Shape, rows: int) -> int:
    """One dataset of the residual cache on the device: [rows, layers + 1, d_model] float32."""
    return rows * (s.n_layers + 1) * s.d_model * 4


def helix_fits_bytes(s: Shape, w: Work) -> int:
    """The a token's helix fits (helix_fits' file) on the device: C [bases, layers + 1, 10, d]
    float32, their PCA coefficients and components [layers + 1, components, d] float64."""
    L1 = s.n_layers + 1
    return w.helix_bases * L1 * 10 * (s.d_model * 4 + w.helix_components * 8) + L1 * w.helix_components * s.d_model * 8


DE_CHUNK = 64  # helixclock.patching.paths.direct_effects's chunk: components whose logits are made at once


def direct_bytes(s: Shape, w: Work, components: int) -> int:
    """The direct effects of ``components`` components on the clock pairs
    (:func:`helixclock.patching.paths.direct_effects`): a chunk of at most :data:`DE_CHUNK` of
    them at once, each pair's final residual with one component's write unembedded at every
    position read, logits [chunk, pairs, positions, vocabulary] (in the weights' dtype, and a
    float32 copy where that is not float32)."""
    chunk = min(DE_CHUNK, components)
    return chunk * w.clock_pairs * w.positions * s.vocab * (s.act_bytes + (4 if s.act_bytes != 4 else 0))


def backward_bytes(s: Shape, w: Work, rows: int) -> int:
    """One attribution batch (:func:`helixclock.patching.attribution.attribute`): the forward's
    keys, values and logits, the activations the backward pass needs (:data:`SAVED_PER_TOKEN_LAYER`)
    and the gradients at every layer's neurons; with numbers of several tokens also the gradient
    of the kept logits (float32, as large as they are: the metric is a log-likelihood over the
    vocabulary).  There a batch holds the pairs of one token layout alone (the engine never mixes
    layouts), whose rows also run the answer's tokens: counting every pair over the prompt's
    :attr:`Work.run_tokens` bounds both for the models here (SmolLM2-135M's 200 attribution pairs
    run in batches of at most 112, 8 prompt tokens and 3 of the answer)."""
    rows = min(rows, w.batch)
    per_d, per_m = SAVED_PER_TOKEN_LAYER[s.gated]
    saved = rows * w.run_tokens * s.n_layers * (per_d * s.d_model + per_m * s.d_mlp) * s.act_bytes
    grads = rows * w.run_tokens * s.n_layers * s.d_mlp * s.act_bytes
    logit_grads = rows * w.answer * s.vocab * 4 if w.several else 0
    return forward_bytes(s, w, rows) + saved + grads + logit_grads


def job_items(rule: str, s: Shape, w: Work) -> tuple[dict[str, int], dict[str, int]]:
    """(resident items, phases) of a model job in bytes, weights aside: the job's peak is the sum
    of the resident items and its largest phase.  With numbers of several tokens a job reads its
    values at :attr:`Work.positions` positions of a prompt (the last token and the answer's), its
    pairs and fitted prompts run with their answers (:attr:`Work.seq_tokens`), and its patching
    sweeps hold the keys and values twice (:func:`forward_bytes` with ``sweep``)."""
    L, L1, d, ab = s.n_layers, s.n_layers + 1, s.d_model, s.act_bytes
    fwd = forward_bytes(s, w)
    sweep = forward_bytes(s, w, sweep=True)
    if rule == "accuracy" and w.several:
        # greedy decoding (helixclock.stages.accuracy.greedy): the logits of one position a step
        # (logits_to_keep=1), the cache grown by the answer's tokens and two more
        greedy = forward_bytes(s, replace(w, answer=1), tokens=w.tokens + w.answer + 2)
        return {}, {"decoding batch": greedy}
    if rule in ("accuracy", "answer_scores", "model_card", "train_toy"):
        return {}, {"forward batch": fwd}
    if rule == "residual_cache":
        # each batch's residuals at a, b and the last token at every layer: clones, stacked, float32
        collected = min(w.batch, w.add_rows) * 3 * L1 * d * (2 * ab + 4)
        return {}, {"forward batch and its residuals": forward_bytes(s, w, logits=False) + collected}
    if rule == "helix_patching":
        resident = {"helix fits": helix_fits_bytes(s, w), "cache a and b": 2 * cache_bytes(s, w.add_rows)}
        return resident, {"b token's fit": fit_bytes(w.add_rows, d, L1, 3, w.helix_components), "sweep batch": sweep}
    if rule == "last_token_patching":
        resident = {"cache last": cache_bytes(s, w.add_rows)}
        return resident, {
            "last token's fit": fit_bytes(w.add_rows, d, L1, 3, w.last_components),
            "sweep batch": sweep,
            # Fig. 6's DE of the attention and MLP outputs of the layer grid (layer_effects)
            "direct effects": direct_bytes(s, w, 2 * w.grid_layers(L)),
        }
    if rule == "other_tasks_patching":
        # a task's a-token residuals at every layer, collected then stacked (its fits dedupe to the a values)
        collected = 2 * w.task_rows * L * d * ab
        return {}, {"a-token residuals and a sweep batch": collected + sweep}
    if rule == "mlp_patching":
        # helixclock.stages.mlps.patching.mlp_outputs: every MLP's output of the fitted prompts at
        # the last token and (several tokens) the answer's positions, the engine's values then
        # their float32 stack H, which mlp_patching keeps through its sweeps; the DE of the MLPs
        # Fig. 6's layer grid skipped (mlp_effects)
        values = w.fit_rows * L * d * ((1 + w.positions) if w.several else 1)
        phases = {
            "MLP outputs' collection": fwd + values * ab,
            "MLP outputs' fit": fit_bytes(w.fit_rows, d, L, 1, w.helix_components),
            "sweep batch": sweep,
        }
        if L > w.grid_layers(L):
            phases["direct effects"] = direct_bytes(s, w, L - w.grid_layers(L))
        return {"MLP outputs (kept)": values * 4}, phases
    if rule == "head_patching":
        # helixclock.stages.heads.readings.head_outputs: every head's output (heads x head size
        # wide) of the fitted prompts at each position read, collected, stacked and in float32,
        # fitted per head; the DE of the heads screened in (total_and_direct); the attribution
        # screen (choose_heads -> screen_heads: attribute over every head's output, a forward and
        # a backward pass of the screen's pairs, bounded as backward_bytes says)
        width = s.heads_width
        heads = L * s.n_heads
        collected = w.fit_rows * w.positions * L * width * (2 * ab + 4)
        fit = fit_bytes(w.fit_rows, width // s.n_heads, heads, 3, w.helix_components)
        return {}, {
            "heads' fit": collected + fit,
            "sweep batch": sweep,
            "direct effects": direct_bytes(s, w, min(heads, w.head_screen) if w.head_screen > 0 else heads),
            "attribution screen": backward_bytes(s, w, w.screen_rows),
        }
    if rule == "neuron_attribution":
        clean = w.attribution_pairs * L * s.d_mlp * ab  # the clean run's neurons at every layer
        return {"clean neurons": clean}, {"attribution batch": backward_bytes(s, w, w.attribution_pairs)}
    if rule in ("neuron_grids", "neuron_fit_eval"):
        # every layer's neurons of a batch at each position read: pre- (gate, up) and post-activation
        kinds = 3 if s.gated else 2
        neurons = kinds * w.batch * L * s.d_mlp * w.positions * ab
        if rule == "neuron_fit_eval":  # place_fit_evaluation: patching sweeps
            return {}, {"sweep batch and its neurons": sweep + neurons}
        # place_grids streams the batches (PatchingEngine.iter_collect): the previous batch's
        # neurons stay referenced (the loop's chunk, OOMRetry.iterate's result) while the next
        # is collected, in a forward that reads no logits
        return {}, {"forward batch and two batches' neurons": forward_bytes(s, w, logits=False) + 2 * neurons}
    raise ValueError(f"helixclock.jobs.memory has no items for rule {rule!r}")


def job_peak_bytes(rule: str, s: Shape, w: Work, weights: int) -> int:
    """A model job's peak: ``weights`` (bytes), its resident items and its largest phase."""
    resident, phases = job_items(rule, s, w)
    return weights + WORKSPACE_BYTES + sum(resident.values()) + max(phases.values(), default=0)


def halved(w: Work) -> Work:
    """``w`` with the batch halved (what the engine does on CUDA out-of-memory)."""
    return replace(w, batch=max(1, w.batch // 2))

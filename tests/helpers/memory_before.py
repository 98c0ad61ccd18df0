"""The items of helixclock.jobs.memory before issue 58's host-memory items (commit d490b13, the
functions as they were there): what tests/unit/test_host_peaks.py puts back in place of
:func:`helixclock.jobs.memory.job_items` to show its check fails on the jobs they under-declared
(SmolLM2-135M's mlp_patching, helix_patching and neuron_grids, Gemma-3-270M's head_patching).
Those before: a several-token forward's logits counted twice in float32, the keys and values of a
sweep once, values read at the last token alone, no direct effects' logits or attribution screen."""

from __future__ import annotations

from helixclock.jobs.memory import SAVED_PER_TOKEN_LAYER, Shape, Work, cache_bytes, fit_bytes, helix_fits_bytes


def forward_bytes(s: Shape, w: Work, rows: int | None = None, logits: bool = True, tokens: int | None = None) -> int:
    """One forward batch of ``rows`` (default the batch): every layer's keys and values of the
    whole prompt, then the larger of the MLP's intermediates and (with ``logits``) the logits of
    the positions run with the last one's float32 copy, clone and comparison."""
    rows = min(rows or w.batch, w.batch)
    tokens = tokens or w.tokens
    run = max(w.answer, tokens - w.prefix)
    kv = 2 * s.n_layers * rows * tokens * s.kv_width * s.act_bytes
    mlp = (3 if s.gated else 2) * rows * run * s.d_mlp * s.act_bytes
    if w.several:  # logits_to_keep: the answer's positions alone, and their float32 copy
        out = rows * w.answer * s.vocab * (s.act_bytes + 4)
    else:  # every position run; the last one's float32 copy, its clone and a comparison
        out = rows * run * s.vocab * s.act_bytes + 9 * rows * s.vocab
    out = out if logits else 0
    return kv + max(mlp, out)


def backward_bytes(s: Shape, w: Work, rows: int) -> int:
    """One attribution batch (:func:`helixclock.patching.attribution.attribute`): the forward's
    keys, values and logits, the activations the backward pass needs (:data:`SAVED_PER_TOKEN_LAYER`)
    and the gradients at every layer's neurons."""
    rows = min(rows, w.batch)
    per_d, per_m = SAVED_PER_TOKEN_LAYER[s.gated]
    saved = rows * w.run_tokens * s.n_layers * (per_d * s.d_model + per_m * s.d_mlp) * s.act_bytes
    grads = rows * w.run_tokens * s.n_layers * s.d_mlp * s.act_bytes
    return forward_bytes(s, w, rows) + saved + grads


def job_items(rule: str, s: Shape, w: Work) -> tuple[dict[str, int], dict[str, int]]:
    """(resident items, phases) of a model job in bytes, weights aside: the job's peak is the sum
    of the resident items and its largest phase."""
    L, L1, d, ab = s.n_layers, s.n_layers + 1, s.d_model, s.act_bytes
    fwd = forward_bytes(s, w)
    if rule in ("accuracy", "answer_scores", "model_card", "train_toy"):
        return {}, {"forward batch": fwd}
    if rule == "residual_cache":
        # each batch's residuals at a, b and the last token at every layer: clones, stacked, float32
        collected = min(w.batch, w.add_rows) * 3 * L1 * d * (2 * ab + 4)
        return {}, {"forward batch and its residuals": forward_bytes(s, w, logits=False) + collected}
    if rule == "helix_patching":
        resident = {"helix fits": helix_fits_bytes(s, w), "cache a and b": 2 * cache_bytes(s, w.add_rows)}
        return resident, {"b token's fit": fit_bytes(w.add_rows, d, L1, 3, w.helix_components), "sweep batch": fwd}
    if rule == "last_token_patching":
        resident = {"cache last": cache_bytes(s, w.add_rows)}
        return resident, {"last token's fit": fit_bytes(w.add_rows, d, L1, 3, w.last_components), "sweep batch": fwd}
    if rule == "other_tasks_patching":
        # a task's a-token residuals at every layer, collected then stacked (its fits dedupe to the a values)
        collected = 2 * w.task_rows * L * d * ab
        return {}, {"a-token residuals and a sweep batch": collected + fwd}
    if rule == "mlp_patching":
        # MLP outputs of the fitted prompts at every layer (activations' dtype, then float32), fitted
        collected = w.fit_prompts * L * d * (ab + 4)
        return {}, {
            "MLP outputs' fit": collected + fit_bytes(w.fit_prompts, d, L, 1, w.helix_components),
            "sweep batch": fwd,
        }
    if rule == "head_patching":
        # every head's output of the fitted prompts, collected, stacked and in float32, fitted per head
        d_head = d // s.n_heads
        collected = w.fit_prompts * L * d * (2 * ab + 4)
        fit = fit_bytes(w.fit_prompts, d_head, L * s.n_heads, 3, w.helix_components)
        return {}, {"heads' fit": collected + fit, "sweep batch": fwd}
    if rule == "neuron_attribution":
        clean = w.attribution_pairs * L * s.d_mlp * ab  # the clean run's neurons at every layer
        return {"clean neurons": clean}, {"attribution batch": backward_bytes(s, w, w.attribution_pairs)}
    if rule in ("neuron_grids", "neuron_fit_eval"):
        kinds = 3 if s.gated else 2  # every layer's neurons of a batch: pre- (gate, up) and post-activation
        return {}, {"forward batch and its neurons": fwd + kinds * w.batch * L * s.d_mlp * ab}
    raise ValueError(f"helixclock.jobs.memory has no items for rule {rule!r}")

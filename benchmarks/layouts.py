"""Numbers of several tokens: what token layouts cost the engine (docs/patching-engine.md, "The patching engine").

Workload: Fig. 4's layer sweep (layer patch, PCA, every helix, circle and polynomial fit at every
layer) of 100 pairs a'+b -> a+b on a random-weight Llama of the toy's shape whose tokenizer
splits numbers into digits, the pairs drawn as the pipeline draws them (every length class of
a and b, teacher-forced answers of one to three tokens).

* engine: the sweep on those pairs, G token layouts: batches never mix layouts and rows are
  stacked layout by layout, so a run of V variants on n pairs takes at most
  ceil(V * n / batch) + G - 1 patched forward passes.
* one layout: the same sweep on 100 pairs of a single layout (a and b of two digits, answers
  of two), the cost the sweep would have if every prompt had the same positions.

* position skip: a head sweep (Fig. D2: every head's output at the answer positions patched
  clean) on the mixed pairs, by the engine and by one that runs every position
  (``skip_positions=False``): a patch at the answer positions leaves the prompt before them as
  the corrupted run computed it, so the engine runs the answer positions only, attending to the
  corrupted run's keys and values (``position_skip_speedup``: the second's time over the first's).

Reported: the passes counted in the engine against that bound, and rows per second of each
(``throughput_ratio_vs_one_layout``), measured in the same run.  The last line is JSON.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from common import emit, timed
from transformers import LlamaConfig, LlamaForCausalLM

from helixclock.causal.experiments import fit_variants
from helixclock.causal.pairs import draw_pairs, prompt_rows
from helixclock.fitting.bases import standard_bases
from helixclock.fitting.fits import fit_token
from helixclock.lm.models import wrap_model
from helixclock.lm.toy import build_tokenizer
from helixclock.patching import Patch, PatchingEngine, Point

PROMPT = "Output ONLY a number.\n{a}+{b}="


def digit_model():

    tok = build_tokenizer({"add": PROMPT}, 9, bos=True, digits=True)
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    return wrap_model(LlamaForCausalLM(cfg).eval(), tok, name="random-digit-llama", number_tokens="several")


def sweep(model, correct: pd.DataFrame, n_pairs: int):
    """Pairs of ``correct`` and the layer sweep's variants at role "a"."""
    engine = PatchingEngine(model, progress=False)
    L = model.adapter.n_layers
    ids, groups, order = prompt_rows(model.tokenizer, PROMPT, correct, several=True)
    points = [Point("resid_pre", layer, ("a",)) for layer in range(L)]
    values, _ = engine.collect(ids, points, logits=False, groups=groups)
    H = torch.stack([values[p][:, 0] for p in points])
    fits = fit_token(H.float(), correct["a"].to_numpy()[order], standard_bases(), 50)
    pairs = draw_pairs(correct, n_pairs, 0, model.tokenizer, PROMPT, ("a",), several=True)
    variants, _ = fit_variants(fits, range(L), "a", pairs.meta["clean_a"])
    return pairs, variants


def measure(model, pairs, variants, batch: int) -> dict:
    engine = PatchingEngine(model, batch_size=batch, progress=False)
    passes = []
    trace = engine.trace
    engine.trace = lambda ids, *a, **k: passes.append(ids.shape[0]) or trace(ids, *a, **k)
    engine.run(pairs, variants)  # the unpatched runs, cached for the timings
    passes.clear()
    seconds = timed(lambda: engine.run(pairs, variants), model.device, repeats=2)
    rows = len(variants) * len(pairs)
    per_run = len(passes) // 3  # the warm-up and the two timed runs
    bound = -(-rows // batch) + len(pairs.groups) - 1
    return {"rows": rows, "layouts": len(pairs.groups), "passes": per_run, "pass_bound": bound,
            "rows_per_s": round(rows / seconds, 1)}  # fmt: skip


def position_skip(model, pairs, batch: int) -> dict:
    """The head sweep at the answer positions with and without the position skip (same results)."""
    ad = model.adapter
    variants = [
        [Patch(Point("head_out", layer, ("answer",), index=h))]
        for layer in range(ad.n_layers)
        for h in range(ad.n_heads)
    ]
    engines = {on: PatchingEngine(model, batch_size=batch, progress=False, skip_positions=on) for on in (True, False)}
    got = {on: e.run(pairs, variants).metric for on, e in engines.items()}  # warm-up: the unpatched runs
    assert torch.allclose(got[True], got[False], atol=1e-4, rtol=1e-4), (got[True] - got[False]).abs().max()
    seconds = {on: timed(lambda e=e: e.run(pairs, variants), model.device, repeats=2) for on, e in engines.items()}
    rows = len(variants) * len(pairs)
    return {"rows": rows, "rows_per_s": round(rows / seconds[True], 1),
            "rows_per_s_every_position": round(rows / seconds[False], 1),
            "position_skip_speedup": round(seconds[False] / seconds[True], 2)}  # fmt: skip


def main() -> None:
    model = digit_model()
    grid = pd.DataFrame([(a, b) for a in range(100) for b in range(100)], columns=["a", "b"])
    grid = grid.assign(answer=grid["a"] + grid["b"], answer_token=0, correct=True)
    mixed = grid.sample(2000, random_state=0)
    one = grid[(grid["a"] >= 10) & (grid["b"] >= 10) & (grid["answer"] < 100)]
    results = {}
    for name, rows in (("layouts", mixed), ("one_layout", one)):
        pairs, variants = sweep(model, rows, 100)
        results[name] = measure(model, pairs, variants, 512)
        print(name, results[name], flush=True)
    results["position_skip"] = position_skip(
        model, draw_pairs(mixed, 100, 0, model.tokenizer, PROMPT, ("a", "b"), several=True), 512
    )
    print("position_skip", results["position_skip"], flush=True)
    several, single = results["layouts"], results["one_layout"]
    assert several["passes"] <= several["pass_bound"], several
    emit({
        "benchmark": "layouts",
        "throughput_ratio_vs_one_layout": round(several["rows_per_s"] / single["rows_per_s"], 3),
        "passes_per_run": several["passes"], "pass_bound": several["pass_bound"],
        "passes_one_layout": single["passes"],
        "position_skip_speedup": results["position_skip"]["position_skip_speedup"], "cases": results,
    })  # fmt: skip


if __name__ == "__main__":
    np.random.seed(0)
    main()

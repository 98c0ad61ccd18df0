"""Attribution patching of every last-token neuron: the engine against a plain PyTorch
forward+backward of the same batch (the floor) and against activation patching of every
neuron, one variant each (what one does without a gradient path).

* engine: ``PatchingEngine.attribute`` over every layer's ``neuron_post`` at the last token,
  on a fresh pair set each time (its clean run included: one clean forward, then one
  corrupted forward with gradients and one backward per batch);
* floor: a plain forward of the corrupted prompts with the embeddings requiring gradients, the
  clean answer's logit summed, one backward (no clean run, no scores);
* per neuron: ``engine.run`` with one variant per neuron (its clean value patched in), timed
  on a subset of one layer's neurons and scaled to every neuron of every layer.

Cases: the toy model's shape on the CPU; GPT-J-6B's shape (random weights, fp16) on a GPU when
present.  The last line is JSON with ``throughput_ratio_vs_forward_backward`` (floor time /
engine time; target >= 0.7) and ``speedup_vs_per_neuron`` (target >= 10) per case.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from common import cases, emit, random_gptj, timed, toy_tokenizer

from helixclock.patching import Pairs, Patch, PatchingEngine, Point, attribute


def make_pairs(model, n_pairs: int, seed: int = 0) -> Pairs:
    tok, device = model.tokenizer, model.device
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 100, n_pairs), rng.integers(0, 100, n_pairs)
    a2, b2 = (a + rng.integers(1, 100, n_pairs)) % 100, (b + rng.integers(1, 100, n_pairs)) % 100
    text = lambda x, y: [f"Output ONLY a number.\n{i}+{j}=" for i, j in zip(x, y)]  # noqa: E731
    ids = lambda t: torch.tensor(tok(t)["input_ids"], device=device)  # noqa: E731
    ans = torch.tensor([tok.convert_tokens_to_ids(str(i + j)) for i, j in zip(a, b)], device=device)
    return Pairs(ids(text(a, b)), ids(text(a2, b2)), ans, ans)


def plain_forward_backward(model, pairs: Pairs) -> None:
    hf = model.hf
    with torch.enable_grad():
        embeds = hf.get_input_embeddings()(pairs.corrupted).detach().requires_grad_(True)
        logits = hf(inputs_embeds=embeds).logits[:, -1]
        logits.gather(1, pairs.clean_answer[:, None]).float().sum().backward()


def run_case(shape: str, device: torch.device, n_pairs: int, batch: int, subset: int) -> dict:
    model = random_gptj(shape, toy_tokenizer(), device)
    ad = model.adapter
    last = make_pairs(model, 1).clean.shape[1] - 1
    sites = [Point("neuron_post", layer, (last,)) for layer in range(ad.n_layers)]
    engine = PatchingEngine(model, batch_size=batch, progress=False)
    t_engine = timed(lambda: attribute(engine, make_pairs(model, n_pairs), sites), device)
    pairs = make_pairs(model, n_pairs)
    t_floor = timed(lambda: plain_forward_backward(model, pairs), device)
    one_layer = [[Patch(Point("neuron_post", 0, (last,), index=n))] for n in range(subset)]
    engine.run(pairs, one_layer[:1])  # the clean and corrupted runs, cached like the engine's own
    start = time.perf_counter()
    engine.run(pairs, one_layer)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t_subset = time.perf_counter() - start
    n_neurons = ad.n_layers * ad.d_mlp
    t_per_neuron = t_subset * n_neurons / subset
    return {
        "shape": shape,
        "device": str(device),
        "n_pairs": n_pairs,
        "n_layers": ad.n_layers,
        "d_mlp": ad.d_mlp,
        "neurons": n_neurons,
        "engine_s": round(t_engine, 4),
        "forward_backward_s": round(t_floor, 4),
        "per_neuron_s_scaled": round(t_per_neuron, 2),
        "per_neuron_subset": subset,
        "throughput_ratio_vs_forward_backward": round(t_floor / t_engine, 3),
        "speedup_vs_per_neuron": round(t_per_neuron / t_engine, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--subset", type=int, default=64, help="neurons patched one by one, then scaled")
    args = parser.parse_args()
    results = []
    for shape, device in cases():
        batch = 512 if device.type == "cpu" else 64
        res = run_case(shape, device, args.pairs if shape == "toy" else 32, batch, args.subset)
        print(res, flush=True)
        results.append(res)
        torch.cuda.empty_cache() if device.type == "cuda" else None
    emit({"benchmark": "attribution", "cases": results})


if __name__ == "__main__":
    main()

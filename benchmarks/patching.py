"""Patching throughput: the engine against a plain forward (the floor) and the usual loop.

Workloads:
* layer sweep (Fig. 4): at every layer, the a-token residual of 100 corrupted prompts a'+b
  replaced by the clean one and by each of 38 fits (helix, circle, polynomial, PCA) - that
  is 39 * n_layers patch variants of 100 pairs each;
* head sweep (Fig. D2): every head's output at the last token of a'+b' replaced by the
  clean one - n_layers * n_heads variants of 100 pairs each.

* engine: :class:`PatchingEngine`, every variant stacked along the batch; one clean and one
  corrupted run, reused; a batch starts at the first block its patches touch (the blocks
  before it are the corrupted run's), so the engine can beat the floor.
* engine, every block: the same with ``skip_blocks=False`` (each patched row runs the whole
  model, as before blocks were skipped): ``block_skip_speedup`` is its time over the engine's.
* floor: a plain batched forward pass of the same number of rows (no patching at all).
* naive: what such code usually looks like - one nnsight trace of the clean prompts and one
  patched trace per (layer, fit), LD read back with ``.item()`` each time.

Cases: the toy model's shape on the CPU; GPT-J-6B's shape (random weights, fp16) on a GPU
when present.  The last line is JSON with ``throughput_ratio_vs_forward`` (engine / floor)
and ``speedup_vs_naive`` (engine / naive) per case.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from common import cases, emit, random_gptj, timed, toy_tokenizer

from helixclock.causal.experiments import fit_variants
from helixclock.fitting.bases import standard_bases
from helixclock.fitting.fits import fit_token
from helixclock.patching import Pairs, Patch, PatchingEngine, Point

POS_A = 5


def workload(model, n_pairs: int, layers: list[int]):
    """Pairs, fits of the a-token residuals, and the sweep's variants."""
    tok, device = model.tokenizer, model.device
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 100, n_pairs), rng.integers(0, 100, n_pairs)
    a2 = (a + rng.integers(1, 100, n_pairs)) % 100
    text = lambda x, y: [f"Output ONLY a number.\n{i}+{j}=" for i, j in zip(x, y)]  # noqa: E731
    ids = lambda t: torch.tensor(tok(t)["input_ids"], device=device)  # noqa: E731
    ans = torch.tensor([tok.convert_tokens_to_ids(str(i + j)) for i, j in zip(a, b)], device=device)
    pairs = Pairs(ids(text(a, b)), ids(text(a2, b)), ans, ans)
    numbers = ids(text(np.arange(100), np.zeros(100, dtype=int)))
    engine = PatchingEngine(model, progress=False)
    pts = [Point("resid_pre", l, (POS_A,)) for l in layers]
    vals, _ = engine.collect(numbers, pts, logits=False)
    H = torch.stack([vals[p][:, 0] for p in pts])  # [layers, 100, d]
    fits = fit_token(H.float(), np.arange(100), standard_bases(), 100)
    variants, labels = fit_variants(fits, range(len(layers)), POS_A, a)
    # fit_variants indexes layers of the fits; point the patches at the model's layers
    for v in variants:
        p = v[0].point
        v[0].point = Point("resid_pre", layers[p.layer], p.positions)
    return pairs, variants


def head_workload(model, n_pairs: int):
    """Pairs a+b vs a'+b' and one variant per head (its clean output at the last token)."""
    tok, device, ad = model.tokenizer, model.device, model.adapter
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 100, n_pairs), rng.integers(0, 100, n_pairs)
    a2, b2 = (a + rng.integers(1, 100, n_pairs)) % 100, (b + rng.integers(1, 100, n_pairs)) % 100
    text = lambda x, y: [f"Output ONLY a number.\n{i}+{j}=" for i, j in zip(x, y)]  # noqa: E731
    ids = lambda t: torch.tensor(tok(t)["input_ids"], device=device)  # noqa: E731
    ans = torch.tensor([tok.convert_tokens_to_ids(str(i + j)) for i, j in zip(a, b)], device=device)
    pairs = Pairs(ids(text(a, b)), ids(text(a2, b2)), ans, ans)
    last = pairs.clean.shape[1] - 1
    variants = [[Patch(Point("head_out", l, (last,), index=h))] for l in range(ad.n_layers) for h in range(ad.n_heads)]
    return pairs, variants


def naive(model, pairs: Pairs, variants) -> float:
    """One clean trace and one patched trace per variant, LD summed with .item()."""
    lm, ad = model.lm, model.adapter
    total = 0.0
    with torch.no_grad():
        with lm.trace(pairs.corrupted):
            base = lm.lm_head.output[:, -1].save()
        base_ans = base.gather(1, pairs.clean_answer[:, None])[:, 0]
        for variant in variants:
            patch = variant[0]
            point = patch.point
            layer = point.layer
            pos = point.positions[0]
            if point.kind == "head_out":  # the head's slice of the output projection's input
                proj = lm.transformer.h[layer].attn.out_proj
                sl = slice(point.index * ad.d_head, (point.index + 1) * ad.d_head)
                with lm.trace(pairs.clean):
                    clean = proj.input[:, pos, sl].save()
                with lm.trace(pairs.corrupted):
                    x = proj.input.clone()
                    x[:, pos, sl] = clean
                    proj.input = x
                    out = lm.lm_head.output[:, -1].save()
            else:
                block = lm.transformer.h[layer]
                with lm.trace(pairs.clean):
                    clean = block.input[:, pos].save()
                if isinstance(patch.value, torch.Tensor):
                    value = patch.value[:, 0]
                elif callable(patch.value):
                    value = patch.value(clean[:, None], None)[:, 0]
                else:
                    value = clean
                with lm.trace(pairs.corrupted):
                    h = block.input.clone()
                    h[:, pos] = value
                    block.input = h
                    out = lm.lm_head.output[:, -1].save()
            total += (out.gather(1, pairs.clean_answer[:, None])[:, 0] - base_ans).mean().item()
    return total


def run_case(
    shape: str, device: torch.device, n_pairs: int, batch: int, n_layers: int | None, sweep: str = "layers", model=None
) -> dict:
    tok = toy_tokenizer()
    model = model or random_gptj(shape, tok, device)
    L = model.adapter.n_layers
    if sweep == "layers":
        layers = list(range(L)) if n_layers is None else list(np.linspace(0, L - 1, n_layers).round().astype(int))
        pairs, variants = workload(model, n_pairs, layers)
    else:
        layers = list(range(L))
        pairs, variants = head_workload(model, n_pairs)
    rows = len(variants) * n_pairs
    big = pairs.corrupted.repeat(len(variants), 1)

    def floor():
        with torch.no_grad():
            for i in range(0, rows, batch):
                model.hf(big[i : i + batch])

    def engine(skip_blocks: bool = True):
        fresh = Pairs(pairs.clean, pairs.corrupted, pairs.clean_answer, pairs.corrupted_answer)
        eng = PatchingEngine(model, batch_size=batch, progress=False, skip_blocks=skip_blocks)
        return eng.run(fresh, variants).metric

    skipped, whole = engine(), engine(skip_blocks=False)
    assert torch.allclose(skipped, whole, atol=1e-3, rtol=1e-3), (skipped - whole).abs().max()
    t_floor = timed(floor, device, repeats=2)
    t_engine = timed(engine, device, repeats=2)
    t_whole = timed(lambda: engine(skip_blocks=False), device, repeats=2)
    sub = variants[:: max(1, len(variants) // 40)]  # the naive loop on a subset, scaled up
    t_naive = timed(lambda: naive(model, pairs, sub), device, repeats=1) * len(variants) / len(sub)
    return {
        "case": shape,
        "sweep": sweep,
        "device": str(device),
        "layers": len(layers),
        "variants": len(variants),
        "pairs": n_pairs,
        "batch_size": batch,
        "engine_pairs_per_s": round(rows / t_engine, 1),
        "forward_pairs_per_s": round(rows / t_floor, 1),
        "naive_pairs_per_s": round(rows / t_naive, 1),
        "throughput_ratio_vs_forward": round(t_floor / t_engine, 3),
        "speedup_vs_naive": round(t_naive / t_engine, 2),
        "block_skip_speedup": round(t_whole / t_engine, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--gpu-layers", type=int, default=8, help="layers swept on the GPU case")
    args = parser.parse_args()
    results = {}
    for shape, device in cases():
        model = random_gptj(shape, toy_tokenizer(), device)
        for sweep in ("layers", "heads"):
            r = run_case(
                shape,
                device,
                args.pairs,
                args.batch_size if shape == "toy" else 1024,
                None if shape == "toy" else args.gpu_layers,
                sweep,
                model,
            )
            print(
                f"{shape} {sweep} sweep on {device}: engine {r['engine_pairs_per_s']} pairs/s, floor "
                f"{r['forward_pairs_per_s']}, naive {r['naive_pairs_per_s']}; ratio "
                f"{r['throughput_ratio_vs_forward']}, speedup {r['speedup_vs_naive']}, every block run "
                f"{r['block_skip_speedup']}x slower",
                flush=True,
            )
            results[f"{shape}_{sweep}"] = r
        del model
    main = results.get("gptj-6b_layers", results["toy_layers"])
    emit(
        {
            "benchmark": "patching",
            "main_case": main["case"] + "_layers",
            "throughput_ratio_vs_forward": main["throughput_ratio_vs_forward"],
            "speedup_vs_naive": main["speedup_vs_naive"],
            **{
                f"{k}_{m}": v[m]
                for k, v in results.items()
                for m in ("throughput_ratio_vs_forward", "speedup_vs_naive", "block_skip_speedup")
            },
            "cases": results,
        }
    )


if __name__ == "__main__":
    main()

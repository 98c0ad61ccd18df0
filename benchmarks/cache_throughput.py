"""Residual caching throughput against a plain batched forward pass (one run, same batch).

The cache stage runs every correct a+b prompt once, reads resid_pre at the a, b and last
tokens of every layer, moves them to the CPU and writes them to HDF5.  The floor is a
plain batched forward of the same model on the same prompts with the same batch size.
Cases: the toy model's shape on the CPU; GPT-J-6B's full shape (random weights, fp16) on
a GPU when one is present.  The last line is JSON with the figures.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from common import add_prompts, cases, emit, random_gptj, timed, toy_tokenizer

from helixclock.jobs.cache_writer import write_residual_cache
from helixclock.patching import PatchingEngine


def run_case(shape: str, device: torch.device, n: int, batch: int) -> dict:
    tok = toy_tokenizer()
    model = random_gptj(shape, tok, device)
    ids = add_prompts(tok, n).to(device)
    a = np.repeat(np.arange(100), 100)[:n]
    b = np.tile(np.arange(100), 100)[:n]
    engine = PatchingEngine(model, batch_size=batch, progress=False)

    def forward():
        with torch.no_grad():
            for i in range(0, n, batch):
                model.hf(ids[i : i + batch])

    with tempfile.TemporaryDirectory() as tmp:

        def cache():
            write_residual_cache(
                model,
                "Output ONLY a number.\n{a}+{b}=",
                a,
                b,
                Path(tmp) / "r.h5",
                dtype="float16" if device.type == "cuda" else "float32",
                largest_bare_number=0,
                engine=engine,
            )

        t_fwd = timed(forward, device)
        t_cache = timed(cache, device)
    return {
        "case": shape,
        "device": str(device),
        "prompts": n,
        "batch_size": batch,
        "forward_prompts_per_s": round(n / t_fwd, 1),
        "cache_prompts_per_s": round(n / t_cache, 1),
        "throughput_ratio_vs_forward": round(t_fwd / t_cache, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=512)
    args = parser.parse_args()
    results = {}
    for shape, device in cases():
        n = args.prompts if shape == "toy" else min(args.prompts, 2048)
        r = run_case(shape, device, n, args.batch_size if shape == "toy" else 128)
        print(
            f"{shape} on {device}: forward {r['forward_prompts_per_s']} prompts/s, cache "
            f"{r['cache_prompts_per_s']} prompts/s, ratio {r['throughput_ratio_vs_forward']}"
        )
        results[shape] = r
    ratios = {f"{k}_ratio": v["throughput_ratio_vs_forward"] for k, v in results.items()}
    emit({"benchmark": "cache_throughput", **ratios, "cases": results})


if __name__ == "__main__":
    main()

"""What the reading at the first differing token costs (issue 46 item 1): on SmolLM2-135M (the
registry's GGUF, installed from its Python package), 50 a+b pairs drawn as the clock stages draw
them (every prompt taken as correct: the cost does not depend on the answers being right), the
time of one patched variant at the last prompt token (the paper's reading, whole rows) against one
at p* (the pairs cut after p*), and the unpatched runs of the cut pairs (clean, corrupted, the
corrupted run's residuals and keys and values), each on a fresh engine.

The variants each job adds at p* (registry layer_step 3: 30 blocks): last_token_patching Fig. 6
22 (attention and MLP of 11 blocks) and Fig. 5 66 (6 fits and baselines at 11 layers);
head_patching 40 (TE and helix(a,b,a+b) of 20 screened heads); mlp_patching 49 (TE of the 19 MLPs
Fig. 6's grid skips, helix(a+b) of 30).  The last line is JSON: seconds per variant at each
reading, the cut pairs' unpatched runs, and the estimate per job.
"""

from __future__ import annotations

import json
import tempfile
import time

import numpy as np
import pandas as pd
import torch

from helixclock.causal.experiments import total_and_direct
from helixclock.causal.first_difference import first_difference_pairs
from helixclock.causal.pairs import draw_pairs
from helixclock.lm.config import REPO, load_registry
from helixclock.lm.models import install_gguf, load_model
from helixclock.patching import PatchingEngine, Point

ADDED = {"last_token_patching": 22 + 66, "head_patching": 40, "mlp_patching": 49}


def pairs_of(model, template: str, n: int = 50, seed: int = 0):
    a, b = np.meshgrid(np.arange(100), np.arange(100))
    correct = pd.DataFrame({"a": a.ravel(), "b": b.ravel()}).assign(answer=lambda d: d["a"] + d["b"], answer_token=0)
    return draw_pairs(correct, n, seed, model.tokenizer, template, ("a",), device=model.device, several=True, end="\n")


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    torch.set_num_threads(2)
    spec = load_registry(REPO / "config/models.yaml")["smollm2-135m"]
    with tempfile.TemporaryDirectory() as resources:
        install_gguf("smollm2-135m", spec, f"{resources}/smollm2-135m")
        model = load_model("smollm2-135m", spec, device="cpu", resources=resources)
        heads = [Point("head_out", layer, ("last",), index=0) for layer in range(10, 30)]  # 20 heads

        def te_de(pairs_fn):
            engine = PatchingEngine(model, progress=False)
            pairs = pairs_fn()
            engine.corrupted_values(pairs, [])  # the unpatched runs apart
            engine.clean_values(pairs, [])
            return seconds(lambda: total_and_direct(engine, pairs, heads))

        def cut():
            return first_difference_pairs(pairs_of(model, spec["prompts"]["add"])).pairs

        def unpatched() -> float:
            engine = PatchingEngine(model, progress=False)
            pairs = cut()
            point = [Point("head_out", layer, ("last",)) for layer in range(30)]
            return seconds(lambda: (engine.clean_values(pairs, point), engine.corrupted_values(pairs, point)))

        last = min(te_de(lambda: pairs_of(model, spec["prompts"]["add"])) for _ in range(2)) / len(heads)
        at = min(te_de(cut) for _ in range(2)) / len(heads)
        runs = min(unpatched() for _ in range(2))
    strata = first_difference_pairs(pairs_of(model, spec["prompts"]["add"])).strata()
    estimate = {job: round(n * at + runs, 1) for job, n in ADDED.items()}
    print(
        json.dumps(
            {
                "seconds_per_variant_last_token": round(last, 3),
                "seconds_per_variant_p_star": round(at, 3),
                "seconds_unpatched_cut_pairs": round(runs, 2),
                "strata": strata,
                "added_seconds_per_job": estimate,
                "added_seconds_total": round(sum(estimate.values()), 1),
            }
        )
    )


if __name__ == "__main__":
    main()

"""The timing of benchmarks/paper_shape.py: a random-weight model of GPT-J's exact width on the
CPU, per layer and per token, the engine and the attribution backward against plain passes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch
from common import timed
from gptj_workload import GPTJ, ROOT
from transformers import GPTJConfig, GPTJForCausalLM
from transformers.initialization import no_init_weights

from helixclock.models import wrap_model
from helixclock.patching import Pairs, Patch, PatchingEngine, Point, attribute
from helixclock.stages.neurons.patching import neuron_sites
from helixclock.tasks import render


# -- timing at GPT-J's width ------------------------------------------------------------------------------
def gpt2_tokenizer():
    """GPT-J's tokenizer (GPT-2's BPE), built offline from the files vendored in tests/data/gpt2."""
    if str(ROOT / "tests") not in sys.path:  # tests/helpers is a package of the tests' folder
        sys.path.insert(0, str(ROOT / "tests"))
    # deferred: tests/helpers imports only once the tests' folder is on sys.path (above)
    from helpers.gpt2_tokenizer import gpt2_tokenizer as build

    return build()


def wide_model(tok, n_layers: int, seed: int = 0):
    """A random-weight GPT-J of GPT-J-6B's width with ``n_layers`` blocks (sharing one set of
    weights; the embedding shares the unembedding's matrix), float32."""

    s = GPTJ
    cfg = GPTJConfig(
        vocab_size=s.vocab,
        n_positions=2048,
        n_embd=s.d_model,
        n_layer=n_layers,
        n_head=s.n_heads,
        rotary_dim=64,
        n_inner=s.d_mlp,
        bos_token_id=50256,
        eos_token_id=50256,
    )
    with no_init_weights():
        hf = GPTJForCausalLM(cfg)
    first = dict(hf.transformer.h[0].named_modules())
    for block in hf.transformer.h[1:]:
        for name, module in block.named_modules():
            for p, _ in list(module.named_parameters(recurse=False)):
                setattr(module, p, getattr(first[name], p))  # one shared tensor for every block
    hf.transformer.wte.weight = hf.lm_head.weight
    block = torch.randn(1 << 20, generator=torch.Generator().manual_seed(seed)) * 0.02
    with torch.no_grad():
        for name, p in hf.named_parameters():  # each shared tensor once
            if p.dim() == 1:
                p.fill_(1.0 if ".ln" in f".{name}" and name.endswith("weight") else 0.0)
                continue
            flat = p.view(-1)
            for i in range(0, flat.numel(), block.numel()):
                k = min(block.numel(), flat.numel() - i)
                flat[i : i + k].copy_(block[:k])
    return wrap_model(hf.eval(), tok, name=f"random-gptj-width-{n_layers}L")


def saved_bytes(fn, params) -> int:
    """Bytes autograd saves for the backward pass during ``fn`` (weights left out)."""
    skip = {p.data_ptr() for p in params}
    seen: dict[int, int] = {}

    def pack(t):
        if t.data_ptr() not in skip:
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(seen.values())


def time_width(prompts: dict[str, str], n_prompts: int, n_layers: int, repeats: int) -> dict:
    """Plain forward at n_layers and at 1 layer (interleaved, best of ``repeats``); the engine's
    patched run against a plain forward of the same rows; the attribution backward against its
    forward, beside the FLOP model's ratio."""
    cpu = torch.device("cpu")
    tok = gpt2_tokenizer()
    t0 = time.perf_counter()
    model = wide_model(tok, n_layers)
    build_s = time.perf_counter() - t0
    hf = model.hf
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 100, n_prompts), rng.integers(0, 100, n_prompts)
    a2, b2 = (a + rng.integers(1, 100, n_prompts)) % 100, (b + rng.integers(1, 100, n_prompts)) % 100
    ids = lambda x, y: torch.tensor(tok([render(prompts["add"], i, j) for i, j in zip(x, y)])["input_ids"])  # noqa: E731
    clean, corrupted = ids(a, b), ids(a2, b2)
    ans = torch.tensor([tok(str(i + j))["input_ids"][0] for i, j in zip(a, b)])
    B, T = clean.shape
    pos_a = 6  # "Output ONLY a number.\n" is 6 GPT-2 tokens: the engine runs the 4 after it
    S = T - pos_a
    s = replace(GPTJ, n_layers=n_layers)
    fresh = lambda: Pairs(clean, corrupted, ans, ans)  # noqa: E731  (no cached runs)

    def forward(x: torch.Tensor) -> Callable[[], None]:
        def fn():
            with torch.no_grad():
                hf(x, use_cache=False)

        return fn

    # 1. a plain forward at n_layers and at 1 layer, interleaved against the load of a shared machine
    blocks, one = hf.transformer.h, torch.nn.ModuleList(hf.transformer.h[:1])
    t_full = t_one = float("inf")
    for _ in range(repeats):
        t_full = min(t_full, timed(forward(clean), cpu, 1))
        hf.transformer.h = one
        t_one = min(t_one, timed(forward(clean), cpu, 1))
        hf.transformer.h = blocks
    tokens = B * T
    per_layer = (t_full - t_one) / (n_layers - 1) / tokens  # s per token per block
    rest = max(t_one / tokens - per_layer, 1e-12)  # s per token: embedding, final norm, unembedding
    x = torch.randn(B * T, s.d_model)
    t_unembed = timed(lambda: hf.lm_head(x), cpu, repeats) / tokens  # the unembedding alone, as a cross-check

    # 2. the engine's patched run (its clean run, corrupted run and one pass of every variant) vs
    # plain forwards of the same rows in the same passes (the suffix tokens the engine runs)
    eng = PatchingEngine(model, batch_size=4096, progress=False)
    variants = [[Patch(Point("resid_pre", l, (pos_a,)))] for l in range(n_layers)]
    passes = [
        forward(clean[:, pos_a:]),
        forward(corrupted[:, pos_a:]),
        forward(corrupted[:, pos_a:].repeat(len(variants), 1)),
    ]
    t_floor = timed(lambda: [f() for f in passes], cpu, repeats)
    t_run = timed(lambda: eng.run(fresh(), variants), cpu, repeats)

    # 3. attribution: the forward with gradients and the backward vs a plain engine forward of the
    # same rows at the same sites (the clean run cached, as attribute reads it)
    sites = neuron_sites(model.adapter, T - 1)
    pairs = fresh()
    eng.clean_values(pairs, sites)
    t_collect = timed(lambda: eng.collect(corrupted, sites), cpu, repeats)
    t_attr = timed(lambda: attribute(eng, pairs, sites), cpu, repeats)
    saved = saved_bytes(lambda: attribute(eng, pairs, sites), hf.parameters())
    flop_ratio = s.backward_flops(T) / (n_layers * s.block_flops(T) + s.unembed_flops)
    return {
        "threads": torch.get_num_threads(),
        "prompts": B,
        "tokens": T,
        "layers": n_layers,
        "build_s": round(build_s, 1),
        "forward_s": round(t_full, 3),
        "forward_1_layer_s": round(t_one, 3),
        "ms_per_token_per_layer": round(per_layer * 1e3, 3),
        "ms_per_token_rest": round(rest * 1e3, 3),
        "gflops_per_s_layers": round(s.block_flops(T) / per_layer / 1e9, 1),
        "gflops_per_s_rest": round(s.unembed_flops / rest / 1e9, 1),
        "gflops_per_s_unembed_alone": round(s.unembed_flops / t_unembed / 1e9, 1),
        "gflops_per_s_forward": round((n_layers * s.block_flops(T) + s.unembed_flops) * tokens / t_full / 1e9, 1),
        "engine_run_vs_plain_forward": round(t_run / t_floor, 3),
        "backward_over_forward": round((t_attr - t_collect) / t_collect, 3),
        "backward_over_forward_flop_model": round(flop_ratio, 3),
        "saved_kb_per_token_layer_fp32": round(saved / (B * S) / n_layers / 1024, 1),
    }

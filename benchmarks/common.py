"""Shared setup for the benchmarks: models of a given shape with random weights, a+b prompts,
and a timer. Benchmarks report ratios against a reference measured in the same run."""

from __future__ import annotations

import json
import time

import torch
from transformers import GPTJConfig, GPTJForCausalLM

from helixclock.lm.models import wrap_model
from helixclock.lm.toy import build_tokenizer

GPTJ_PROMPT = "Output ONLY a number.\n{a}+{b}="


def toy_tokenizer():
    return build_tokenizer({"add": GPTJ_PROMPT}, 399, bos=False)


def random_gptj(shape: str, tokenizer, device: torch.device):
    """A random-weight GPT-J: 'toy' (the embedded default's shape) or 'gptj-6b' (the real one)."""

    torch.manual_seed(0)
    if shape == "toy":
        cfg = GPTJConfig(
            vocab_size=len(tokenizer),
            n_positions=64,
            n_embd=128,
            n_layer=2,
            n_head=4,
            rotary_dim=16,
            n_inner=512,
            activation_function="gelu",
        )
        dtype = torch.float32
    elif shape == "gptj-6b":
        cfg = GPTJConfig()  # the hub model's shape: 28 layers, d 4096, 16 heads, vocab 50400
        dtype = torch.float16
    else:
        raise ValueError(shape)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            hf = GPTJForCausalLM(cfg)
    finally:
        torch.set_default_dtype(prev)
    return wrap_model(hf.eval(), tokenizer, name=f"random-{shape}")


def add_prompts(tokenizer, n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ab = torch.randint(0, 100, (n, 2), generator=g)
    text = [GPTJ_PROMPT.replace("{a}", str(int(a))).replace("{b}", str(int(b))) for a, b in ab]
    return torch.tensor(tokenizer(text)["input_ids"])


def timed(fn, device: torch.device, repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls (after one warm-up), synchronising CUDA."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best


def cases() -> list[tuple[str, torch.device]]:
    out = [("toy", torch.device("cpu"))]
    if torch.cuda.is_available():
        out.append(("gptj-6b", torch.device("cuda")))
    return out


def emit(results: dict) -> None:
    print(json.dumps(results))

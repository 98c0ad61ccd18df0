"""Shared fixtures: tiny random-weight models of every supported family (no network)."""

from __future__ import annotations

import os
import time
import warnings

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore")

GPTJ_PROMPTS = {
    "add": "Output ONLY a number.\n{a}+{b}=",
    "sub23": "Output ONLY a number.\n{a}-23=",
    "div5": "Output ONLY a number.\n{a}//5=",
    "mul1p5": "Output ONLY a number.\n{a}*1.5=",
    "mod2": "Output ONLY a number.\n{a} modulo 2=",
    "solve_x": "Output ONLY a number.\nx-{a}=0, x=",
}
FAMILIES = ("gptj", "neox", "llama")


def tiny_hf_model(family: str, vocab_size: int, d: int = 32, layers: int = 2, heads: int = 4,
                  seed: int = 0):
    """A random-weight model of the family's real architecture class."""
    from transformers import (GPTJConfig, GPTJForCausalLM, GPTNeoXConfig, GPTNeoXForCausalLM,
                              LlamaConfig, LlamaForCausalLM)

    torch.manual_seed(seed)
    if family == "gptj":
        cfg = GPTJConfig(vocab_size=vocab_size, n_positions=64, n_embd=d, n_layer=layers, n_head=heads,
                         rotary_dim=4, n_inner=2 * d, bos_token_id=2, eos_token_id=3)
        model = GPTJForCausalLM(cfg)
    elif family == "neox":
        cfg = GPTNeoXConfig(vocab_size=vocab_size, hidden_size=d, num_hidden_layers=layers,
                            num_attention_heads=heads, intermediate_size=3 * d, rotary_pct=0.25,
                            max_position_embeddings=64, use_parallel_residual=True,
                            bos_token_id=2, eos_token_id=3)
        model = GPTNeoXForCausalLM(cfg)
    elif family == "llama":
        cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=d, intermediate_size=48,
                          num_hidden_layers=layers, num_attention_heads=heads,
                          num_key_value_heads=max(1, heads // 2), max_position_embeddings=64,
                          bos_token_id=2, eos_token_id=3, pad_token_id=0)
        model = LlamaForCausalLM(cfg)
    else:
        raise ValueError(family)
    return model.eval()


@pytest.fixture(scope="session")
def tokenizer():
    from helixclock.toy import build_tokenizer

    return build_tokenizer(GPTJ_PROMPTS, 399, bos=False)


@pytest.fixture(scope="session")
def bos_tokenizer():
    from helixclock.toy import build_tokenizer

    return build_tokenizer(GPTJ_PROMPTS, 399, bos=True)


@pytest.fixture(scope="session", params=FAMILIES)
def tiny_model(request, tokenizer):
    """A LoadedModel (nnsight-wrapped) of each family with random weights."""
    from helixclock.models import wrap_model

    hf = tiny_hf_model(request.param, len(tokenizer))
    return wrap_model(hf, tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session")
def tiny_gptj(tokenizer):
    from helixclock.models import wrap_model

    return wrap_model(tiny_hf_model("gptj", len(tokenizer)), tokenizer, name="tiny-gptj")


def add_prompt_ids(tokenizer, pairs, template=GPTJ_PROMPTS["add"]):
    from helixclock.tasks import render

    return torch.tensor(tokenizer([render(template, a, b) for a, b in pairs])["input_ids"])


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny DAG on the CPU with two simulated GPU slots, so model jobs run two at a time."""
    work = tmp_path_factory.mktemp("dag")
    env = {**os.environ, "HELIXCLOCK_GPUS": "2", "HELIXCLOCK_GPU_LOCKS": str(work / "gpu-locks")}
    t0 = time.time()
    from dag import snakemake

    snakemake(work, "--cores", "2", "--max-threads", "1", "--resources", "gpu=2", env=env)
    return work, time.time() - t0

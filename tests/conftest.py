"""Shared fixtures: tiny random-weight models of every supported family (no network)."""

from __future__ import annotations

import os
import time
import warnings

import pytest
import torch
from families import ALL, tiny_hf_model  # noqa: F401 (tests import tiny_hf_model from here)

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
FAMILIES = ("gptj", "neox", "llama")  # the engine's tests run on these (tests/families.py has all)


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


@pytest.fixture(scope="session", params=ALL)
def family_model(request, tokenizer):
    """A LoadedModel of every supported family (tests/families.py) with random weights."""
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

"""Shared fixtures: tiny random-weight models of every supported family (no network)."""

from __future__ import annotations

import os
import time

import pytest
from helpers.families import ALL, tiny_hf_model
from helpers.paths import REPO
from helpers.prompts import GPTJ_PROMPTS

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FAMILIES = ("gptj", "neox", "llama")  # the engine's tests run on these (tests/helpers/families.py has all)


@pytest.fixture(scope="session")
def repo():
    """The repository root (config, registry, committed toys), whatever the working directory."""
    return REPO


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
    """A LoadedModel of every supported family (tests/helpers/families.py) with random weights."""
    from helixclock.models import wrap_model

    hf = tiny_hf_model(request.param, len(tokenizer))
    return wrap_model(hf, tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session")
def tiny_gptj(tokenizer):
    from helixclock.models import wrap_model

    return wrap_model(tiny_hf_model("gptj", len(tokenizer)), tokenizer, name="tiny-gptj")


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny DAG on the CPU with two simulated GPU slots, so model jobs run two at a time."""
    work = tmp_path_factory.mktemp("dag")
    env = {**os.environ, "HELIXCLOCK_GPUS": "2", "HELIXCLOCK_GPU_LOCKS": str(work / "gpu-locks")}
    t0 = time.time()
    from helpers.dag import snakemake

    snakemake(work, "--cores", "2", "--max-threads", "1", "--resources", "gpu=2", env=env)
    return work, time.time() - t0

"""Fixtures the unit tests share: tiny random-weight models of every supported family (no network)
and their tokenizers, and the repository root.  The whole-DAG runs and the order of the tests that
read them are tests/dag's (tests/dag/conftest.py, loaded only when pytest collects tests/dag)."""

from __future__ import annotations

import os

import pytest
import torch
from helpers.families import ALL, tiny_hf_model
from helpers.paths import REPO
from helpers.prompts import GPTJ_PROMPTS

# One thread for torch in the test process: in the full suite the whole-DAG run (tests/dag/conftest.py)
# takes the other core from the session's start, and an op split over two threads then waits for a
# core a run holds (measured on 2 cores beside the runs: 300 epochs of the paper's SGD fit of 12 neurons took
# 9-12 s with two threads and 0.2-0.35 s with one). Jobs the tests start set their own threads.
torch.set_num_threads(1)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FAMILIES = ("gptj", "neox", "llama")  # the engine's tests run on these (tests/helpers/families.py has all)


@pytest.fixture(scope="session")
def repo():
    """The repository root (config, registry, committed toys), whatever the working directory."""
    return REPO


@pytest.fixture(scope="session")
def tokenizer():
    from helixclock.lm.toy import build_tokenizer

    return build_tokenizer(GPTJ_PROMPTS, 399, bos=False)


@pytest.fixture(scope="session")
def bos_tokenizer():
    from helixclock.lm.toy import build_tokenizer

    return build_tokenizer(GPTJ_PROMPTS, 399, bos=True)


@pytest.fixture(scope="session", params=FAMILIES)
def tiny_model(request, tokenizer):
    """A LoadedModel (nnsight-wrapped) of each family with random weights."""
    from helixclock.lm.models import wrap_model

    hf = tiny_hf_model(request.param, len(tokenizer))
    return wrap_model(hf, tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session", params=ALL)
def family_model(request, tokenizer):
    """A LoadedModel of every supported family (tests/helpers/families.py) with random weights."""
    from helixclock.lm.models import wrap_model

    hf = tiny_hf_model(request.param, len(tokenizer))
    return wrap_model(hf, tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session")
def tiny_gptj(tokenizer):
    from helixclock.lm.models import wrap_model

    return wrap_model(tiny_hf_model("gptj", len(tokenizer)), tokenizer, name="tiny-gptj")

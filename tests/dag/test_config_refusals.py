"""Snakemake's command line refuses a bad config before any job, within seconds, with the error
that names the key, the value and what is allowed (checked in-process in
tests/unit/test_config.py)."""

import subprocess
import sys
import time

from helpers.paths import REPO
from helpers.registry import registry_with


def test_snakemake_refuses_an_unknown_model_within_seconds():
    t0 = time.time()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--config", 'models=["no-such-model"]'],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "unknown model 'no-such-model'" in out and "toy-gptj" in out
    assert time.time() - t0 < 20


def test_snakemake_refuses_a_prompt_without_b_before_any_job(tmp_path):
    registry = registry_with(tmp_path, **{"toy-gptj__prompts__add": "{a}+="})
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--config", f"registry={registry}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Job stats" not in out
    assert "registry key 'toy-gptj.prompts.add': value '{a}+=' lacks the placeholder {b}" in out

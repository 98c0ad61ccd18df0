"""Weak models: clear one-line stops before any model is loaded, honest pair counts."""

import logging
import types

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import GPTJ_PROMPTS, tiny_hf_model
from dag import snakemake

from helixclock.pairs import draw_pairs, pair_indices
from helixclock.pipeline import refuse_unless, require_pairs
from helixclock.statistics import Resampling, raw_table, summarise


def weak_accuracy(n_correct: int, seed: int = 0) -> pd.DataFrame:
    """An a+b accuracy table with ``n_correct`` correct prompts (planted)."""
    a, b = np.meshgrid(np.arange(100), np.arange(100), indexing="ij")
    df = pd.DataFrame({"a": a.ravel(), "b": b.ravel()})
    df["answer"] = df["a"] + df["b"]
    df["answer_token"] = df["answer"] + 4
    df["correct"] = False
    df.loc[np.random.default_rng(seed).choice(len(df), n_correct, replace=False), "correct"] = True
    return df


def fake_job(**params):
    return types.SimpleNamespace(wildcards=types.SimpleNamespace(model="weak"), rule="helix_patching",
                                 params=types.SimpleNamespace(minimum={"pairs": 10, "correct_prompts": 1}, **params))


def test_fewer_pairs_than_asked_are_counted_and_said(tokenizer, caplog):
    acc = weak_accuracy(41)
    correct = acc[acc["correct"]]
    clean, corrupt = pair_indices(correct, 100, 0, ("a",))
    assert 0 < len(clean) < 41  # a'+b needs another correct prompt with the same b
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        pairs = draw_pairs(correct.assign(answer_token=[tokenizer.convert_tokens_to_ids(str(x))
                                                        for x in correct["answer"]]),
                           100, 0, tokenizer, GPTJ_PROMPTS["add"], ("a",))
    assert len(pairs) == len(clean)
    assert f"only {len(clean)} clean/corrupted pairs of the 100 asked for" in caplog.text


def test_one_pair_has_a_mean_but_no_interval():
    raw = pd.concat([raw_table(torch.tensor([[2.0]]), [{"method": "one"}]),
                     raw_table(torch.tensor([[1.0, 3.0, 2.0]]), [{"method": "three"}])], ignore_index=True)
    s = summarise(raw, Resampling(bootstrap=50)).set_index("method")
    assert s.loc["one", "ld_mean"] == 2.0 and np.isnan(s.loc["one", "ld_low"]) and np.isnan(s.loc["one", "ld_high"])
    assert s.loc["one", "n_pairs"] == 1 and s.loc["three", "n_pairs"] == 3
    assert s.loc["three", "ld_low"] <= 2.0 <= s.loc["three", "ld_high"]


def test_a_job_stops_with_one_line_naming_model_count_and_minimum():
    job = fake_job()
    with pytest.raises(SystemExit) as stop:
        refuse_unless(job, "correct a+b prompts to cache", 0, 1)
    msg = str(stop.value)
    assert "\n" not in msg and "'weak'" in msg and "found 0" in msg and "at least 1" in msg
    correct = weak_accuracy(5).query("correct")
    with pytest.raises(SystemExit, match=r"clean/corrupted pairs \(varying a\) among 5 correct prompts: found \d"):
        require_pairs(job, correct, 100, 0, ("a",))
    require_pairs(job, weak_accuracy(2000).query("correct"), 100, 0, ("a",))  # enough: no stop


@pytest.mark.slow
def test_a_random_model_gets_its_accuracy_tables_and_clear_stops(tokenizer, tmp_path):
    """A random-weight GPT-J answers (almost) nothing: the accuracy sweep, Table A1 and Fig. A1
    are made, and every model job after them stops with its one line instead of failing deep
    inside (the cache asks for 20 correct prompts here)."""
    hf = tiny_hf_model("gptj", len(tokenizer), d=16, layers=1, heads=2)
    source = tmp_path / "random-gptj"
    hf.save_pretrained(source)
    tokenizer.save_pretrained(source)
    registry = {"random-gptj": {"source": str(source), "family": "gptj", "dtype": "float32", "max_number": 399,
                                "prompts": {"add": GPTJ_PROMPTS["add"]}}}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry))
    config = {"models": ["random-gptj"], "registry": str(tmp_path / "models.yaml"), "device": "cpu",
              "accuracy": {"tasks": ["add"]}, "cache": {"max_number": 120}, "minimum": {"correct_prompts": 20}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    work = tmp_path / "run"
    proc = snakemake(work, "--cores", "1", "--keep-going", configfile=tmp_path / "config.yaml", check=False,
                     timeout=600)
    assert proc.returncode != 0
    acc = pd.read_csv(work / "results/random-gptj/accuracy/add.csv")
    n = int(acc["correct"].sum())
    assert len(acc) == 10000 and n < 20
    for rel in ("figures/figA1_accuracy_heatmap.png", "../all/tables/tabA1_prompts_accuracy.csv"):
        assert (work / "results/random-gptj" / rel).exists(), rel
    log = (work / "logs/random-gptj/residual_cache.log").read_text()
    assert f"rule residual_cache stops: correct a+b prompts to cache: found {n}, needs at least 20" in log
    assert "Traceback" not in log and "IndexError" not in log
    for rule in ("head_patching", "neuron_attribution", "other_tasks_patching"):
        assert "stops:" in (work / f"logs/random-gptj/{rule}.log").read_text(), rule
    assert not (work / "results/random-gptj/cache/residuals.h5").exists()

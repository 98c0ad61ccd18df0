"""A weak model through the DAG: a random-weight GPT-J (tiny, saved with ``save_pretrained``, the
toy tokenizer, answers planted wrong) runs its accuracy sweep and Table A1, and each of its model
jobs stops before loading the model with one clear line (its preconditions are unit-tested on a
planted weak model in tests/unit/test_weak_models.py)."""

from __future__ import annotations

import time

import pandas as pd
import torch
import yaml
from helpers.dag import snakemake
from helpers.prompts import GPTJ_PROMPTS

TEMPLATE = GPTJ_PROMPTS["add"]


# -- the DAG with a random-weight GPT-J that answers nothing right ----------------------------
def save_weak_gptj(path, prompts: dict) -> None:
    """A tiny random-weight GPT-J with the toy tokenizer, saved like a hub checkpoint; the
    unembedding bias plants "<eos>" as every prompt's top token, so no answer is correct."""
    from transformers import GPTJConfig, GPTJForCausalLM

    from helixclock.lm.toy import build_tokenizer

    tok = build_tokenizer(prompts, 199, bos=False)
    torch.manual_seed(0)
    cfg = GPTJConfig(
        vocab_size=len(tok),
        n_positions=32,
        n_embd=16,
        n_layer=1,
        n_head=2,
        rotary_dim=4,
        n_inner=32,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    model = GPTJForCausalLM(cfg).eval()
    with torch.no_grad():
        model.lm_head.bias[tok.eos_token_id] = 1e3
    model.save_pretrained(path)
    tok.save_pretrained(path)


MODEL_OUTPUTS = [
    "cache/residuals.h5",
    "helix/raw/sweep.csv",
    "helix/raw/other_tasks.csv",
    "last_token/raw/fits.csv",
    "heads/raw/effects.csv",
    "mlps/raw/topk.csv",
    "neurons/raw/attribution.csv",
    "neurons/raw/fit_eval.csv",
]
ACCURACY_OUTPUTS = ["accuracy/add.csv", "figures/figA1_accuracy_heatmap.png", "figures/figA1_accuracy_heatmap.pdf"]
STOPPED = {
    "residual_cache": "1 correct a+b prompts (of 10000 prompts)",
    "other_tasks_patching": "4 clean/corrupted pairs with different answers (a'+b from the 0 correct add prompts)",
    "head_patching": "4 clean/corrupted pairs with different answers (a'+b' from the 0 correct add prompts)",
    "neuron_attribution": "6 clean/corrupted pairs with different answers (a'+b' from the 0 correct add prompts)",
}


def test_a_model_without_correct_prompts_stops_before_its_model_jobs(tmp_path):
    prompts = {"add": TEMPLATE}
    save_weak_gptj(tmp_path / "weak-gptj", prompts)
    registry = {
        "weak-gptj": {
            "source": str(tmp_path / "weak-gptj"),
            "family": "gptj",
            "dtype": "bfloat16",
            "number_limit": 199,
            "prompts": prompts,
        }
    }
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry))
    config = {
        "models": ["weak-gptj"],
        "registry": str(tmp_path / "models.yaml"),
        "device": "cpu",
        "batch_size": 2048,
        "accuracy": {"tasks": ["add"]},
        "cache": {"largest_bare_number": 99},
        "helix": {"n_pairs": 4, "bootstrap": 20},
        "clock": {"n_pairs": 4, "fit_prompts": 40},
        "neurons": {"attribution_pairs": 6, "de_pairs": 2, "ablation_prompts": 4, "mean_prompts": 4},
    }
    (tmp_path / "weak.yaml").write_text(yaml.safe_dump(config))
    work = tmp_path / "work"
    results = work / "results" / "weak-gptj"
    targets = [str(results.relative_to(work) / p) for p in ACCURACY_OUTPUTS + MODEL_OUTPUTS]
    targets.append("results/all/tables/tabA1_prompts_accuracy.csv")
    t0 = time.time()
    proc = snakemake(
        work, "--cores", "2", "--keep-going", *targets, configfile=tmp_path / "weak.yaml", check=False, timeout=300
    )
    seconds = time.time() - t0
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0, console[-3000:]
    for rel in ACCURACY_OUTPUTS:
        assert (results / rel).stat().st_size > 0, rel
    tab = pd.read_csv(work / "results/all/tables/tabA1_prompts_accuracy.csv")
    assert tab["accuracy"].tolist() == [0.0]
    assert not pd.read_csv(results / "accuracy/add.csv")["correct"].any()
    for rule, need in STOPPED.items():
        line = f"helixclock: weak-gptj: {rule} needs at least {need}"
        assert line in console, (rule, console[-3000:])
        (log_path,) = (work / "logs/weak-gptj").glob(f"{rule}-*.log")  # named by the job's settings hash
        log = log_path.read_text()
        assert "Traceback" not in log and line in log.strip().splitlines()[-1]
        assert "loaded weak-gptj" not in log  # stopped before the model was loaded
    assert ", found 0; this model's" in console
    for rel in MODEL_OUTPUTS:
        assert not (results / rel).exists(), rel
    for stage in ("cache", "helix", "last_token", "heads", "mlps", "neurons"):
        assert not (results / stage).exists() or not any(p.is_file() for p in (results / stage).rglob("*")), stage
    print(f"weak-model DAG: {seconds:.1f} s")

"""Config and registry validation: errors name the key, the value and what is allowed."""

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helixclock.config import ConfigError, check_config, load_yaml

REPO = Path(__file__).resolve().parents[1]


def test_default_config_is_valid():
    config, registry = check_config(load_yaml(REPO / "config/config.yaml"))
    assert config["models"] == ["toy-gptj", "toy-llama"]
    assert {"gptj", "pythia", "llama", "toy-gptj", "toy-llama"} <= set(registry)
    assert registry["gptj"]["prompts"]["add"] == "Output ONLY a number.\n{a}+{b}="
    assert registry["pythia"]["prompts"]["add"] == "Output ONLY a number. {a}+{b}="
    assert registry["llama"]["source"] == "meta-llama/Llama-3.1-8B"


@pytest.mark.parametrize("config, message", [
    ({"models": ["no-such-model"]}, "unknown model 'no-such-model'; known models: gptj, llama, pythia"),
    ({"cache": {"dtype": "float8"}}, "key 'cache.dtype': value 'float8' is not one of the allowed values float16, float32"),
    ({"device": "tpu"}, "key 'device': value 'tpu' does not match"),
    ({"batch_size": 0}, "key 'batch_size': value 0 violates minimum 1"),
    ({"sedd": 1}, "unknown key(s) 'sedd' at the top level; allowed keys: accuracy"),
    ({"accuracy": {"tasks": ["add", "mul"]}}, "key 'accuracy.tasks.1': value 'mul' is not one of the allowed values add"),
    ({"toy": {"steps": "many"}}, "key 'toy.steps': value 'many' should be of type integer"),
])
def test_config_errors_name_key_and_value(config, message):
    with pytest.raises(ConfigError) as err:
        check_config(config)
    assert message in str(err.value)


def test_registry_errors(tmp_path):
    reg = load_yaml(REPO / "config/models.yaml")
    reg["toy-gptj"]["family"] = "bert"
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(reg))
    with pytest.raises(ConfigError, match="registry key 'toy-gptj.family': value 'bert' is not one of the allowed values gptj, neox, llama, "
                       "gpt2, gpt_neo, olmo, olmo2, phi, qwen2, mistral, gemma2, gemma3"):
        check_config({"registry": str(path)})
    reg["toy-gptj"]["family"] = "gptj"
    del reg["toy-gptj"]["prompts"]["mod2"]
    path.write_text(yaml.safe_dump(reg))
    with pytest.raises(ConfigError, match="'toy-gptj.prompts': no prompt for task\\(s\\) mod2"):
        check_config({"registry": str(path)})


def test_snakemake_refuses_an_unknown_model_within_seconds():
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--config", 'models=["no-such-model"]'],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "unknown model 'no-such-model'" in out and "toy-gptj" in out
    assert time.time() - t0 < 20


def test_nested_command_line_values_are_typed():
    """snakemake --config helix='{"n_pairs": 50}' hands the nested value over as a string."""
    config, _ = check_config({"helix": {"n_pairs": "50", "periods": ["2", "10"]}, "toy": {"lr": "0.01"}})
    assert config["helix"]["n_pairs"] == 50 and config["helix"]["periods"] == [2, 10]
    assert config["toy"]["lr"] == 0.01
    with pytest.raises(ConfigError, match="key 'helix.n_pairs': value 'many' should be of type integer"):
        check_config({"helix": {"n_pairs": "many"}})

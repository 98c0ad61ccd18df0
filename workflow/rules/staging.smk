# Jobs that load a model, and the costly fits: staged, then published (docs/running.md, "When a run fails").
# Such a job writes its outputs under .staging/<rule>/<params hash>/ (temporary files: staged()),
# named by a hash of its params; a local job, publish_<rule> (`use rule publish as publish_<rule>`,
# bases.smk),
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
import hashlib
import json
from pathlib import Path

from snakemake.exceptions import WorkflowError

from helixclock.project import outputs


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


def check_staging():
    """Called by the Snakefile once every rule is read. Each publish_<rule> publishes what <rule> stages."""
    for name in [r.name for r in workflow.rules if r.name.startswith("publish_") and r.name != "publish_folder"]:
        work, publish = getattr(rules, name.removeprefix("publish_")), getattr(rules, name)
        made = sorted(str(f).split("/", 3)[3] for f in work.output)  # less .staging/<rule>/<params hash>/
        promised = sorted(map(str, publish.output))
        if "record" in publish.output.keys():  # a staged folder: the record's folder
            promised = [str(Path(publish.output.record).parent)]
        if made != promised:
            raise WorkflowError(f"rule {name} publishes {promised}, rule {name.removeprefix('publish_')} stages {made}")

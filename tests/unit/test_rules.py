"""Rules a reader can grep (docs/contributing.md, "Adding a stage"): every rule `snakemake --list-rules` lists is
written in the Snakefile or workflow/rules/ as `rule NAME:` or `use rule BASE as NAME with:`, with a
one-line docstring; the rules that claim a GPU are helixclock.project.outputs.MODEL_JOBS; each staged rule
has a publish rule that publishes what it stages; which rules run in Snakemake's own process."""

import re

from helpers.dag import workflow_rules
from helpers.paths import REPO

from helixclock.project import outputs

RULE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]


def written_rules() -> dict[str, str]:
    """Rule name -> the file that writes it, found as a reader finds it: by grep."""
    found = {}
    for path in RULE_FILES:
        text = path.read_text()
        for name in re.findall(r"^rule (\w+):", text, re.M) + re.findall(r"^use rule \w+ as (\w+) with:", text, re.M):
            assert name not in found, f"rule {name} written twice ({found.get(name)}, {path.name})"
            found[name] = path.name
    return found


def test_every_listed_rule_is_written_with_a_docstring(tmp_path):
    rules = workflow_rules(tmp_path)  # what --list-rules lists, from Snakemake's API in this process
    written = written_rules()
    assert set(rules) == set(written), sorted(set(rules) ^ set(written))
    assert len(rules) > 90 and {"helix_patching", "publish_helix_patching", "fig_helix_patching"} <= set(rules)
    undocumented = [name for name, rule in rules.items() if not rule.docstring or "\n" in rule.docstring]
    assert not undocumented, undocumented


def test_the_rules_that_load_a_model_are_one_list(tmp_path):
    """The jobs that claim a GPU slot (resources: gpu) are helixclock.project.outputs.MODEL_JOBS, each staged
    and published; the base rules and staged rules that run no model claim none."""
    rules = workflow_rules(tmp_path)
    assert {name for name, rule in rules.items() if "gpu" in rule.resources} == set(outputs.MODEL_JOBS)
    staged = {name for name in rules if f"publish_{name}" in rules}
    assert set(outputs.MODEL_JOBS) < staged
    assert staged - set(outputs.MODEL_JOBS) == {"model_card", "install_gguf", "helix_fits", "neuron_fits"}
    for name in staged:  # under .staging/<rule>/{params_hash}/, temporary, and published by path
        work, publish = rules[name], rules[f"publish_{name}"]
        assert all(str(f).startswith(f"{outputs.STAGING}/{name}/{{params_hash") for f in work.output), name
        assert all(f.is_temp for f in work.output) and not any(f.is_temp for f in publish.output), name


# the jobs a cluster runs (not local rules): those that load a model, the staged fits and the GGUF's
# conversion, the readers of the cache (which can be many GB) and the bootstrapped basis comparison
# of the top neurons; every table, figure and publish job runs in Snakemake's own process
# (profiles/slurm)
SUBMITTED = {*outputs.MODEL_JOBS, "model_card", "install_gguf", "helix_fits", "neuron_fits"} | {
    "number_structure",
    "number_bases",
    "helix_figure_tables",
    "linear_addition",
    "clock_coordinates",
    "neuron_bases",
}


def test_tables_figures_and_publish_jobs_are_local(tmp_path):
    """`localrule: True` of each figure and publish rule (Snakemake's `with:` does not inherit it
    from the base rule); the base rules are never jobs."""
    rules = workflow_rules(tmp_path)
    local = next(iter(rules.values())).workflow._localrules  # the rules Snakemake runs itself
    bases = {"figure", "publish", "publish_folder"}
    assert set(rules) - local - bases == SUBMITTED
    assert {name for name in rules if name.startswith(("fig_", "publish_")) and name not in bases} <= local

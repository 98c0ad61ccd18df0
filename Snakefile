# helixclock: "Language Models Use Trigonometry to Do Addition" as a Snakemake DAG.
# Each stage of the paper is one rule file; every output has a target of its own.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


report: "workflow/report/workflow.rst"


# shared code first (config, targets, params, resources, staging, base rules), then one file a stage
include: "workflow/rules/common.smk"
include: "workflow/rules/targets.smk"
include: "workflow/rules/params.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/staging.smk"
include: "workflow/rules/bases.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/accuracy.smk"
include: "workflow/rules/cache.smk"
include: "workflow/rules/structure.smk"
include: "workflow/rules/helix.smk"
include: "workflow/rules/last_token.smk"
include: "workflow/rules/heads.smk"
include: "workflow/rules/mlps.smk"
include: "workflow/rules/neurons.smk"
include: "workflow/rules/compat.smk"
include: "workflow/rules/mistakes.smk"
include: "workflow/rules/findings.smk"
include: "workflow/rules/report.smk"


rule all:
    """Every figure and table of every model of the config, and the cross-model ones (the default target)."""
    default_target: True
    input:
        final_outputs(),
    localrule: True


check_resources()  # the GPU jobs are helixclock.project.outputs.MODEL_JOBS; every submitted job declares mem_mb and runtime
check_staging()  # each publish_<rule> publishes what <rule> stages
check_gpu_memory()  # where config key gpu_memory_gb says the cards, every model job fits one

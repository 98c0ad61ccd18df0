# Findings (README, "Findings"): every claim of config/findings.yaml that applies to a model,
# computed from the saved tables of the other stages (never their code), judged within its
# family, and the page findings.md rendered from them.  helixclock.stages.findings
from helixclock.stages.findings import registry as findings_registry

try:
    FINDINGS = findings_registry.load()
except ConfigError as err:
    raise WorkflowError(str(err)) from None


def findings_input(wildcards):
    """The saved tables a model's findings read, and the prompts tables of their jobs."""
    return findings_registry.inputs(FINDINGS, several_tokens(REGISTRY[wildcards.model]), wildcards.model)


def findings_params(wildcards):
    """The registry's findings that apply to the model (a changed one reruns only its models)."""
    return settled(findings_registry.params(FINDINGS, several_tokens(REGISTRY[wildcards.model])))


rule findings:
    """Every declared finding of a model from the saved tables: findings/contrasts.csv and findings.md."""
    input:
        unpack(findings_input),
    output:
        **outputs.FINDINGS,
    log:
        "logs/{model}/findings.log",
    benchmark:
        "logs/{model}/findings.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        registry=findings_params,
        several=lambda w: several_tokens(REGISTRY[w.model]),
        resampling=resampling(),
        compat=config["compat"],
    script:
        "../../scripts/findings.py"


register(*outputs.FINDINGS.values())

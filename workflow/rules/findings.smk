# Findings (docs/findings.md, "Findings"): every claim of config/findings.yaml that applies to a model,
# computed from the saved tables of the other stages (never their code), judged within its
# family, and the page findings.md rendered from them, with its HTML (findings.html: the report shows
# it in its own frame, where it only downloads a Markdown file).  helixclock.stages.findings
from helixclock.prompts.layout import NumberTokens
from helixclock.stages.findings import registry as findings_registry

try:
    FINDINGS = findings_registry.load()
except ConfigError as err:
    raise WorkflowError(str(err)) from None


rule findings:
    """Every declared finding of a model from the saved tables: findings/contrasts.csv, findings.md and its HTML."""
    input:
        # the saved tables its findings read, and the prompts tables of their jobs
        unpack(lambda w: findings_registry.inputs(FINDINGS, NumberTokens.of(REGISTRY[w.model]).several, w.model)),
        # the model's accuracy on each task of the run (the page's opening line)
        **{f"accuracy_{task}": outputs.accuracy(task) for task in config["accuracy"]["tasks"]},
    output:
        # the table and the page's HTML into the report, under "9 Findings", one subcategory a model
        # (the landing text links the pages); the Markdown page beside it (docs' snapshots copy it)
        contrasts=report(
            outputs.FINDINGS["contrasts"],
            caption=caption("findings_contrasts"),
            category=SECTIONS["findings"],
            subcategory="{model}",
        ),
        page=outputs.FINDINGS["page"],
        model=outputs.FINDINGS["model"],
        html=report(
            outputs.FINDINGS["html"],
            caption=caption("findings_page"),
            category=SECTIONS["findings"],
            subcategory="{model}",
        ),
    log:
        outputs.log("findings"),
    benchmark:
        outputs.benchmark("findings")
    localrule: True
    conda:
        ENV
    params:
        # the findings that apply to the model (a changed one reruns only its models' jobs)
        registry=lambda w: settled(findings_registry.params(FINDINGS, NumberTokens.of(REGISTRY[w.model]).several)),
        several=lambda w: NumberTokens.of(REGISTRY[w.model]).several,
        resampling=resampling(),
        compat=config["compat"],
    script:
        "../../scripts/findings.py"


register(*outputs.FINDINGS.values())

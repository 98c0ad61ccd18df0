# The paper beside the run: Fig. 1 drawn from the model's own fits, every published number
# next to the run's (results/all/tables/paper_comparison), the cross-model figures, and what
# the run ran on (results/all/provenance.json).
# helixclock.stages.report, helixclock.environment.provenance
from helixclock.environment.provenance import fingerprint

REPORT_FIGURES = "helixclock.stages.report.figures"
# the tables paper_comparison sets beside the paper's numbers, of every model of this command
COMPARED = [path.format(model=m) for m in MODELS for path in outputs.COMPARED_TABLES.values() if "{model}" in path]


rule clock_coordinates:
    """Fig. 1's a+b side: the last-token helix(a+b) fit's coordinates where it patches best."""
    input:
        cache=outputs.CACHE,
        last_token=outputs.LAST_TOKEN_SUMMARY["fits"],
    output:
        clock=outputs.CLOCK_SUM,
    log:
        outputs.log("clock_coordinates"),
    benchmark:
        outputs.benchmark("clock_coordinates")
    conda:
        ENV
    resources:
        mem_mb=cache_memory,
        runtime=cpu_runtime,
    params:
        periods=config["helix"]["periods"],
    script:
        "../../scripts/clock_coordinates.py"


use rule figure as fig_clock with:
    """Fig. 1: the Clock algorithm drawn from the model's own fits: a and b on the helix, and a+b."""
    input:
        outputs.HELIX_TABLES["projection"],
        outputs.CLOCK_SUM,
    output:
        figure_files("fig01_clock", "report"),
    log:
        outputs.log("fig_clock"),
    benchmark:
        outputs.benchmark("fig_clock")
    localrule: True
    params:
        function=f"{REPORT_FIGURES}:fig01_clock",
        kwargs=each_model(a=config["report"]["clock_a"], b=config["report"]["clock_b"]),


rule paper_values:
    """The paper's published numbers (config/paper_values.yaml) copied into the project, for the comparison."""
    output:
        outputs.PAPER_VALUES,
    log:
        outputs.log("paper_values", model="all"),
    localrule: True
    conda:
        ENV
    params:
        # the file's text, not its path: Snakemake records input paths, and this one, in the
        # repository rather than the project folder, would be absolute (docs/outputs.md, "Outputs")
        text=(Path(workflow.basedir) / outputs.PAPER_VALUES_SOURCE).read_text(),
    script:
        "../../scripts/paper_values.py"


rule provenance:
    """What the run ran on: helixclock's commit, Python, the packages beside the lock's and the model cards'."""
    input:
        cards=expand(outputs.CARD, model=MODELS),
        # the record describes the run that made the tables: written once their jobs have finished, so
        # a command whose model jobs fail leaves the last record standing (docs/running.md, "When a run fails"),
        # whatever order the scheduler picks and however many cores it has
        tables=COMPARED,
    output:
        outputs.RECORD,
        *table("provenance", model="all", stage="report"),
    log:
        outputs.log("provenance", model="all"),
    localrule: True
    conda:
        ENV
    params:
        # what the record depends on (the versions installed, Python, helixclock's commit, the lock
        # files' digests; helixclock.environment.provenance.fingerprint, milliseconds, read only when this job is
        # in the DAG): its params, so it is rewritten when they change, and only then.  The lock files
        # are read by the job from helixclock's checkout, not as inputs: Snakemake records input
        # paths, and these, in the repository rather than the project folder, would be absolute
        # (docs/outputs.md, "Outputs")
        environment=lambda w: settled(fingerprint(workflow.basedir)),
        device=config["device"],
        models=COMPARED_MODELS,
    script:
        "../../scripts/provenance.py"


rule paper_comparison:
    """Every number the paper publishes beside the run's, per model, with a status and its reason; the status counts."""
    input:
        values=outputs.PAPER_VALUES,
        provenance=outputs.RECORD,
        accuracy=table("tabA1_prompts_accuracy", model="all")[0],
        tables=COMPARED,
    output:
        table("paper_comparison", model="all", stage="report"),
        table("paper_comparison_status", model="all", stage="report"),
    log:
        outputs.log("paper_comparison", model="all"),
    localrule: True
    conda:
        ENV
    params:
        models=COMPARED_MODELS,
        tolerance=config["report"]["tolerance"],
    script:
        "../../scripts/paper_comparison.py"


rule cross_model_figures:
    """Every model's accuracy on the six tasks, and Table 1's LD ratios, with what a model did not run marked."""
    input:
        values=outputs.PAPER_VALUES,
        accuracy=table("tabA1_prompts_accuracy", model="all")[0],
        other_tasks=[table("tabC1_other_tasks_accuracy", model=m)[0] for m in MODELS],
        tab01=[table("tab01_other_tasks", model=m)[0] for m in MODELS],
        left_out=[outputs.OTHER_TASKS_LEFT_OUT.format(model=m) for m in MODELS],
    output:
        accuracy=report(
            outputs.figure("figAll_accuracy", model="all")[1],
            caption=caption("figAll_accuracy"),
            category=SECTIONS["report"],
            subcategory="all models",
        ),
        accuracy_pdf=outputs.figure("figAll_accuracy", model="all")[0],
        ratios=report(
            outputs.figure("figAll_ld_ratios", model="all")[1],
            caption=caption("figAll_ld_ratios"),
            category=SECTIONS["report"],
            subcategory="all models",
        ),
        ratios_pdf=outputs.figure("figAll_ld_ratios", model="all")[0],
    log:
        outputs.log("cross_model_figures", model="all"),
    localrule: True
    conda:
        ENV
    params:
        models=COMPARED_MODELS,
    script:
        "../../scripts/cross_model_figures.py"


register(outputs.CLOCK_SUM)
register(
    outputs.RECORD,
    *table("provenance", model="all"),
    *table("paper_comparison", model="all"),
    *table("paper_comparison_status", model="all"),
    *outputs.figure("figAll_accuracy", model="all"),
    *outputs.figure("figAll_ld_ratios", model="all"),
    all_models=True,
)

# The paper beside the run: Fig. 1 drawn from the model's own fits, every published number
# next to the run's (results/all/tables/paper_comparison), and the cross-model figures.
# helixclock.stages.report

REPORT_FIGURES = "helixclock.stages.report.figures"
PAPER_VALUES = outputs.PAPER_VALUES


rule not_run:
    output:
        table("not_run", stage="report"),
    log:
        "logs/{model}/not_run.log",
    localrule: True
    conda:
        ENV
    params:
        reasons=lambda w: settled(NOT_RUN_FOR_SEVERAL) if several_tokens(REGISTRY[w.model]) else {},
    script:
        "../../scripts/not_run.py"


rule clock_coordinates:
    input:
        cache=outputs.CACHE,
        last_token=outputs.LAST_TOKEN_SUMMARY["fits"],
    output:
        clock=outputs.CLOCK_SUM,
    log:
        "logs/{model}/clock_coordinates.log",
    benchmark:
        "logs/{model}/clock_coordinates.benchmark.tsv"
    conda:
        ENV
    params:
        periods=config["helix"]["periods"],
    script:
        "../../scripts/clock_coordinates.py"


figure_rule(
    "fig_clock",
    "fig01_clock",
    [outputs.HELIX_TABLES["projection"], outputs.CLOCK_SUM],
    f"{REPORT_FIGURES}:clock",
    "report",
    a=config["report"]["clock_a"],
    b=config["report"]["clock_b"],
)


rule paper_values:
    output:
        PAPER_VALUES,
    log:
        "logs/all/paper_values.log",
    localrule: True
    conda:
        ENV
    params:
        # the file's text, not its path: Snakemake records input paths, and this one, in the
        # repository rather than the project folder, would be absolute (README, "Outputs")
        text=(Path(workflow.basedir) / "config" / "paper_values.yaml").read_text(),
    script:
        "../../scripts/paper_values.py"


rule paper_comparison:
    input:
        values=PAPER_VALUES,
        accuracy=table("tabA1_prompts_accuracy", model="all")[0],
        # the tables of the stages each model runs
        tables=lambda w: [
            path.format(model=m)
            for m in MODELS
            for path, scope in outputs.COMPARED_TABLES.values()
            if "{model}" in path and runs(m, scope)
        ],
    output:
        table("paper_comparison", model="all", stage="report"),
    log:
        "logs/all/paper_comparison.log",
    localrule: True
    conda:
        ENV
    params:
        models=MODELS,
    script:
        "../../scripts/paper_comparison.py"


rule cross_model_figures:
    input:
        values=PAPER_VALUES,
        accuracy=table("tabA1_prompts_accuracy", model="all")[0],
        other_tasks=[table("tabC1_other_tasks_accuracy", model=m)[0] for m in MODELS],
        tab01=[table("tab01_other_tasks", model=m)[0] for m in MODELS],
    output:
        accuracy=report(
            figure("figAll_accuracy", model="all")[1],
            caption=caption("figAll_accuracy"),
            category=SECTIONS["report"],
            subcategory="all models",
        ),
        accuracy_pdf=figure("figAll_accuracy", model="all")[0],
        ratios=report(
            figure("figAll_ld_ratios", model="all")[1],
            caption=caption("figAll_ld_ratios"),
            category=SECTIONS["report"],
            subcategory="all models",
        ),
        ratios_pdf=figure("figAll_ld_ratios", model="all")[0],
    log:
        "logs/all/cross_model_figures.log",
    localrule: True
    conda:
        ENV
    params:
        models=MODELS,
    script:
        "../../scripts/cross_model_figures.py"


register(outputs.CLOCK_SUM)
register(
    *table("paper_comparison", model="all"),
    *figure("figAll_accuracy", model="all"),
    *figure("figAll_ld_ratios", model="all"),
    all_models=True,
)

# The paper beside the run: Fig. 1 drawn from the model's own fits, every published number
# next to the run's (results/all/tables/paper_comparison), the cross-model figures, and what
# the run ran on (results/all/provenance.json).
# helixclock.stages.report, helixclock.provenance
from snakemake.logging import logger

from helixclock.provenance import RECORD, changed_records, fingerprint, lock_digests

REPORT_FIGURES = "helixclock.stages.report.figures"
PAPER_VALUES = outputs.PAPER_VALUES
# What the provenance record depends on (installed versions, Python, helixclock's commit, the lock
# files' contents; no torch import): its params, so it is rewritten when they change, and only
# then.  The lock files are read by the job from helixclock's checkout, not as inputs: Snakemake
# records input paths, and these, in the repository rather than the project folder, would be
# absolute (README, "Outputs")
RUN_ENVIRONMENT = {**fingerprint(workflow.basedir), "lock": lock_digests(workflow.basedir)}
for _line in changed_records({m: outputs.CARD.format(model=m) for m in MODELS}):
    logger.warning(
        f"helixclock: recorded versions differ from the installed ones, {_line}; jobs that run now use "
        'the installed ones (README, "Provenance of a run")'
    )


# the tables of the stages each model runs, which paper_comparison sets beside the paper's numbers
COMPARED = [
    path.format(model=m)
    for m in MODELS
    for path, scope in outputs.COMPARED_TABLES.values()
    if "{model}" in path and runs(m, scope)
]


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
    f"{REPORT_FIGURES}:fig01_clock",
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


rule provenance:
    input:
        cards=expand(outputs.CARD, model=MODELS),
        # the record describes the run that made the tables: written once their jobs have finished, so
        # a command whose model jobs fail leaves the last record standing (README, "When a run fails"),
        # whatever order the scheduler picks and however many cores it has
        tables=COMPARED,
    output:
        RECORD,
        *table("provenance", model="all", stage="report"),
    log:
        "logs/all/provenance.log",
    localrule: True
    conda:
        ENV
    params:
        environment=settled(RUN_ENVIRONMENT),
        device=config["device"],
        models=MODELS,
    script:
        "../../scripts/provenance.py"


rule paper_comparison:
    input:
        values=PAPER_VALUES,
        provenance=RECORD,
        accuracy=table("tabA1_prompts_accuracy", model="all")[0],
        # the tables of the stages each model runs, and the record of those it does not
        tables=COMPARED,
        not_run=[table("not_run", model=m)[0] for m in MODELS if several_tokens(REGISTRY[m])],
    output:
        table("paper_comparison", model="all", stage="report"),
        table("paper_comparison_status", model="all", stage="report"),
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
        left_out=[outputs.OTHER_TASKS_LEFT_OUT.format(model=m) for m in MODELS],
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
    RECORD,
    *table("provenance", model="all"),
    *table("paper_comparison", model="all"),
    *table("paper_comparison_status", model="all"),
    *figure("figAll_accuracy", model="all"),
    *figure("figAll_ld_ratios", model="all"),
    all_models=True,
)

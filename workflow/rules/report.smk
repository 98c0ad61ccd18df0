# The paper beside the run: Fig. 1 drawn from the model's own fits, every published number
# next to the run's (results/all/tables/paper_comparison), the cross-model figures, and what
# the run ran on (results/all/provenance.json).
# helixclock.stages.report, helixclock.provenance
from snakemake.logging import logger

from helixclock.provenance import RECORD, changed_records, fingerprint

REPORT_FIGURES = "helixclock.stages.report.figures"
PAPER_VALUES = str(Path(workflow.basedir) / "config" / "paper_values.yaml")
LOCK_FILES = {k: str(Path(workflow.basedir) / "requirements" / f"{k}.txt") for k in ("lock", "gguf")}
# What the provenance record depends on (installed versions, Python, helixclock's commit; no
# torch import): its params, so it is rewritten when they change, and only then
RUN_ENVIRONMENT = fingerprint(workflow.basedir)
for _line in changed_records({m: f"results/{m}/model.json" for m in MODELS}):
    logger.warning(
        f"helixclock: recorded versions differ from the installed ones, {_line}; jobs that run now use "
        'the installed ones (README, "Provenance of a run")'
    )
PER_MODEL_TABLES = [  # (table, the scope of the stage that makes it)
    ("results/{model}/model.json", None),
    ("results/{model}/tables/tabC1_other_tasks_accuracy.csv", None),
    ("results/{model}/tables/tab01_other_tasks.csv", None),
    ("results/{model}/helix/other_tasks_left_out.csv", None),
    (HEADS_SUMMARY["topk"], "heads"),
    (HEADS_SUMMARY["mixed"], "heads"),
    (HEADS_SUMMARY["categories"], "heads"),
    (MLPS_SUMMARY["mlp_topk"], "mlps"),
    (MLPS_SUMMARY["mlp_stages"], "mlps"),
    (NEURONS_SUMMARY["neurons"], "neurons"),
    (NEURONS_SUMMARY["ablation"], "neurons"),
    (NEURONS_SUMMARY["fit_eval"], "neurons"),
    (f"{ERRORS}/linear_addition.csv", None),
    (ERRORS_F["error_summary"], None),
    (ERRORS_F["carry_test"], None),
    (ERRORS_F["logit_line_fourier"], None),
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


staged_job(
    "clock_coordinates",
    input={"cache": "results/{model}/cache/residuals.h5", "last_token": LAST_TOKEN_SUMMARY["fits"]},
    output={"clock": "results/{model}/report/clock_sum.csv"},
    params=dict(periods=config["helix"]["periods"]),
)


figure_rule(
    "fig_clock",
    "fig01_clock",
    [HELIX_TABLES["projection"], "results/{model}/report/clock_sum.csv"],
    f"{REPORT_FIGURES}:fig01_clock",
    "report",
    a=config["report"]["clock_a"],
    b=config["report"]["clock_b"],
)


rule provenance:
    input:
        **LOCK_FILES,
        cards=expand("results/{model}/model.json", model=MODELS),
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
        tables=lambda w: [path.format(model=m) for m in MODELS for path, scope in PER_MODEL_TABLES if runs(m, scope)],
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
        other_tasks=expand("results/{model}/tables/tabC1_other_tasks_accuracy.csv", model=MODELS),
        tab01=expand("results/{model}/tables/tab01_other_tasks.csv", model=MODELS),
        left_out=expand("results/{model}/helix/other_tasks_left_out.csv", model=MODELS),
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


register("results/{model}/report/clock_sum.csv")
register(
    RECORD,
    *table("provenance", model="all"),
    *table("paper_comparison", model="all"),
    *table("paper_comparison_status", model="all"),
    *figure("figAll_accuracy", model="all"),
    *figure("figAll_ld_ratios", model="all"),
    all_models=True,
)

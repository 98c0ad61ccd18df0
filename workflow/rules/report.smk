# The paper beside the run: Fig. 1 drawn from the model's own fits, every published number
# next to the run's (results/all/tables/paper_comparison), and the cross-model figures.
# helixclock.stages.report

REPORT_FIGURES = "helixclock.stages.report.figures"
PAPER_VALUES = str(Path(workflow.basedir) / "config" / "paper_values.yaml")
PER_MODEL_TABLES = [
    "results/{model}/model.json",
    "results/{model}/tables/tabC1_other_tasks_accuracy.csv",
    "results/{model}/tables/tab01_other_tasks.csv",
    HEADS_SUMMARY["topk"],
    HEADS_SUMMARY["mixed"],
    HEADS_SUMMARY["categories"],
    MLPS_SUMMARY["mlp_topk"],
    MLPS_SUMMARY["mlp_stages"],
    NEURONS_SUMMARY["neurons"],
    NEURONS_SUMMARY["ablation"],
    NEURONS_SUMMARY["fit_eval"],
    f"{ERRORS}/linear_addition.csv",
    ERRORS_F["error_summary"],
    ERRORS_F["carry_test"],
    ERRORS_F["logit_line_fourier"],
]


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
    f"{REPORT_FIGURES}:clock",
    "report",
    a=config["report"]["clock_a"],
    b=config["report"]["clock_b"],
)


rule paper_comparison:
    input:
        values=PAPER_VALUES,
        accuracy=table("tabA1_prompts_accuracy", model="all")[0],
        tables=expand(PER_MODEL_TABLES, model=MODELS),
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
        other_tasks=expand("results/{model}/tables/tabC1_other_tasks_accuracy.csv", model=MODELS),
        tab01=expand("results/{model}/tables/tab01_other_tasks.csv", model=MODELS),
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
    *table("paper_comparison", model="all"),
    *figure("figAll_accuracy", model="all"),
    *figure("figAll_ld_ratios", model="all"),
    all_models=True,
)

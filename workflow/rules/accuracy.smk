# Stage 2 - accuracy (paper section 3, appendix A, table C1): every prompt of every task.
# helixclock.stages.accuracy


model_job(
    "accuracy",
    output={
        "tables": expand("results/{{model}}/accuracy/{task}.csv", task=TASKS),
        "logits": "results/{model}/accuracy/add_logits.h5",
    },
    params={"tasks": TASKS},
    accuracy=False,
)


figure_rule(
    "fig_accuracy_heatmap",
    "figA1_accuracy_heatmap",
    ["results/{model}/accuracy/add.csv"],
    "helixclock.stages.accuracy.figures:figA1_accuracy_heatmap",
    "accuracy",
)


rule tab_other_tasks_accuracy:
    input:
        expand("results/{{model}}/accuracy/{task}.csv", task=OTHER_TASKS),
    output:
        table("tabC1_other_tasks_accuracy", stage="accuracy"),
    log:
        "logs/{model}/tab_other_tasks_accuracy.log",
    benchmark:
        "logs/{model}/tab_other_tasks_accuracy.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        prompts=lambda w: {t: REGISTRY[w.model]["prompts"][t] for t in OTHER_TASKS},
    script:
        "../../scripts/tab_other_tasks_accuracy.py"


rule tab_prompts_accuracy:
    input:
        expand("results/{model}/accuracy/add.csv", model=MODELS),
    output:
        table("tabA1_prompts_accuracy", model="all", stage="accuracy"),
    log:
        "logs/all/tab_prompts_accuracy.log",
    benchmark:
        "logs/all/tab_prompts_accuracy.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        models=MODELS,
        templates={m: REGISTRY[m]["prompts"]["add"] for m in MODELS},
    script:
        "../../scripts/tab_prompts_accuracy.py"


register("results/{model}/accuracy/add_logits.h5")
if OTHER_TASKS:
    register(*table("tabC1_other_tasks_accuracy"))
register(*table("tabA1_prompts_accuracy", model="all"), all_models=True)

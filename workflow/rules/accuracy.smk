# Stage 2 - accuracy (paper section 3, appendix A, table C1): every prompt of every task.
# helixclock.stages.accuracy


model_job(
    "accuracy",
    output={
        "tables": [outputs.accuracy(t) for t in TASKS],
        "logits": outputs.ADD_LOGITS,
    },
    params={"tasks": TASKS},
    accuracy=False,
)


figure_rule(
    "fig_accuracy_heatmap",
    "figA1_accuracy_heatmap",
    [outputs.ADD_ACCURACY],
    "helixclock.stages.accuracy.figures:figA1_accuracy_heatmap",
    "accuracy",
)


rule tab_other_tasks_accuracy:
    input:
        [outputs.accuracy(t) for t in OTHER_TASKS],
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
        [outputs.accuracy("add", m) for m in MODELS],
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


register(outputs.ADD_LOGITS)
if OTHER_TASKS:
    register(*table("tabC1_other_tasks_accuracy"))
register(*table("tabA1_prompts_accuracy", model="all"), all_models=True)

# Stage 2 - accuracy (paper section 3, appendix A, table C1): every prompt of every task.
# helixclock.stages.accuracy


rule accuracy:
    """Every prompt of every task through the model: prediction, correct, answer logit and rank; a+b's final logits."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        _current=current("accuracy"),
    output:
        **staged("accuracy", tables=[outputs.accuracy(t) for t in TASKS], logits=outputs.ADD_LOGITS),
    log:
        outputs.log("accuracy-{params_hash}"),
    benchmark:
        outputs.benchmark("accuracy-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        tasks=TASKS,
    script:
        "../../scripts/accuracy.py"


use rule publish as publish_accuracy with:
    """Moves accuracy's tables and logits into place once it has succeeded."""
    input:
        unpack(published("accuracy")),
    output:
        tables=[outputs.accuracy(t) for t in TASKS],
        logits=outputs.ADD_LOGITS,
    log:
        outputs.log("publish_accuracy"),
    localrule: True


use rule figure as fig_accuracy_heatmap with:
    """Fig. A1: which a+b prompts the model gets right, over the (a, b) grid."""
    input:
        outputs.ADD_ACCURACY,
    output:
        figure_files("figA1_accuracy_heatmap", "accuracy"),
    log:
        outputs.log("fig_accuracy_heatmap"),
    benchmark:
        outputs.benchmark("fig_accuracy_heatmap")
    localrule: True
    params:
        function="helixclock.stages.accuracy.figures:figA1_accuracy_heatmap",


rule tab_other_tasks_accuracy:
    """Table C1: the model's accuracy on each task other than a+b."""
    input:
        [outputs.accuracy(t) for t in OTHER_TASKS],
    output:
        table("tabC1_other_tasks_accuracy", stage="accuracy"),
    log:
        outputs.log("tab_other_tasks_accuracy"),
    benchmark:
        outputs.benchmark("tab_other_tasks_accuracy")
    localrule: True
    conda:
        ENV
    params:
        prompts=lambda w: {t: REGISTRY[w.model]["prompts"][t] for t in OTHER_TASKS},
    script:
        "../../scripts/tab_other_tasks_accuracy.py"


rule tab_prompts_accuracy:
    """Table A1: every model's a+b accuracy with its prompt."""
    input:
        [outputs.accuracy("add", m) for m in MODELS],
    output:
        table("tabA1_prompts_accuracy", model="all", stage="accuracy"),
    log:
        outputs.log("tab_prompts_accuracy", model="all"),
    benchmark:
        outputs.benchmark("tab_prompts_accuracy", model="all")
    localrule: True
    conda:
        ENV
    params:
        # every model results/all compares (COMPARED_MODELS, workflow/rules/common.smk)
        models=COMPARED_MODELS,
        templates={m: REGISTRY[m]["prompts"]["add"] for m in COMPARED_MODELS},
    script:
        "../../scripts/tab_prompts_accuracy.py"


register(outputs.ADD_LOGITS)
if OTHER_TASKS:
    register(*table("tabC1_other_tasks_accuracy"))
register(*table("tabA1_prompts_accuracy", model="all"), all_models=True)

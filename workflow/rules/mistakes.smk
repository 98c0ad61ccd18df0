# Stage 10 - why a helix, and the model's errors (appendices E and F): addition along a line
# fitted to the numbers (from the cache), the error analysis and the final logits (from the
# accuracy sweep; numbers of several tokens: the log-likelihoods of the answers 0..198, rule
# answer_scores, the stage's one model job), the neurons' logit lens (from the neuron stage).
# helixclock.stages.mistakes

ERROR_FIGURES = "helixclock.stages.mistakes.figures"


rule linear_addition:
    input:
        cache=outputs.CACHE,
        accuracy=outputs.ADD_ACCURACY,
    output:
        **outputs.LINEAR_ADDITION,
    log:
        "logs/{model}/linear_addition.log",
    benchmark:
        "logs/{model}/linear_addition.benchmark.tsv"
    conda:
        ENV
    params:
        layer=per_model("structure", "layer"),
    script:
        "../../scripts/linear_addition.py"


model_job(
    "answer_scores",
    output={"scores": outputs.ANSWER_SCORES},
    params=dict(prompts=config["accuracy"]["logit_prompts"], seed=config["seed"]),
)


rule model_errors:
    input:
        accuracy=outputs.ADD_ACCURACY,
        logits=final_scores,
    output:
        **outputs.ERRORS_F,
        table=table("tabF2_carry_test", stage="mistakes")[0],
        table_md=table("tabF2_carry_test")[1],
    log:
        "logs/{model}/model_errors.log",
    benchmark:
        "logs/{model}/model_errors.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        seed=config["seed"],
        several=lambda w: several_tokens(REGISTRY[w.model]),
    script:
        "../../scripts/model_errors.py"


rule neuron_logit_lens:
    input:
        neurons=outputs.NEURONS_SUMMARY["neurons"],
        grids=outputs.NEURON_GRIDS,
    output:
        **outputs.LOGIT_LENS,
    log:
        "logs/{model}/neuron_logit_lens.log",
    benchmark:
        "logs/{model}/neuron_logit_lens.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        figure_ranks=config["neurons"]["figure_ranks"],
        periods=config["helix"]["periods"],
    script:
        "../../scripts/neuron_logit_lens.py"


figure_rule(
    "fig_linear_addition",
    "figE1_linear_addition",
    [outputs.LINEAR_ADDITION["accuracy"], outputs.LINEAR_ADDITION["line"]],
    f"{ERROR_FIGURES}:figE1_linear_addition",
    "mistakes",
    layer=per_model("structure", "layer"),
)
figure_rule(
    "fig_error_distribution",
    "figF1_error_distribution",
    [outputs.ERRORS_F["errors"], outputs.ERRORS_F["error_summary"]],
    f"{ERROR_FIGURES}:figF1_error_distribution",
    "mistakes",
)
figure_rule(
    "fig_carry_test",
    "figF2_carry_test",
    [outputs.ERRORS_F["errors"], outputs.ERRORS_F["carry_test"]],
    f"{ERROR_FIGURES}:figF2_carry_test",
    "mistakes",
)
figure_rule(
    "fig_neuron_logit_lens",
    "figF3_neuron_logit_lens",
    [outputs.LOGIT_LENS["lens"]],
    f"{ERROR_FIGURES}:figF3_neuron_logit_lens",
    "mistakes",
    scope="neurons",
)
figure_rule(
    "fig_logit_lens_periods",
    "figF4_logit_lens_periods",
    [outputs.LOGIT_LENS["periods"]],
    f"{ERROR_FIGURES}:figF4_logit_lens_periods",
    "mistakes",
    scope="neurons",
)
figure_rule(
    "fig_logit_examples",
    "figF5_logit_examples",
    [outputs.ERRORS_F["logit_examples"]],
    f"{ERROR_FIGURES}:figF5_logit_examples",
    "mistakes",
)
figure_rule(
    "fig_logit_slope_fourier",
    "figF6_logit_slope_fourier",
    [outputs.ERRORS_F["logit_line_fourier"]],
    f"{ERROR_FIGURES}:figF6_logit_slope_fourier",
    "mistakes",
)
register(*table("tabF2_carry_test"))

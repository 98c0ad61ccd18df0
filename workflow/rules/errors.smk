# Stage 10 - why a helix, and the model's errors (appendices E and F): addition along a line
# fitted to the numbers (from the cache), the error analysis and the final logits (from the
# accuracy sweep), the neurons' logit lens (from the neuron stage).  No model job.
# helixclock.stages.mistakes

ERRORS = "results/{model}/errors"
ERRORS_F = {
    k: f"{ERRORS}/{k}.csv"
    for k in ("errors", "error_distribution", "error_summary", "carry_test", "logit_examples", "logit_line_fourier")
}
ERROR_FIGURES = "helixclock.stages.mistakes.figures"


staged_job(
    "linear_addition",
    input={"cache": "results/{model}/cache/residuals.h5", "accuracy": "results/{model}/accuracy/add.csv"},
    output={"accuracy": f"{ERRORS}/linear_addition.csv", "line": f"{ERRORS}/linear_addition_line.csv"},
    params=dict(layer=config["structure"]["layer"]),
)


rule model_errors:
    input:
        accuracy="results/{model}/accuracy/add.csv",
        logits="results/{model}/accuracy/add_logits.h5",
    output:
        **ERRORS_F,
        table=table("tabF2_carry_test", stage="errors")[0],
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
    script:
        "../../scripts/model_errors.py"


rule neuron_logit_lens:
    input:
        neurons=NEURONS_SUMMARY["neurons"],
        grids=f"{NEURONS}/grids.h5",
    output:
        lens=f"{ERRORS}/logit_lens.csv",
        periods=f"{ERRORS}/logit_lens_periods.csv",
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
    [f"{ERRORS}/linear_addition.csv", f"{ERRORS}/linear_addition_line.csv"],
    f"{ERROR_FIGURES}:figE1_linear_addition",
    "errors",
)
figure_rule(
    "fig_error_distribution",
    "figF1_error_distribution",
    [ERRORS_F["errors"], ERRORS_F["error_summary"]],
    f"{ERROR_FIGURES}:figF1_error_distribution",
    "errors",
)
figure_rule(
    "fig_carry_test",
    "figF2_carry_test",
    [ERRORS_F["errors"], ERRORS_F["carry_test"]],
    f"{ERROR_FIGURES}:figF2_carry_test",
    "errors",
)
figure_rule(
    "fig_neuron_logit_lens",
    "figF3_neuron_logit_lens",
    [f"{ERRORS}/logit_lens.csv"],
    f"{ERROR_FIGURES}:figF3_neuron_logit_lens",
    "errors",
    scope="neurons",
)
figure_rule(
    "fig_logit_lens_periods",
    "figF4_logit_lens_periods",
    [f"{ERRORS}/logit_lens_periods.csv"],
    f"{ERROR_FIGURES}:figF4_logit_lens_periods",
    "errors",
    scope="neurons",
)
figure_rule(
    "fig_logit_examples",
    "figF5_logit_examples",
    [ERRORS_F["logit_examples"]],
    f"{ERROR_FIGURES}:figF5_logit_examples",
    "errors",
    scope="answer_logits",
)
figure_rule(
    "fig_logit_slope_fourier",
    "figF6_logit_slope_fourier",
    [ERRORS_F["logit_line_fourier"]],
    f"{ERROR_FIGURES}:figF6_logit_slope_fourier",
    "errors",
    scope="answer_logits",
)
register(*table("tabF2_carry_test"))

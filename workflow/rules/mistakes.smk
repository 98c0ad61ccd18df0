# Stage 10 - why a helix, and the model's mistakes (appendices E and F): addition along a line
# fitted to the numbers (from the cache), the wrong answers and the final logits (from the
# accuracy sweep; numbers of several tokens: the log-likelihoods of the answers 0..198, rule
# answer_scores, the stage's one model job), the neurons' logit lens (from the neuron stage).
# helixclock.stages.mistakes
from helixclock.prompts.layout import NumberTokens

MISTAKES_FIGURES = "helixclock.stages.mistakes.figures"


rule linear_addition:
    """App. E: addition along a line fitted to the numbers, its accuracy against the model's (Fig. E1)."""
    input:
        cache=outputs.CACHE,
        accuracy=outputs.ADD_ACCURACY,
    output:
        **outputs.LINEAR_ADDITION,
    log:
        outputs.log("linear_addition"),
    benchmark:
        outputs.benchmark("linear_addition")
    conda:
        ENV
    resources:
        mem_mb=cache_memory,
        runtime=cpu_runtime,
    params:
        layer=per_model("structure", "layer"),
    script:
        "../../scripts/linear_addition.py"


rule answer_scores:
    """Numbers of several tokens: the log-likelihood L(n) of each answer 0..198 after a sample of a+b prompts (HDF5)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        _current=current("answer_scores"),
    output:
        **staged("answer_scores", scores=outputs.ANSWER_SCORES),
    log:
        outputs.log("answer_scores-{params_hash}"),
    benchmark:
        outputs.benchmark("answer_scores-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        prompts=config["accuracy"]["logit_prompts"],
        seed=config["seed"],
    script:
        "../../scripts/answer_scores.py"


use rule publish as publish_answer_scores with:
    """Moves answer_scores's scores into place once it has succeeded."""
    input:
        unpack(published("answer_scores")),
    output:
        scores=outputs.ANSWER_SCORES,
    log:
        outputs.log("publish_answer_scores"),
    localrule: True


rule wrong_answers:
    """App. F: the wrong answers by offset, the carry test (Table F2) and the final logits' slopes and periods."""
    input:
        accuracy=outputs.ADD_ACCURACY,
        # what Figs. F5 and F6 read: the accuracy sweep's final logits of the answer tokens 0..198,
        # or for numbers of several tokens the answers' log-likelihoods (answer_scores)
        logits=lambda w: (
            outputs.ANSWER_SCORES if NumberTokens.of(REGISTRY[w.model]).several else outputs.ADD_LOGITS
        ).format(model=w.model),
    output:
        **outputs.WRONG_ANSWERS,
        table=table("tabF2_carry_test", stage="mistakes")[0],
        table_md=table("tabF2_carry_test")[1],
    log:
        outputs.log("wrong_answers"),
    benchmark:
        outputs.benchmark("wrong_answers")
    localrule: True
    conda:
        ENV
    params:
        seed=config["seed"],
        several=lambda w: NumberTokens.of(REGISTRY[w.model]).several,
    script:
        "../../scripts/wrong_answers.py"


rule neuron_logit_lens:
    """App. F: the top neurons' logit lens over the answers 0..198, and its periods (Figs. F3, F4)."""
    input:
        neurons=outputs.NEURONS_SUMMARY["neurons"],
        grids=outputs.NEURON_GRIDS,
    output:
        **outputs.LOGIT_LENS,
    log:
        outputs.log("neuron_logit_lens"),
    benchmark:
        outputs.benchmark("neuron_logit_lens")
    localrule: True
    conda:
        ENV
    params:
        figure_ranks=config["neurons"]["figure_ranks"],
        periods=config["helix"]["periods"],
    script:
        "../../scripts/neuron_logit_lens.py"


use rule figure as fig_linear_addition with:
    """Fig. E1: the accuracy of addition along a line fitted to the numbers, against the model's."""
    input:
        outputs.LINEAR_ADDITION["accuracy"],
        outputs.LINEAR_ADDITION["line"],
    output:
        figure_files("figE1_linear_addition", "mistakes"),
    log:
        outputs.log("fig_linear_addition"),
    benchmark:
        outputs.benchmark("fig_linear_addition")
    localrule: True
    params:
        function=f"{MISTAKES_FIGURES}:figE1_linear_addition",
        kwargs=each_model(layer=per_model("structure", "layer")),


use rule figure as fig_error_distribution with:
    """Fig. F1: the wrong numeric answers by error = prediction - answer."""
    input:
        outputs.WRONG_ANSWERS["wrong_answers"],
        outputs.WRONG_ANSWERS["error_summary"],
    output:
        figure_files("figF1_error_distribution", "mistakes"),
    log:
        outputs.log("fig_error_distribution"),
    benchmark:
        outputs.benchmark("fig_error_distribution")
    localrule: True
    params:
        function=f"{MISTAKES_FIGURES}:figF1_error_distribution",


use rule figure as fig_carry_test with:
    """Fig. F2: the units-digit sum of a and b when the error is -10 against any other wrong answer."""
    input:
        outputs.WRONG_ANSWERS["wrong_answers"],
        outputs.WRONG_ANSWERS["carry_test"],
    output:
        figure_files("figF2_carry_test", "mistakes"),
    log:
        outputs.log("fig_carry_test"),
    benchmark:
        outputs.benchmark("fig_carry_test")
    localrule: True
    params:
        function=f"{MISTAKES_FIGURES}:figF2_carry_test",


use rule figure as fig_neuron_logit_lens with:
    """Fig. F3: each top neuron's logit lens over the answer tokens 0..198."""
    input:
        outputs.LOGIT_LENS["lens"],
    output:
        figure_files("figF3_neuron_logit_lens", "mistakes"),
    log:
        outputs.log("fig_neuron_logit_lens"),
    benchmark:
        outputs.benchmark("fig_neuron_logit_lens")
    localrule: True
    params:
        function=f"{MISTAKES_FIGURES}:figF3_neuron_logit_lens",


use rule figure as fig_logit_lens_periods with:
    """Fig. F4: the periods of the top neurons' logit lens beside those of their fits."""
    input:
        outputs.LOGIT_LENS["periods"],
    output:
        figure_files("figF4_logit_lens_periods", "mistakes"),
    log:
        outputs.log("fig_logit_lens_periods"),
    benchmark:
        outputs.benchmark("fig_logit_lens_periods")
    localrule: True
    params:
        function=f"{MISTAKES_FIGURES}:figF4_logit_lens_periods",


use rule figure as fig_logit_examples with:
    """Fig. F5: the final logits over the answers 0..198 for a few prompts, with their line fits."""
    input:
        outputs.WRONG_ANSWERS["logit_examples"],
    output:
        figure_files("figF5_logit_examples", "mistakes"),
    log:
        outputs.log("fig_logit_examples"),
    benchmark:
        outputs.benchmark("fig_logit_examples")
    localrule: True
    params:
        function=f"{MISTAKES_FIGURES}:figF5_logit_examples",


use rule figure as fig_logit_slope_fourier with:
    """Fig. F6: the slope of each prompt's line through its final logits, and their periods."""
    input:
        outputs.WRONG_ANSWERS["logit_line_fourier"],
    output:
        figure_files("figF6_logit_slope_fourier", "mistakes"),
    log:
        outputs.log("fig_logit_slope_fourier"),
    benchmark:
        outputs.benchmark("fig_logit_slope_fourier")
    localrule: True
    params:
        function=f"{MISTAKES_FIGURES}:figF6_logit_slope_fourier",


register(*table("tabF2_carry_test"))

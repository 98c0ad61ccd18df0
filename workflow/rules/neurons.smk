# Stage 9 - neurons (paper section 5.4, appendix D.2): attribution patching of every unit
# (layer, neuron, place; one-token numbers: every last-token neuron, one place), the top units'
# direct effects, the ablation sweep, their preactivation grids N(a, b), the Eq. 5 fits and the
# fits patched back in.  helixclock.stages.neurons (one implementation: stages.neurons.places)

NEURON_FIGURES = "helixclock.stages.neurons.figures"


rule neuron_attribution:
    """Every unit's attribution by place (one-token numbers: every last-token neuron's), the top units' DE and Fig. D9's ablation sweep (raw tables)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        _current=current("neuron_attribution"),
    output:
        **staged("neuron_attribution", **outputs.NEURONS_RAW, means=outputs.NEURON_MEANS),
    log:
        outputs.log("neuron_attribution-{params_hash}"),
    benchmark:
        outputs.benchmark("neuron_attribution-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        selection=selection_settings(),
        minimum=minimum("pairs"),
        neurons=neuron_settings(
            "attribution_pairs", "de_pairs", "ablation_prompts", "mean_prompts", "top_share", "seed", "ranking"
        ),
    script:
        "../../scripts/neuron_attribution.py"


use rule publish as publish_neuron_attribution with:
    """Moves neuron_attribution's raw tables and mean activations into place once it has succeeded."""
    input:
        unpack(published("neuron_attribution")),
    output:
        **outputs.NEURONS_RAW,
        means=outputs.NEURON_MEANS,
    log:
        outputs.log("publish_neuron_attribution"),
    localrule: True


rule neuron_grids:
    """N(a, b) of the top neurons over the (a, b) grid, their largest activation and logit lens (HDF5)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        attribution=outputs.NEURONS_RAW["attribution"],
        _current=current("neuron_grids"),
    output:
        **staged("neuron_grids", grids=outputs.NEURON_GRIDS),
    log:
        outputs.log("neuron_grids-{params_hash}"),
    benchmark:
        outputs.benchmark("neuron_grids-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        neurons=neuron_settings("top_share", "gated_preactivation"),
    script:
        "../../scripts/neuron_grids.py"


use rule publish as publish_neuron_grids with:
    """Moves neuron_grids's grids into place once it has succeeded."""
    input:
        unpack(published("neuron_grids")),
    output:
        grids=outputs.NEURON_GRIDS,
    log:
        outputs.log("publish_neuron_grids"),
    localrule: True


rule neuron_fits:
    """Eq. 5 fitted to every top neuron's N(a, b) at once (no model; staged)."""
    input:
        grids=outputs.NEURON_GRIDS,
        _current=current("neuron_fits"),
    output:
        **staged("neuron_fits", **outputs.NEURON_FITS),
    log:
        outputs.log("neuron_fits-{params_hash}"),
    benchmark:
        outputs.benchmark("neuron_fits-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        mem_mb=input_memory,
        runtime=cpu_runtime,
    params:
        periods=config["helix"]["periods"],
        method=config["neurons"]["fit_method"],
        figure_ranks=config["neurons"]["figure_ranks"],
    script:
        "../../scripts/neuron_fits.py"


rule neuron_bases:
    """Eq. 5 against the digit basis at equal capacity, per top neuron and per place (no model)."""
    input:
        grids=outputs.NEURON_GRIDS,
    output:
        **outputs.NEURON_BASES,
    log:
        outputs.log("neuron_bases"),
    benchmark:
        outputs.benchmark("neuron_bases")
    conda:
        ENV
    resources:
        mem_mb=input_memory,
        runtime=cpu_runtime,
    params:
        resampling=resampling(),
    script:
        "../../scripts/neuron_bases.py"


use rule publish as publish_neuron_fits with:
    """Moves neuron_fits's fits into place once it has succeeded."""
    input:
        unpack(published("neuron_fits")),
    output:
        **outputs.NEURON_FITS,
    log:
        outputs.log("publish_neuron_fits"),
    localrule: True


rule neuron_fit_eval:
    """Fig. 9's raw table: the top k neurons patched with their actual or their fitted preactivations."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        fits=outputs.NEURON_FITS["fits"],
        means=outputs.NEURON_MEANS,
        _current=current("neuron_fit_eval"),
    output:
        **staged("neuron_fit_eval", raw=outputs.NEURON_FIT_EVAL_RAW),
    log:
        outputs.log("neuron_fit_eval-{params_hash}"),
    benchmark:
        outputs.benchmark("neuron_fit_eval-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        minimum=minimum("correct_prompts"),
        neurons=neuron_settings("ablation_prompts", "seed", "gated_preactivation"),
    script:
        "../../scripts/neuron_fit_eval.py"


use rule publish as publish_neuron_fit_eval with:
    """Moves neuron_fit_eval's raw table into place once it has succeeded."""
    input:
        unpack(published("neuron_fit_eval")),
    output:
        raw=outputs.NEURON_FIT_EVAL_RAW,
    log:
        outputs.log("publish_neuron_fit_eval"),
    localrule: True


rule neuron_summary:
    """Figs. D9, D11 and 9's tables and Table D2 (the top neurons), with bootstrap intervals."""
    input:
        **outputs.NEURONS_RAW,
        fit_eval=outputs.NEURON_FIT_EVAL_RAW,
        fits=outputs.NEURON_FITS["table"],
        stages=outputs.MLPS_SUMMARY["mlp_stages"],
    output:
        **outputs.NEURONS_SUMMARY,
        table=table("tabD2_top_neurons", stage="neurons")[0],
        table_md=table("tabD2_top_neurons")[1],
    log:
        outputs.log("neuron_summary"),
    benchmark:
        outputs.benchmark("neuron_summary")
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
    script:
        "../../scripts/neuron_summary.py"


use rule figure as fig_neuron_ablation with:
    """Fig. D9: accuracy and LD when only the top x% of neurons are kept."""
    input:
        outputs.NEURONS_SUMMARY["ablation"],
    output:
        figure_files("figD9_neuron_ablation", "neurons"),
    log:
        outputs.log("fig_neuron_ablation"),
    benchmark:
        outputs.benchmark("fig_neuron_ablation")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:figD9_neuron_ablation",


use rule figure as fig_neuron_layers with:
    """Fig. D10: the layers of the top neurons, the circuit MLPs' layers outlined."""
    input:
        outputs.NEURONS_SUMMARY["neurons"],
        outputs.MLPS_SUMMARY["mlp_stages"],
    output:
        figure_files("figD10_neuron_layers", "neurons"),
    log:
        outputs.log("fig_neuron_layers"),
    benchmark:
        outputs.benchmark("fig_neuron_layers")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:figD10_neuron_layers",


use rule figure as fig_neuron_direct_effect with:
    """Fig. D11: the cumulative share of the top neurons' DE against how many."""
    input:
        outputs.NEURONS_SUMMARY["cumulative_de"],
    output:
        figure_files("figD11_neuron_direct_effect", "neurons"),
    log:
        outputs.log("fig_neuron_direct_effect"),
    benchmark:
        outputs.benchmark("fig_neuron_direct_effect")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:figD11_neuron_direct_effect",


use rule figure as fig_neuron_fourier with:
    """Fig. D12: histograms of the top neurons' dominant periods over a+b, a and b."""
    input:
        outputs.NEURON_FITS["table"],
    output:
        figure_files("figD12_neuron_fourier", "neurons"),
    log:
        outputs.log("fig_neuron_fourier"),
    benchmark:
        outputs.benchmark("fig_neuron_fourier")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:figD12_neuron_fourier",


use rule figure as fig_neuron_preacts with:
    """Fig. 8: top neurons' preactivations N(a, b) over the grid beside their Eq. 5 fits."""
    input:
        outputs.NEURON_FITS["fig08"],
        outputs.NEURONS_SUMMARY["neurons"],
    output:
        figure_files("fig08_neuron_preacts", "neurons"),
    log:
        outputs.log("fig_neuron_preacts"),
    benchmark:
        outputs.benchmark("fig_neuron_preacts")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:fig08_neuron_preacts",


use rule figure as fig_neuron_fit_eval with:
    """Fig. 9: accuracy against k with the top k neurons' actual values against their fitted N(a, b)."""
    input:
        outputs.NEURONS_SUMMARY["fit_eval"],
    output:
        figure_files("fig09_neuron_fit_eval", "neurons"),
    log:
        outputs.log("fig_neuron_fit_eval"),
    benchmark:
        outputs.benchmark("fig_neuron_fit_eval")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:fig09_neuron_fit_eval",


use rule figure as fig_neuron_nrmse with:
    """Fig. D13: each top neuron's attribution effect against the NRMSE of its Eq. 5 fit."""
    input:
        outputs.NEURONS_SUMMARY["neurons"],
    output:
        figure_files("figD13_neuron_nrmse", "neurons"),
    log:
        outputs.log("fig_neuron_nrmse"),
    benchmark:
        outputs.benchmark("fig_neuron_nrmse")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:figD13_neuron_nrmse",


use rule figure as fig_neuron_trends with:
    """Fig. 10: per circuit MLP, the a+b share of its top neurons' fits against their DE/TE, and both by layer."""
    input:
        outputs.NEURONS_SUMMARY["neurons"],
        outputs.MLPS_SUMMARY["mlp_stages"],
    output:
        figure_files("fig10_neuron_trends", "neurons"),
    log:
        outputs.log("fig_neuron_trends"),
    benchmark:
        outputs.benchmark("fig_neuron_trends")
    localrule: True
    params:
        function=f"{NEURON_FIGURES}:fig10_neuron_trends",


register(*table("tabD2_top_neurons"))
register(*outputs.NEURON_BASES.values())

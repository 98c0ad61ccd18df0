# Stage 9 - neurons (paper section 5.4, appendix D.2): attribution patching of every
# last-token neuron, the top neurons' direct effects, the ablation sweep, their preactivation
# grids N(a, b), the Eq. 5 fits and the fits patched back in.  helixclock.stages.neurons

NEURON_FIGURES = "helixclock.stages.neurons.figures"


model_job(
    "neuron_attribution",
    output={**outputs.NEURONS_RAW, "means": outputs.NEURON_MEANS},
    params=dict(
        minimum=minimum("pairs"),
        neurons=neuron_settings(
            "attribution_pairs", "de_pairs", "ablation_prompts", "mean_prompts", "top_share", "seed", "ranking"
        ),
    ),
)

model_job(
    "neuron_grids",
    input={"attribution": outputs.NEURONS_RAW["attribution"]},
    output={"grids": outputs.NEURON_GRIDS},
    params=dict(neurons=neuron_settings("top_share", "gated_preactivation")),
)

staged_job(
    "neuron_fits",
    input={"grids": outputs.NEURON_GRIDS},
    output=outputs.NEURON_FITS,
    params=dict(
        periods=config["helix"]["periods"],
        method=config["neurons"]["fit_method"],
        figure_ranks=config["neurons"]["figure_ranks"],
    ),
    threads=2,
)

model_job(
    "neuron_fit_eval",
    input={"fits": outputs.NEURON_FITS["fits"], "means": outputs.NEURON_MEANS},
    output={"raw": outputs.NEURON_FIT_EVAL_RAW},
    params=dict(
        minimum=minimum("correct_prompts"), neurons=neuron_settings("ablation_prompts", "seed", "gated_preactivation")
    ),
)


rule neuron_summary:
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
        "logs/{model}/neuron_summary.log",
    benchmark:
        "logs/{model}/neuron_summary.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
    script:
        "../../scripts/neuron_summary.py"


figure_rule(
    "fig_neuron_ablation",
    "figD9_neuron_ablation",
    [outputs.NEURONS_SUMMARY["ablation"]],
    f"{NEURON_FIGURES}:figD9_neuron_ablation",
    "neurons",
)
figure_rule(
    "fig_neuron_layers",
    "figD10_neuron_layers",
    [outputs.NEURONS_SUMMARY["neurons"], outputs.MLPS_SUMMARY["mlp_stages"]],
    f"{NEURON_FIGURES}:figD10_neuron_layers",
    "neurons",
)
figure_rule(
    "fig_neuron_direct_effect",
    "figD11_neuron_direct_effect",
    [outputs.NEURONS_SUMMARY["cumulative_de"]],
    f"{NEURON_FIGURES}:figD11_neuron_direct_effect",
    "neurons",
)
figure_rule(
    "fig_neuron_fourier",
    "figD12_neuron_fourier",
    [outputs.NEURON_FITS["table"]],
    f"{NEURON_FIGURES}:figD12_neuron_fourier",
    "neurons",
)
figure_rule(
    "fig_neuron_preacts",
    "fig08_neuron_preacts",
    [outputs.NEURON_FITS["fig08"], outputs.NEURONS_SUMMARY["neurons"]],
    f"{NEURON_FIGURES}:fig08_neuron_preacts",
    "neurons",
)
figure_rule(
    "fig_neuron_fit_eval",
    "fig09_neuron_fit_eval",
    [outputs.NEURONS_SUMMARY["fit_eval"]],
    f"{NEURON_FIGURES}:fig09_neuron_fit_eval",
    "neurons",
)
figure_rule(
    "fig_neuron_nrmse",
    "figD13_neuron_nrmse",
    [outputs.NEURONS_SUMMARY["neurons"]],
    f"{NEURON_FIGURES}:figD13_neuron_nrmse",
    "neurons",
)
figure_rule(
    "fig_neuron_trends",
    "fig10_neuron_trends",
    [outputs.NEURONS_SUMMARY["neurons"], outputs.MLPS_SUMMARY["mlp_stages"]],
    f"{NEURON_FIGURES}:fig10_neuron_trends",
    "neurons",
)
register(*table("tabD2_top_neurons"), scope="neurons")

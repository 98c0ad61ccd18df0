# Stage 9 - neurons (paper section 5.4, appendix D.2): attribution patching of every
# last-token neuron, the top neurons' direct effects, the ablation sweep, their preactivation
# grids N(a, b), the Eq. 5 fits and the fits patched back in.  helixclock.stages.neurons

NEURONS = "results/{model}/neurons"
NEURONS_RAW = {k: f"{NEURONS}/raw/{k}.csv" for k in ("attribution", "direct_effects", "ablation")}
NEURONS_SUMMARY = {k: f"{NEURONS}/{k}.csv" for k in ("ablation", "neurons", "cumulative_de", "fit_eval")}
NEURON_FIGURES = "helixclock.stages.neurons.figures"


model_job(
    "neuron_attribution",
    output={**NEURONS_RAW, "means": f"{NEURONS}/mean_post.npy"},
    params=dict(
        minimum=minimum("pairs"),
        neurons=neuron_settings(
            "attribution_pairs", "de_pairs", "ablation_prompts", "mean_prompts", "top_share", "seed", "ranking"
        ),
    ),
)

model_job(
    "neuron_grids",
    input={"attribution": NEURONS_RAW["attribution"]},
    output={"grids": f"{NEURONS}/grids.h5"},
    params=dict(neurons=neuron_settings("top_share", "gated_preactivation")),
)

staged_job(
    "neuron_fits",
    input={"grids": f"{NEURONS}/grids.h5"},
    output={
        "fits": f"{NEURONS}/fits.h5",
        "table": f"{NEURONS}/fits.csv",
        "terms": f"{NEURONS}/terms.csv",
        "fig08": f"{NEURONS}/fig08_grids.csv",
    },
    params=dict(
        periods=config["helix"]["periods"],
        method=config["neurons"]["fit_method"],
        figure_ranks=config["neurons"]["figure_ranks"],
    ),
    threads=2,
)

model_job(
    "neuron_fit_eval",
    input={"fits": f"{NEURONS}/fits.h5", "means": f"{NEURONS}/mean_post.npy"},
    output={"raw": f"{NEURONS}/raw/fit_eval.csv"},
    params=dict(
        minimum=minimum("correct_prompts"), neurons=neuron_settings("ablation_prompts", "seed", "gated_preactivation")
    ),
)


rule neuron_summary:
    input:
        **NEURONS_RAW,
        fit_eval=f"{NEURONS}/raw/fit_eval.csv",
        fits=f"{NEURONS}/fits.csv",
        stages=MLPS_SUMMARY["mlp_stages"],
    output:
        **NEURONS_SUMMARY,
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
    [NEURONS_SUMMARY["ablation"]],
    f"{NEURON_FIGURES}:figD9_neuron_ablation",
    "neurons",
)
figure_rule(
    "fig_neuron_layers",
    "figD10_neuron_layers",
    [NEURONS_SUMMARY["neurons"], MLPS_SUMMARY["mlp_stages"]],
    f"{NEURON_FIGURES}:figD10_neuron_layers",
    "neurons",
)
figure_rule(
    "fig_neuron_direct_effect",
    "figD11_neuron_direct_effect",
    [NEURONS_SUMMARY["cumulative_de"]],
    f"{NEURON_FIGURES}:figD11_neuron_direct_effect",
    "neurons",
)
figure_rule(
    "fig_neuron_fourier",
    "figD12_neuron_fourier",
    [f"{NEURONS}/fits.csv"],
    f"{NEURON_FIGURES}:figD12_neuron_fourier",
    "neurons",
)
figure_rule(
    "fig_neuron_preacts",
    "fig08_neuron_preacts",
    [f"{NEURONS}/fig08_grids.csv", NEURONS_SUMMARY["neurons"]],
    f"{NEURON_FIGURES}:fig08_neuron_preacts",
    "neurons",
)
figure_rule(
    "fig_neuron_fit_eval",
    "fig09_neuron_fit_eval",
    [NEURONS_SUMMARY["fit_eval"]],
    f"{NEURON_FIGURES}:fig09_neuron_fit_eval",
    "neurons",
)
figure_rule(
    "fig_neuron_nrmse",
    "figD13_neuron_nrmse",
    [NEURONS_SUMMARY["neurons"]],
    f"{NEURON_FIGURES}:figD13_neuron_nrmse",
    "neurons",
)
figure_rule(
    "fig_neuron_trends",
    "fig10_neuron_trends",
    [NEURONS_SUMMARY["neurons"], MLPS_SUMMARY["mlp_stages"]],
    f"{NEURON_FIGURES}:fig10_neuron_trends",
    "neurons",
)
register(*table("tabD2_top_neurons"), scope="neurons")

# Stage 8 - MLPs (paper section 5.3, appendix D.2): top-k MLPs and the circuit MLPs' stages.
# The model job patches every MLP (its TE and DE from Fig. 6's raw table, those of the layers a
# coarser layer grid skipped measured in the job); which ones are the circuit is the table job's
# choice (config key clock.mlp_threshold), so a new threshold reruns no model job.  Answers of
# several tokens: at the last prompt token and at every answer position (column reading).
# helixclock.stages.mlps

MLPS_FIGURES = "helixclock.stages.mlps.figures"


model_job(
    "mlp_patching",
    input={"layer_effects": outputs.LAST_TOKEN_RAW["layer_effects"]},
    output=outputs.MLPS_RAW,
    params=dict(
        minimum=minimum("pairs", "spare_rows"),
        pairs=clock_pairs(),
        fit_prompts=config["clock"]["fit_prompts"],
        fit=fit_settings(),
    ),
)


rule mlp_summary:
    input:
        **outputs.MLPS_RAW,
    output:
        **outputs.MLPS_SUMMARY,
    log:
        "logs/{model}/mlp_summary.log",
    benchmark:
        "logs/{model}/mlp_summary.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
        threshold=config["clock"]["mlp_threshold"],
    script:
        "../../scripts/mlp_summary.py"


figure_rule(
    "fig_mlp_topk", "figD8_mlp_topk", [outputs.MLPS_SUMMARY["mlp_topk"]], f"{MLPS_FIGURES}:figD8_mlp_topk", "mlps"
)
figure_rule(
    "fig_mlp_stages",
    "fig07_mlp_stages",
    [outputs.MLPS_SUMMARY["mlp_stages"]],
    f"{MLPS_FIGURES}:fig07_mlp_stages",
    "mlps",
)

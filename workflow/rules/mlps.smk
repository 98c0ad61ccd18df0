# Stage 8 - MLPs (paper section 5.3, appendix D.2): top-k MLPs and the circuit MLPs' stages.
# The model job patches every MLP (its TE and DE from Fig. 6's raw table, those of the layers a
# coarser layer grid skipped measured in the job); which ones are the circuit is the table job's
# choice (config key clock.mlp_threshold), so a new threshold reruns no model job.  Answers of
# several tokens: at the last prompt token and at every answer position (column reading).
# helixclock.stages.mlps

MLPS_FIGURES = "helixclock.stages.mlps.figures"


rule mlp_patching:
    """Every MLP's TE and DE, Fig. D8's top-k MLPs and every MLP's helix(a+b) fit patched in (raw per-pair tables)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        layer_effects=outputs.LAST_TOKEN_RAW["layer_effects"],
        _current=current("mlp_patching"),
    output:
        **staged("mlp_patching", **outputs.MLPS_RAW),
    log:
        outputs.log("mlp_patching-{params_hash}"),
    benchmark:
        outputs.benchmark("mlp_patching-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        selection=selection_settings(),
        minimum=minimum("pairs", "spare_rows"),
        pairs=clock_pairs(),
        fit_prompts=config["clock"]["fit_prompts"],
        fit=fit_settings(),
    script:
        "../../scripts/mlp_patching.py"


use rule publish as publish_mlp_patching with:
    """Moves mlp_patching's raw tables into place once it has succeeded."""
    input:
        unpack(published("mlp_patching")),
    output:
        **outputs.MLPS_RAW,
    log:
        outputs.log("publish_mlp_patching"),
    localrule: True


rule mlp_summary:
    """Figs. 7 and D8's tables: the circuit MLPs (config key clock.mlp_threshold) and their stages, with intervals."""
    input:
        **outputs.MLPS_RAW,
    output:
        **outputs.MLPS_SUMMARY,
    log:
        outputs.log("mlp_summary"),
    benchmark:
        outputs.benchmark("mlp_summary")
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
        threshold=config["clock"]["mlp_threshold"],
    script:
        "../../scripts/mlp_summary.py"


use rule figure as fig_mlp_topk with:
    """Fig. D8: the top-k MLPs by TE patched together."""
    input:
        outputs.MLPS_SUMMARY["mlp_topk"],
    output:
        figure_files("figD8_mlp_topk", "mlps"),
    log:
        outputs.log("fig_mlp_topk"),
    benchmark:
        outputs.benchmark("fig_mlp_topk")
    localrule: True
    params:
        function=f"{MLPS_FIGURES}:figD8_mlp_topk",


use rule figure as fig_mlp_stages with:
    """Fig. 7: per circuit MLP, helix(a+b)/TE and DE/TE."""
    input:
        outputs.MLPS_SUMMARY["mlp_stages"],
    output:
        figure_files("fig07_mlp_stages", "mlps"),
    log:
        outputs.log("fig_mlp_stages"),
    benchmark:
        outputs.benchmark("fig_mlp_stages")
    localrule: True
    params:
        function=f"{MLPS_FIGURES}:fig07_mlp_stages",

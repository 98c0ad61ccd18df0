# Stage 6 - the Clock algorithm at the last token (paper section 5.1, appendix D): last-token
# helix fits (Fig. 5) and the TE and DE of every layer (Fig. 6).  helixclock.stages.last_token

LAST_TOKEN_FIGURES = "helixclock.stages.last_token.figures"


rule last_token_patching:
    """Last-token helix fits patched at every block, and the TE and DE of every layer (raw per-pair tables)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        cache=outputs.CACHE,
        _current=current("last_token_patching"),
    output:
        **staged("last_token_patching", **outputs.LAST_TOKEN_RAW),
    log:
        outputs.log("last_token_patching-{params_hash}"),
    benchmark:
        outputs.benchmark("last_token_patching-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        minimum=minimum("pairs", "spare_rows"),
        pairs=clock_pairs(),
        fit=settled({"periods": config["helix"]["periods"], "pca_components": config["clock"]["pca_components"]}),
        layer_step=layer_step(),
        selection=selection_settings(screen=False),
    script:
        "../../scripts/last_token_patching.py"


use rule publish as publish_last_token_patching with:
    """Moves last_token_patching's raw tables into place once it has succeeded."""
    input:
        unpack(published("last_token_patching")),
    output:
        **outputs.LAST_TOKEN_RAW,
    log:
        outputs.log("publish_last_token_patching"),
    localrule: True


rule last_token_summary:
    """Figs. 5 and 6's tables: the last-token fits' and every layer's means with bootstrap intervals."""
    input:
        **outputs.LAST_TOKEN_RAW,
    output:
        **outputs.LAST_TOKEN_SUMMARY,
    log:
        outputs.log("last_token_summary"),
    benchmark:
        outputs.benchmark("last_token_summary")
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
    script:
        "../../scripts/last_token_summary.py"


use rule figure as fig_last_token_helix with:
    """Fig. 5: last-token fits patched at the output of every block."""
    input:
        outputs.LAST_TOKEN_SUMMARY["fits"],
    output:
        figure_files("fig05_last_token_helix", "last_token"),
    log:
        outputs.log("fig_last_token_helix"),
    benchmark:
        outputs.benchmark("fig_last_token_helix")
    localrule: True
    params:
        function=f"{LAST_TOKEN_FIGURES}:fig05_last_token_helix",


use rule figure as fig_layer_patching with:
    """Fig. 6: TE and DE of each attention and MLP layer at the last token."""
    input:
        outputs.LAST_TOKEN_SUMMARY["layer_effects"],
    output:
        figure_files("fig06_layer_patching", "last_token"),
    log:
        outputs.log("fig_layer_patching"),
    benchmark:
        outputs.benchmark("fig_layer_patching")
    localrule: True
    params:
        function=f"{LAST_TOKEN_FIGURES}:fig06_layer_patching",

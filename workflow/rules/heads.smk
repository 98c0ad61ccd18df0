# Stage 7 - attention heads (paper section 5.2, appendix D.1): head effects, top-k, helix fits
# of head outputs, categories, mixed heads, properties and paths.  helixclock.stages.heads

HEADS_FIGURES = "helixclock.stages.heads.figures"


rule head_patching:
    """Every head's TE and DE at the last token, the top heads, their helix fits, categories and paths (raw tables)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        _current=current("head_patching"),
    output:
        **staged("head_patching", **outputs.HEADS_RAW),
    log:
        outputs.log("head_patching-{params_hash}"),
    benchmark:
        outputs.benchmark("head_patching-{params_hash}")
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
        # helixclock.stages.heads.patching.HeadSettings: config keys clock.top_heads, mixed_heads and
        # head_screen (the registry's clock overrides them per model), its layer_step and the fits'
        heads=lambda w: settled(
            {
                **{k: per_model("clock", k)(w) for k in ("top_heads", "mixed_heads", "head_screen")},
                "layer_step": layer_step()(w),
                **fit_settings(),
            }
        ),
    script:
        "../../scripts/head_patching.py"


use rule publish as publish_head_patching with:
    """Moves head_patching's raw tables into place once it has succeeded."""
    input:
        unpack(published("head_patching")),
    output:
        **outputs.HEADS_RAW,
    log:
        outputs.log("publish_head_patching"),
    localrule: True


rule head_summary:
    """Figs. D2-D7's tables and Table D1 (the heads' categories): means with bootstrap intervals."""
    input:
        **outputs.HEADS_RAW,
    output:
        **outputs.HEADS_SUMMARY,
        table=table("tabD1_head_categories", stage="heads")[0],
        table_md=table("tabD1_head_categories")[1],
    log:
        outputs.log("head_summary"),
    benchmark:
        outputs.benchmark("head_summary")
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
        threshold=config["clock"]["head_threshold"],
    script:
        "../../scripts/head_summary.py"


use rule figure as fig_head_patching with:
    """Fig. D2: the total (and direct) effect of every head at the last token."""
    input:
        outputs.HEADS_SUMMARY["effects"],
        outputs.HEADS_RAW["screen"],
    output:
        figure_files("figD2_head_patching", "heads"),
    log:
        outputs.log("fig_head_patching"),
    benchmark:
        outputs.benchmark("fig_head_patching")
    localrule: True
    params:
        function=f"{HEADS_FIGURES}:figD2_head_patching",


use rule figure as fig_head_topk with:
    """Fig. D3: the top-k heads by TE patched together."""
    input:
        outputs.HEADS_SUMMARY["topk"],
    output:
        figure_files("figD3_head_topk", "heads"),
    log:
        outputs.log("fig_head_topk"),
    benchmark:
        outputs.benchmark("fig_head_topk")
    localrule: True
    params:
        function=f"{HEADS_FIGURES}:figD3_head_topk",


use rule figure as fig_head_helix_fit with:
    """Fig. D4: the share of each head's TE its helix(a, b, a+b) fit keeps."""
    input:
        outputs.HEADS_SUMMARY["effects"],
        outputs.HEADS_RAW["screen"],
    output:
        figure_files("figD4_head_helix_fit", "heads"),
    log:
        outputs.log("fig_head_helix_fit"),
    benchmark:
        outputs.benchmark("fig_head_helix_fit")
    localrule: True
    params:
        function=f"{HEADS_FIGURES}:figD4_head_helix_fit",


use rule figure as fig_mixed_heads with:
    """Fig. D5: the effect of the categorised top heads against the number of mixed heads."""
    input:
        outputs.HEADS_SUMMARY["mixed"],
    output:
        figure_files("figD5_mixed_heads", "heads"),
    log:
        outputs.log("fig_mixed_heads"),
    benchmark:
        outputs.benchmark("fig_mixed_heads")
    localrule: True
    params:
        function=f"{HEADS_FIGURES}:figD5_mixed_heads",


use rule figure as fig_head_categories with:
    """Fig. D6: per head category, the heads' layers and where they attend from the last token."""
    input:
        outputs.HEADS_SUMMARY["properties"],
    output:
        figure_files("figD6_head_categories", "heads"),
    log:
        outputs.log("fig_head_categories"),
    benchmark:
        outputs.benchmark("fig_head_categories")
    localrule: True
    params:
        function=f"{HEADS_FIGURES}:figD6_head_categories",


use rule figure as fig_head_paths with:
    """Fig. D7: heads as senders (their effect through each downstream component) and as receivers."""
    input:
        outputs.HEADS_SUMMARY["paths"],
    output:
        figure_files("figD7_head_paths", "heads"),
    log:
        outputs.log("fig_head_paths"),
    benchmark:
        outputs.benchmark("fig_head_paths")
    localrule: True
    params:
        function=f"{HEADS_FIGURES}:figD7_head_paths",


register(*table("tabD1_head_categories"))

# Stage 7 - attention heads (paper section 5.2, appendix D.1): head effects, top-k, helix fits
# of head outputs, categories, mixed heads, properties and paths.  helixclock.stages.heads

HEADS_FIGURES = "helixclock.stages.heads.figures"


model_job(
    "head_patching",
    output=outputs.HEADS_RAW,
    params=dict(
        minimum=minimum("pairs", "spare_rows"),
        pairs=clock_pairs(),
        fit_prompts=config["clock"]["fit_prompts"],
        heads=head_settings(),
    ),
)


rule head_summary:
    input:
        **outputs.HEADS_RAW,
    output:
        **outputs.HEADS_SUMMARY,
        table=table("tabD1_head_categories", stage="heads")[0],
        table_md=table("tabD1_head_categories")[1],
    log:
        "logs/{model}/head_summary.log",
    benchmark:
        "logs/{model}/head_summary.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
        threshold=config["clock"]["head_threshold"],
    script:
        "../../scripts/head_summary.py"


figure_rule(
    "fig_head_patching",
    "figD2_head_patching",
    [outputs.HEADS_SUMMARY["effects"]],
    f"{HEADS_FIGURES}:figD2_head_patching",
    "heads",
)
figure_rule(
    "fig_head_topk", "figD3_head_topk", [outputs.HEADS_SUMMARY["topk"]], f"{HEADS_FIGURES}:figD3_head_topk", "heads"
)
figure_rule(
    "fig_head_helix_fit",
    "figD4_head_helix_fit",
    [outputs.HEADS_SUMMARY["effects"]],
    f"{HEADS_FIGURES}:figD4_head_helix_fit",
    "heads",
)
figure_rule(
    "fig_mixed_heads",
    "figD5_mixed_heads",
    [outputs.HEADS_SUMMARY["mixed"]],
    f"{HEADS_FIGURES}:figD5_mixed_heads",
    "heads",
)
figure_rule(
    "fig_head_categories",
    "figD6_head_categories",
    [outputs.HEADS_SUMMARY["properties"]],
    f"{HEADS_FIGURES}:figD6_head_categories",
    "heads",
)
figure_rule(
    "fig_head_paths", "figD7_head_paths", [outputs.HEADS_SUMMARY["paths"]], f"{HEADS_FIGURES}:figD7_head_paths", "heads"
)
register(*table("tabD1_head_categories"), scope="heads")

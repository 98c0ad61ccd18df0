# Stage 6 - the Clock algorithm at the last token (paper section 5.1, appendix D): last-token
# helix fits (Fig. 5) and the TE and DE of every layer (Fig. 6).  helixclock.stages.last_token

LAST_TOKEN_FIGURES = "helixclock.stages.last_token.figures"


model_job(
    "last_token_patching",
    input={"cache": outputs.CACHE},
    output=outputs.LAST_TOKEN_RAW,
    params=dict(
        minimum=minimum("pairs", "spare_rows"),
        pairs=clock_pairs(),
        fit=settled({"periods": config["helix"]["periods"], "pca_components": config["clock"]["pca_components"]}),
        layer_step=layer_step(),
    ),
)


rule last_token_summary:
    input:
        **outputs.LAST_TOKEN_RAW,
    output:
        **outputs.LAST_TOKEN_SUMMARY,
    log:
        "logs/{model}/last_token_summary.log",
    benchmark:
        "logs/{model}/last_token_summary.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
    script:
        "../../scripts/last_token_summary.py"


figure_rule(
    "fig_last_token_helix",
    "fig05_last_token_helix",
    [outputs.LAST_TOKEN_SUMMARY["fits"]],
    f"{LAST_TOKEN_FIGURES}:fig05_last_token_helix",
    "last_token",
)
figure_rule(
    "fig_layer_patching",
    "fig06_layer_patching",
    [outputs.LAST_TOKEN_SUMMARY["layer_effects"]],
    f"{LAST_TOKEN_FIGURES}:fig06_layer_patching",
    "last_token",
)

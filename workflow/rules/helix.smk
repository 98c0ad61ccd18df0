# Stage 5 - the helix (paper sections 4.2-4.5, appendix C): fits to the a-token residuals
# (from the cache), their causal tests by activation patching (model jobs, raw per-pair
# tables) and the summaries with intervals (table jobs).  helixclock.stages.helix

HELIX_FIGURES = "helixclock.stages.helix.figures"


staged_job(
    "helix_fits",
    input={"cache": outputs.CACHE},
    output=outputs.HELIX_FITS,
    params=dict(fit=fit_settings(compat=True), minimum=minimum("spare_rows")),
    threads=2,
)


rule helix_figure_tables:
    input:
        cache=outputs.CACHE,
        fits=outputs.HELIX_FITS["fits"],
    output:
        **outputs.HELIX_TABLES,
    log:
        "logs/{model}/helix_figure_tables.log",
    benchmark:
        "logs/{model}/helix_figure_tables.benchmark.tsv"
    conda:
        ENV
    params:
        periods=config["helix"]["periods"],
        figure_layer=per_model("helix", "figure_layer"),
    script:
        "../../scripts/helix_figure_tables.py"


model_job(
    "helix_patching",
    input={"cache": outputs.CACHE, "fits": outputs.HELIX_FITS["fits"]},
    output=outputs.HELIX_RAW,
    params=dict(
        minimum=minimum("pairs", "spare_rows"),
        fit=fit_settings(compat=True),
        n_pairs=per_model("helix", "n_pairs"),
        test_fraction=config["helix"]["test_fraction"],
        seed=config["seed"],
        layer_step=layer_step(),
        period_subsets=period_subsets(),
    ),
)


rule helix_summary:
    input:
        **outputs.HELIX_RAW,
    output:
        **outputs.HELIX_SUMMARY,
    log:
        "logs/{model}/helix_summary.log",
    benchmark:
        "logs/{model}/helix_summary.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
        compat=config["compat"],
    script:
        "../../scripts/helix_summary.py"


model_job(
    "other_tasks_patching",
    input={"accuracy": [outputs.accuracy(t) for t in TASKS]},
    output={"raw": outputs.OTHER_TASKS_RAW},
    params=dict(
        minimum=minimum("pairs", "spare_rows"),
        fit=fit_settings(compat=True),
        n_pairs=per_model("helix", "n_pairs"),
        seed=config["seed"],
        tasks=TASKS,
        layer_step=layer_step(),
    ),
)


rule tab_other_tasks:
    input:
        outputs.OTHER_TASKS_RAW,
    output:
        curves=outputs.OTHER_TASKS,
        table=table("tab01_other_tasks", stage="helix")[0],
        table_md=table("tab01_other_tasks")[1],
    log:
        "logs/{model}/tab_other_tasks.log",
    benchmark:
        "logs/{model}/tab_other_tasks.benchmark.tsv"
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
    script:
        "../../scripts/tab_other_tasks.py"


# what other_tasks_patching decides, from the same tables and params (and, where numbers take
# several tokens, the tokenizer that sorts prompts by token shape; no forward pass): the tasks it
# leaves out of Table 1 (too few correct prompts for pairs or a fit), for the report
rule other_tasks_left_out:
    input:
        accuracy=[outputs.accuracy(task) for task in TASKS],
        weights=model_weights,
    output:
        outputs.OTHER_TASKS_LEFT_OUT,
    log:
        "logs/{model}/other_tasks_left_out.log",
    localrule: True
    conda:
        ENV
    params:
        minimum=minimum("pairs", "spare_rows"),
        periods=config["helix"]["periods"],
        n_pairs=per_model("helix", "n_pairs"),
        tasks=TASKS,
        spec=spec,
    script:
        "../../scripts/other_tasks_left_out.py"


figure_rule(
    "fig_helix_projection",
    "fig03_helix_projection",
    [outputs.HELIX_TABLES["projection"]],
    f"{HELIX_FIGURES}:fig03_helix_projection",
    "helix",
    periods=config["helix"]["periods"],
)
figure_rule(
    "fig_helix_magnitudes",
    "figC1_helix_magnitudes",
    [outputs.HELIX_TABLES["magnitudes"]],
    f"{HELIX_FIGURES}:figC1_helix_magnitudes",
    "helix",
)
figure_rule(
    "fig_helix_cosine",
    "figC2_helix_cosine",
    [outputs.HELIX_TABLES["cosine"]],
    f"{HELIX_FIGURES}:figC2_helix_cosine",
    "helix",
)
figure_rule(
    "fig_continuity",
    "figC3_continuity",
    [outputs.HELIX_TABLES["continuity"]],
    f"{HELIX_FIGURES}:figC3_continuity",
    "helix",
)
figure_rule(
    "fig_helix_patching",
    "fig04_helix_patching",
    [outputs.HELIX_SUMMARY["sweep"], outputs.HELIX_SUMMARY["best"]],
    f"{HELIX_FIGURES}:fig04_helix_patching",
    "helix",
)
figure_rule(
    "fig_helix_controls",
    "figC5_helix_controls",
    [outputs.HELIX_SUMMARY["controls"]],
    f"{HELIX_FIGURES}:figC5_helix_controls",
    "helix",
)
figure_rule(
    "fig_helix_ablation",
    "figC6_helix_ablation",
    [outputs.HELIX_SUMMARY["ablation"]],
    f"{HELIX_FIGURES}:figC6_helix_ablation",
    "helix",
)
figure_rule(
    "fig_other_tasks_patching",
    "figC7_other_tasks_patching",
    [outputs.OTHER_TASKS],
    f"{HELIX_FIGURES}:figC7_other_tasks_patching",
    "helix",
)
register(*table("tab01_other_tasks"))
register(outputs.HELIX_FITS["r2"])

# Stage 5 - the helix (paper sections 4.2-4.5, appendix C): fits to the a-token residuals
# (from the cache), their causal tests by activation patching (model jobs, raw per-pair
# tables) and the summaries with intervals (table jobs).  helixclock.stages.helix

HELIX = "results/{model}/helix"
HELIX_TABLES = {k: f"{HELIX}/{k}.csv" for k in ("projection", "magnitudes", "cosine", "continuity")}
HELIX_RAW = {k: f"{HELIX}/raw/{k}.csv" for k in ("sweep", "controls", "ablation")}
HELIX_SUMMARY = {k: f"{HELIX}/{k}.csv" for k in ("sweep", "best", "controls", "ablation")}
HELIX_FIGURES = "helixclock.stages.helix.figures"


staged_job(
    "helix_fits",
    input={"cache": "results/{model}/cache/residuals.h5"},
    output={"fits": f"{HELIX}/fits_a.h5", "r2": f"{HELIX}/fit_r2.csv"},
    params=dict(fit=fit_settings(compat=True), minimum=minimum("spare_rows")),
    threads=2,
)

staged_job(
    "helix_figure_tables",
    input={"cache": "results/{model}/cache/residuals.h5", "fits": f"{HELIX}/fits_a.h5"},
    output=HELIX_TABLES,
    params=dict(periods=config["helix"]["periods"], figure_layer=config["helix"]["figure_layer"]),
)

model_job(
    "helix_patching",
    input={"cache": "results/{model}/cache/residuals.h5", "fits": f"{HELIX}/fits_a.h5"},
    output=HELIX_RAW,
    params=dict(
        minimum=minimum("pairs", "spare_rows"),
        fit=fit_settings(compat=True),
        n_pairs=per_model("helix", "n_pairs"),
        test_fraction=config["helix"]["test_fraction"],
        seed=config["seed"],
    ),
)


rule helix_summary:
    input:
        **HELIX_RAW,
    output:
        **HELIX_SUMMARY,
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
    input={"accuracy": expand("results/{{model}}/accuracy/{task}.csv", task=TASKS)},
    output={"raw": f"{HELIX}/raw/other_tasks.csv"},
    params=dict(
        minimum=minimum("pairs", "spare_rows"),
        fit=fit_settings(compat=True),
        n_pairs=per_model("helix", "n_pairs"),
        seed=config["seed"],
        tasks=TASKS,
    ),
)


rule tab_other_tasks:
    input:
        f"{HELIX}/raw/other_tasks.csv",
    output:
        curves=f"{HELIX}/other_tasks.csv",
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


# what other_tasks_patching decides before it loads the model, from the same tables and params:
# the tasks it leaves out of Table 1 (too few correct prompts for pairs or a fit), for the report
rule other_tasks_left_out:
    input:
        accuracy=expand("results/{{model}}/accuracy/{task}.csv", task=TASKS),
    output:
        f"{HELIX}/other_tasks_left_out.csv",
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
    script:
        "../../scripts/other_tasks_left_out.py"


figure_rule(
    "fig_helix_projection",
    "fig03_helix_projection",
    [HELIX_TABLES["projection"]],
    f"{HELIX_FIGURES}:fig03_helix_projection",
    "helix",
    periods=config["helix"]["periods"],
)
figure_rule(
    "fig_helix_magnitudes",
    "figC1_helix_magnitudes",
    [HELIX_TABLES["magnitudes"]],
    f"{HELIX_FIGURES}:figC1_helix_magnitudes",
    "helix",
)
figure_rule(
    "fig_helix_cosine", "figC2_helix_cosine", [HELIX_TABLES["cosine"]], f"{HELIX_FIGURES}:figC2_helix_cosine", "helix"
)
figure_rule("fig_continuity", "figC3_continuity", [HELIX_TABLES["continuity"]], f"{HELIX_FIGURES}:figC3_continuity", "helix")
figure_rule(
    "fig_helix_patching",
    "fig04_helix_patching",
    [HELIX_SUMMARY["sweep"], HELIX_SUMMARY["best"]],
    f"{HELIX_FIGURES}:fig04_helix_patching",
    "helix",
)
figure_rule(
    "fig_helix_controls",
    "figC5_helix_controls",
    [HELIX_SUMMARY["controls"]],
    f"{HELIX_FIGURES}:figC5_helix_controls",
    "helix",
)
figure_rule(
    "fig_helix_ablation",
    "figC6_helix_ablation",
    [HELIX_SUMMARY["ablation"]],
    f"{HELIX_FIGURES}:figC6_helix_ablation",
    "helix",
)
figure_rule(
    "fig_other_tasks_patching",
    "figC7_other_tasks_patching",
    [f"{HELIX}/other_tasks.csv"],
    f"{HELIX_FIGURES}:figC7_other_tasks_patching",
    "helix",
)
register(*table("tab01_other_tasks"))
register(f"{HELIX}/fit_r2.csv")

# Stage 5 - the helix (paper sections 4.2-4.5, appendix C): fits to the a-token residuals
# (from the cache) and their causal tests by activation patching (model jobs).

HELIX = "results/{model}/helix"
HELIX_TABLES = {k: f"{HELIX}/{k}.csv" for k in ("projection", "magnitudes", "cosine", "continuity")}
HELIX_PATCHING = {k: f"{HELIX}/{k}.csv" for k in ("sweep", "best", "controls", "ablation")}


rule helix_fits:
    input:
        "results/{model}/cache/residuals.h5",
    output:
        fits=f"{HELIX}/fits_a.h5",
        r2=f"{HELIX}/fit_r2.csv",
        **HELIX_TABLES,
    log:
        "logs/{model}/helix_fits.log",
    benchmark:
        "logs/{model}/helix_fits.benchmark.tsv"
    params:
        periods=config["helix"]["periods"],
        n_components=config["helix"]["pca_components"],
        figure_layer=config["helix"]["figure_layer"],
    threads: 2
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/helix_fits.py"


rule helix_patching:
    input:
        card="results/{model}/model.json",
        weights=model_weights,
        accuracy="results/{model}/accuracy/add.csv",
        cache="results/{model}/cache/residuals.h5",
        fits=f"{HELIX}/fits_a.h5",
    output:
        **HELIX_PATCHING,
    log:
        "logs/{model}/helix_patching.log",
    benchmark:
        "logs/{model}/helix_patching.benchmark.tsv"
    params:
        **model_job_params(),
        **config["helix"],
        seed=config["seed"],
    threads: 2
    resources:
        gpu=1,
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/helix_patching.py"


rule other_tasks_patching:
    input:
        card="results/{model}/model.json",
        weights=model_weights,
        accuracy=expand("results/{{model}}/accuracy/{task}.csv", task=TASKS),
    output:
        f"{HELIX}/other_tasks.csv",
    log:
        "logs/{model}/other_tasks_patching.log",
    benchmark:
        "logs/{model}/other_tasks_patching.benchmark.tsv"
    params:
        **model_job_params(),
        **config["helix"],
        seed=config["seed"],
        tasks=TASKS,
    threads: 2
    resources:
        gpu=1,
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/other_tasks_patching.py"


rule tab_other_tasks:
    localrule: True
    input:
        f"{HELIX}/other_tasks.csv",
    output:
        table("tab01_other_tasks"),
    log:
        "logs/{model}/tab_other_tasks.log",
    benchmark:
        "logs/{model}/tab_other_tasks.benchmark.tsv"
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/tab_other_tasks.py"


figure_rule("fig_helix_projection", "fig03_helix_projection", [HELIX_TABLES["projection"]], "Helix",
                  periods=config["helix"]["periods"])
figure_rule("fig_helix_magnitudes", "figC1_helix_magnitudes", [HELIX_TABLES["magnitudes"]], "Helix")
figure_rule("fig_helix_cosine", "figC2_helix_cosine", [HELIX_TABLES["cosine"]], "Helix")
figure_rule("fig_continuity", "figC3_continuity", [HELIX_TABLES["continuity"]], "Helix")
figure_rule("fig_helix_patching", "fig04_helix_patching", [HELIX_PATCHING["sweep"], HELIX_PATCHING["best"]], "Helix")
figure_rule("fig_helix_controls", "figC5_helix_controls", [HELIX_PATCHING["controls"]], "Helix")
figure_rule("fig_helix_ablation", "figC6_helix_ablation", [HELIX_PATCHING["ablation"]], "Helix")
figure_rule("fig_other_tasks_patching", "figC7_other_tasks_patching", [f"{HELIX}/other_tasks.csv"], "Helix")
register(*table("tab01_other_tasks"))
register(f"{HELIX}/fit_r2.csv")

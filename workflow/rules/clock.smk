# Stage 6 - the Clock algorithm at the last token (paper section 5, appendix D): last-token
# helix fits, layer effects, attention heads and MLPs, all by activation and path patching.

CLOCK = "results/{model}/clock"
HEADS = {k: f"{CLOCK}/heads_{k}.csv" for k in ("effects", "topk", "categories", "mixed", "properties", "paths")}
MLPS = {k: f"{CLOCK}/{k}.csv" for k in ("layer_effects", "mlp_topk", "mlp_stages")}


def clock_job_inputs():
    return dict(card="results/{model}/model.json", weights=model_weights,
                accuracy="results/{model}/accuracy/add.csv")


def clock_job_params():
    return dict(**model_job_params(), **config["clock"], periods=config["helix"]["periods"],
                n_components=config["helix"]["pca_components"], bootstrap=config["helix"]["bootstrap"],
                seed=config["seed"])


rule last_token_patching:
    input:
        **clock_job_inputs(),
        cache="results/{model}/cache/residuals.h5",
    output:
        f"{CLOCK}/last_token.csv",
    log:
        "logs/{model}/last_token_patching.log",
    benchmark:
        "logs/{model}/last_token_patching.benchmark.tsv"
    params:
        **clock_job_params(),
    threads: 2
    resources:
        gpu=1,
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/last_token_patching.py"


rule mlp_patching:
    input:
        **clock_job_inputs(),
    output:
        **MLPS,
    log:
        "logs/{model}/mlp_patching.log",
    benchmark:
        "logs/{model}/mlp_patching.benchmark.tsv"
    params:
        **clock_job_params(),
    threads: 2
    resources:
        gpu=1,
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/mlp_patching.py"


rule head_patching:
    input:
        **clock_job_inputs(),
    output:
        **HEADS,
    log:
        "logs/{model}/head_patching.log",
    benchmark:
        "logs/{model}/head_patching.benchmark.tsv"
    params:
        **clock_job_params(),
    threads: 2
    resources:
        gpu=1,
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/head_patching.py"


rule tab_head_categories:
    localrule: True
    input:
        HEADS["categories"],
    output:
        table("tabD1_head_categories"),
    log:
        "logs/{model}/tab_head_categories.log",
    benchmark:
        "logs/{model}/tab_head_categories.benchmark.tsv"
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/tab_head_categories.py"


figure_rule("fig_last_token_helix", "fig05_last_token_helix", [f"{CLOCK}/last_token.csv"], "Clock")
figure_rule("fig_layer_patching", "fig06_layer_patching", [MLPS["layer_effects"]], "Clock")
figure_rule("fig_head_patching", "figD2_head_patching", [HEADS["effects"]], "Clock")
figure_rule("fig_head_topk", "figD3_head_topk", [HEADS["topk"]], "Clock")
figure_rule("fig_head_helix_fit", "figD4_head_helix_fit", [HEADS["effects"]], "Clock")
figure_rule("fig_mixed_heads", "figD5_mixed_heads", [HEADS["mixed"]], "Clock")
figure_rule("fig_head_categories", "figD6_head_categories", [HEADS["properties"]], "Clock")
figure_rule("fig_head_paths", "figD7_head_paths", [HEADS["paths"]], "Clock")
figure_rule("fig_mlp_topk", "figD8_mlp_topk", [MLPS["mlp_topk"]], "Clock")
figure_rule("fig_mlp_stages", "fig07_mlp_stages", [MLPS["mlp_stages"]], "Clock")
register(*table("tabD1_head_categories"))

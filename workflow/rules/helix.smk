# Stage 5 - the helix (paper sections 4.2-4.5, appendix C): fits to the a-token residuals
# (from the cache), their causal tests by activation patching (model jobs, raw per-pair
# tables) and the summaries with intervals (table jobs).  helixclock.stages.helix

HELIX_FIGURES = "helixclock.stages.helix.figures"


rule helix_fits:
    """Helix, circle and polynomial fits of the a-token residuals at every layer, with their R^2 (staged)."""
    input:
        cache=outputs.CACHE,
        _current=current("helix_fits"),
    output:
        **staged("helix_fits", **outputs.HELIX_FITS),
    log:
        outputs.log("helix_fits-{params_hash}"),
    benchmark:
        outputs.benchmark("helix_fits-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        mem_mb=cache_memory,
        runtime=cpu_runtime,
    params:
        fit=fit_settings(compat=True),
        minimum=minimum("spare_rows"),
    script:
        "../../scripts/helix_fits.py"


use rule publish as publish_helix_fits with:
    """Moves helix_fits's fits into place once it has succeeded."""
    input:
        unpack(published("helix_fits")),
    output:
        **outputs.HELIX_FITS,
    log:
        outputs.log("publish_helix_fits"),
    localrule: True


rule helix_figure_tables:
    """The tables of Figs. 3 and C1-C3: the helix projection, the columns' norms and cosines, the continuity test."""
    input:
        cache=outputs.CACHE,
        fits=outputs.HELIX_FITS["fits"],
    output:
        **outputs.HELIX_TABLES,
    log:
        outputs.log("helix_figure_tables"),
    benchmark:
        outputs.benchmark("helix_figure_tables")
    conda:
        ENV
    resources:
        mem_mb=cache_memory,
        runtime=cpu_runtime,
    params:
        periods=config["helix"]["periods"],
        figure_layer=per_model("helix", "figure_layer"),
    script:
        "../../scripts/helix_figure_tables.py"


rule helix_patching:
    """Fig. 4's sweep, its controls (Fig. C5) and the ablation (Fig. C6): fits patched at the a token, per pair."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        cache=outputs.CACHE,
        fits=outputs.HELIX_FITS["fits"],
        _current=current("helix_patching"),
    output:
        **staged("helix_patching", **outputs.HELIX_RAW),
    log:
        outputs.log("helix_patching-{params_hash}"),
    benchmark:
        outputs.benchmark("helix_patching-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        minimum=minimum("pairs", "spare_rows"),
        fit=fit_settings(compat=True),
        n_pairs=per_model("helix", "n_pairs"),
        test_fraction=config["helix"]["test_fraction"],
        seed=config["seed"],
        layer_step=layer_step(),
        period_subsets=period_subsets(),
        selection=selection_settings(screen=False),
    script:
        "../../scripts/helix_patching.py"


use rule publish as publish_helix_patching with:
    """Moves helix_patching's raw tables into place once it has succeeded."""
    input:
        unpack(published("helix_patching")),
    output:
        **outputs.HELIX_RAW,
    log:
        outputs.log("publish_helix_patching"),
    localrule: True


rule helix_summary:
    """Figs. 4 and C5-C6's tables: the patching sweep's means with bootstrap intervals, the best fits, the strata."""
    input:
        **outputs.HELIX_RAW,
    output:
        **outputs.HELIX_SUMMARY,
    log:
        outputs.log("helix_summary"),
    benchmark:
        outputs.benchmark("helix_summary")
    localrule: True
    conda:
        ENV
    params:
        resampling=resampling(),
        compat=config["compat"],
    script:
        "../../scripts/helix_summary.py"


rule other_tasks_patching:
    """Table 1 and Fig. C7's raw table: the fits patched at the a token of every task (per pair)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=[outputs.accuracy(t) for t in TASKS],
        _current=current("other_tasks_patching"),
    output:
        **staged("other_tasks_patching", raw=outputs.OTHER_TASKS_RAW, pairs=outputs.OTHER_TASKS_RAW_PAIRS),
    log:
        outputs.log("other_tasks_patching-{params_hash}"),
    benchmark:
        outputs.benchmark("other_tasks_patching-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        minimum=minimum("pairs", "spare_rows"),
        fit=fit_settings(compat=True),
        n_pairs=per_model("helix", "n_pairs"),
        seed=config["seed"],
        tasks=TASKS,
        layer_step=layer_step(),
    script:
        "../../scripts/other_tasks_patching.py"


use rule publish as publish_other_tasks_patching with:
    """Moves other_tasks_patching's raw table and its pairs into place once it has succeeded."""
    input:
        unpack(published("other_tasks_patching")),
    output:
        raw=outputs.OTHER_TASKS_RAW,
        pairs=outputs.OTHER_TASKS_RAW_PAIRS,
    log:
        outputs.log("publish_other_tasks_patching"),
    localrule: True


rule tab_other_tasks:
    """Table 1 (the fits' LD on every task, with intervals) and Fig. C7's curves."""
    input:
        outputs.OTHER_TASKS_RAW,
    output:
        curves=outputs.OTHER_TASKS,
        table=table("tab01_other_tasks", stage="helix")[0],
        table_md=table("tab01_other_tasks")[1],
    log:
        outputs.log("tab_other_tasks"),
    benchmark:
        outputs.benchmark("tab_other_tasks")
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
    """The tasks other_tasks_patching leaves out of Table 1 (too few correct prompts), and why."""
    input:
        accuracy=[outputs.accuracy(task) for task in TASKS],
        weights=model_weights,
    output:
        outputs.OTHER_TASKS_LEFT_OUT,
    log:
        outputs.log("other_tasks_left_out"),
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


use rule figure as fig_helix_projection with:
    """Fig. 3: each a projected through the helix fit: sin against cos per period, and the linear component."""
    input:
        outputs.HELIX_TABLES["projection"],
    output:
        figure_files("fig03_helix_projection", "helix"),
    log:
        outputs.log("fig_helix_projection"),
    benchmark:
        outputs.benchmark("fig_helix_projection")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:fig03_helix_projection",
        kwargs=each_model(periods=config["helix"]["periods"]),


use rule figure as fig_helix_magnitudes with:
    """Fig. C1: the norm of each Fourier column of the helix fit."""
    input:
        outputs.HELIX_TABLES["magnitudes"],
    output:
        figure_files("figC1_helix_magnitudes", "helix"),
    log:
        outputs.log("fig_helix_magnitudes"),
    benchmark:
        outputs.benchmark("fig_helix_magnitudes")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:figC1_helix_magnitudes",


use rule figure as fig_helix_cosine with:
    """Fig. C2: cosine similarity between the columns of the helix fit."""
    input:
        outputs.HELIX_TABLES["cosine"],
    output:
        figure_files("figC2_helix_cosine", "helix"),
    log:
        outputs.log("fig_helix_cosine"),
    benchmark:
        outputs.benchmark("fig_helix_cosine")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:figC2_helix_cosine",


use rule figure as fig_continuity with:
    """Fig. C3: a T = 100 helix fitted without the a ending in 3, those a projected into it."""
    input:
        outputs.HELIX_TABLES["continuity"],
    output:
        figure_files("figC3_continuity", "helix"),
    log:
        outputs.log("fig_continuity"),
    benchmark:
        outputs.benchmark("fig_continuity")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:figC3_continuity",


use rule figure as fig_helix_patching with:
    """Fig. 4: LD against layer for the layer patch, PCA, the best helix and circle per k, the polynomial."""
    input:
        outputs.HELIX_SUMMARY["sweep"],
        outputs.HELIX_SUMMARY["best"],
    output:
        figure_files("fig04_helix_patching", "helix"),
    log:
        outputs.log("fig_helix_patching"),
    benchmark:
        outputs.benchmark("fig_helix_patching")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:fig04_helix_patching",


use rule figure as fig_helix_controls with:
    """Fig. C5: the train/test split of a, a helix fitted to shuffled a, and the b token."""
    input:
        outputs.HELIX_SUMMARY["controls"],
    output:
        figure_files("figC5_helix_controls", "helix"),
    log:
        outputs.log("fig_helix_controls"),
    benchmark:
        outputs.benchmark("fig_helix_controls")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:figC5_helix_controls",


use rule figure as fig_helix_ablation with:
    """Fig. C6: mean-ablating the helix subspace of h_a against mean-ablating h_a entirely."""
    input:
        outputs.HELIX_SUMMARY["ablation"],
    output:
        figure_files("figC6_helix_ablation", "helix"),
    log:
        outputs.log("fig_helix_ablation"),
    benchmark:
        outputs.benchmark("fig_helix_ablation")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:figC6_helix_ablation",


use rule figure as fig_other_tasks_patching with:
    """Fig. C7: the full fits patched at the a token on six tasks (the title names those left out of Table 1)."""
    input:
        outputs.OTHER_TASKS,
        outputs.OTHER_TASKS_LEFT_OUT,
    output:
        figure_files("figC7_other_tasks_patching", "helix"),
    log:
        outputs.log("fig_other_tasks_patching"),
    benchmark:
        outputs.benchmark("fig_other_tasks_patching")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:figC7_other_tasks_patching",


register(*table("tab01_other_tasks"))
register(outputs.HELIX_FITS["r2"])


use rule figure as fig_causal_nested with:
    """Fig. N2 (helixclock's): the causal nested T = 100 test, the held-out fits' LD and their paired differences by layer."""
    input:
        outputs.HELIX_SUMMARY["nested"],
    output:
        figure_files("figN2_causal_nested", "helix"),
    log:
        outputs.log("fig_causal_nested"),
    benchmark:
        outputs.benchmark("fig_causal_nested")
    localrule: True
    params:
        function=f"{HELIX_FIGURES}:figN2_causal_nested",

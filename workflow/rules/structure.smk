# Stage 4 - structure of numbers (paper section 4.1, appendix B): bare number tokens at the
# output of layer 0 - Fourier spectrum, PC1, distances.  Reads the cache, not the model.
# helixclock.stages.structure

STRUCTURE_FIGURES = "helixclock.stages.structure.figures"


rule number_structure:
    input:
        cache=outputs.CACHE,
    output:
        **outputs.STRUCTURE,
        peaks=table("fourier_peaks", stage="structure")[0],
        peaks_md=table("fourier_peaks")[1],
    log:
        "logs/{model}/number_structure.log",
    benchmark:
        "logs/{model}/number_structure.benchmark.tsv"
    conda:
        ENV
    params:
        layer=per_model("structure", "layer"),
        n_fourier=config["cache"]["largest_bare_number"],
        compat=config["compat"],
    script:
        "../../scripts/number_structure.py"


rule number_bases:
    input:
        cache=outputs.CACHE,
    output:
        **outputs.NUMBER_BASES,
    log:
        "logs/{model}/number_bases.log",
    benchmark:
        "logs/{model}/number_bases.benchmark.tsv"
    conda:
        ENV
    params:
        periods=config["helix"]["periods"],
        n_fourier=config["cache"]["largest_bare_number"],
        bootstrap=config["helix"]["bootstrap"],
        seed=config["seed"],
    script:
        "../../scripts/number_bases.py"


figure_rule(
    "fig_number_bases",
    "figN1_number_bases",
    [outputs.NUMBER_BASES["r2"], outputs.NUMBER_BASES["winner"], outputs.NUMBER_BASES["peaks"]],
    f"{STRUCTURE_FIGURES}:figN1_number_bases",
    "structure",
)
figure_rule(
    "fig_fourier_pc1",
    "fig02_fourier_pc1",
    [outputs.STRUCTURE["spectrum"], outputs.STRUCTURE["pc1"]],
    f"{STRUCTURE_FIGURES}:fig02_fourier_pc1",
    "structure",
)
figure_rule(
    "fig_fourier_360_vs_361",
    "figB1_fourier_360_vs_361",
    [outputs.STRUCTURE["spectrum"]],
    f"{STRUCTURE_FIGURES}:figB1_fourier_360_vs_361",
    "structure",
    n=config["cache"]["largest_bare_number"],
)
figure_rule(
    "fig_distance_similarity",
    "figB2_distance_similarity",
    [outputs.STRUCTURE["similarity"]],
    f"{STRUCTURE_FIGURES}:figB2_distance_similarity",
    "structure",
    layer=per_model("structure", "layer"),
)
figure_rule(
    "fig_delta_n_distance",
    "figB3_delta_n_distance",
    [outputs.STRUCTURE["delta_n"]],
    f"{STRUCTURE_FIGURES}:figB3_delta_n_distance",
    "structure",
    layer=per_model("structure", "layer"),
)
figure_rule(
    "fig_pc1_360",
    "figB4_pc1_360",
    [outputs.STRUCTURE["pc1"]],
    f"{STRUCTURE_FIGURES}:figB4_pc1_360",
    "structure",
    layer=per_model("structure", "layer"),
)
register(*table("fourier_peaks"))
register(*outputs.NUMBER_BASES.values())

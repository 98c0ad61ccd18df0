# Stage 4 - structure of numbers (paper section 4.1, appendix B): bare number tokens at the
# output of layer 0 - Fourier spectrum, PC1, distances.  Reads the cache, not the model.
# helixclock.stages.structure

STRUCTURE = {k: f"results/{{model}}/structure/{k}.csv" for k in ("spectrum", "pc1", "similarity", "delta_n")}
STRUCTURE_FIGURES = "helixclock.stages.structure.figures"


staged_job(
    "number_structure",
    input={"cache": "results/{model}/cache/residuals.h5"},
    output={
        **STRUCTURE,
        "peaks": table("fourier_peaks", stage="structure")[0],
        "peaks_md": table("fourier_peaks")[1],
        "peaks_by_layer": "results/{model}/structure/peaks_by_layer.csv",
    },
    params=dict(
        layer=config["structure"]["layer"],
        n_fourier=config["cache"]["max_number"],
        compat=config["compat"],
    ),
)


figure_rule(
    "fig_fourier_pc1",
    "fig02_fourier_pc1",
    [STRUCTURE["spectrum"], STRUCTURE["pc1"]],
    f"{STRUCTURE_FIGURES}:fig02_fourier_pc1",
    "structure",
)
figure_rule(
    "fig_fourier_360_vs_361",
    "figB1_fourier_360_vs_361",
    [STRUCTURE["spectrum"]],
    f"{STRUCTURE_FIGURES}:figB1_fourier_360_vs_361",
    "structure",
    n=config["cache"]["max_number"],
)
figure_rule(
    "fig_distance_similarity",
    "figB2_distance_similarity",
    [STRUCTURE["similarity"]],
    f"{STRUCTURE_FIGURES}:figB2_distance_similarity",
    "structure",
    layer=config["structure"]["layer"],
)
figure_rule(
    "fig_delta_n_distance",
    "figB3_delta_n_distance",
    [STRUCTURE["delta_n"]],
    f"{STRUCTURE_FIGURES}:figB3_delta_n_distance",
    "structure",
    layer=config["structure"]["layer"],
)
figure_rule(
    "fig_pc1_360",
    "figB4_pc1_360",
    [STRUCTURE["pc1"]],
    f"{STRUCTURE_FIGURES}:figB4_pc1_360",
    "structure",
    layer=config["structure"]["layer"],
)
register(*table("fourier_peaks"))

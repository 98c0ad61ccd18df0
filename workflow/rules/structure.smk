# Stage 4 - structure of numbers (paper section 4.1, appendix B): bare number tokens at the
# output of layer 0 - Fourier spectrum, PC1, distances.  Reads the cache, not the model.

STRUCTURE = {k: f"results/{{model}}/structure/{k}.csv" for k in ("spectrum", "pc1", "similarity", "delta_n")}


rule number_structure:
    input:
        "results/{model}/cache/residuals.h5",
    output:
        **STRUCTURE,
        peaks=table("fourier_peaks")[0],
        peaks_md=table("fourier_peaks")[1],
    log:
        "logs/{model}/number_structure.log",
    benchmark:
        "logs/{model}/number_structure.benchmark.tsv"
    params:
        layer=config["structure"]["layer"],
        n_fourier=config["cache"]["max_number"],
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/number_structure.py"


rule fig_fourier_pc1:
    input:
        STRUCTURE["spectrum"],
        STRUCTURE["pc1"],
    output:
        report(figure("fig02_fourier_pc1")[0], caption="../report/fig02.rst", category="Structure of numbers"),
        figure("fig02_fourier_pc1")[1],
    log:
        "logs/{model}/fig_fourier_pc1.log",
    benchmark:
        "logs/{model}/fig_fourier_pc1.benchmark.tsv"
    params:
        n=config["cache"]["max_number"],
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/fig_fourier_pc1.py"


rule fig_fourier_360_vs_361:
    input:
        STRUCTURE["spectrum"],
    output:
        figure("figB1_fourier_360_vs_361"),
    log:
        "logs/{model}/fig_fourier_360_vs_361.log",
    benchmark:
        "logs/{model}/fig_fourier_360_vs_361.benchmark.tsv"
    params:
        n=config["cache"]["max_number"],
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/fig_fourier_360_vs_361.py"


rule fig_distance_similarity:
    input:
        STRUCTURE["similarity"],
    output:
        figure("figB2_distance_similarity"),
    log:
        "logs/{model}/fig_distance_similarity.log",
    benchmark:
        "logs/{model}/fig_distance_similarity.benchmark.tsv"
    params:
        layer=config["structure"]["layer"],
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/fig_distance_similarity.py"


rule fig_delta_n_distance:
    input:
        STRUCTURE["delta_n"],
    output:
        figure("figB3_delta_n_distance"),
    log:
        "logs/{model}/fig_delta_n_distance.log",
    benchmark:
        "logs/{model}/fig_delta_n_distance.benchmark.tsv"
    params:
        layer=config["structure"]["layer"],
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/fig_delta_n_distance.py"


rule fig_pc1_360:
    input:
        STRUCTURE["pc1"],
    output:
        figure("figB4_pc1_360"),
    log:
        "logs/{model}/fig_pc1_360.log",
    benchmark:
        "logs/{model}/fig_pc1_360.benchmark.tsv"
    params:
        layer=config["structure"]["layer"],
    conda:
        "../../envs/helixclock.yaml"
    script:
        "../../scripts/fig_pc1_360.py"


register(*table("fourier_peaks"))
for _fig in ("fig02_fourier_pc1", "figB1_fourier_360_vs_361", "figB2_distance_similarity",
             "figB3_delta_n_distance", "figB4_pc1_360"):
    register(*figure(_fig))

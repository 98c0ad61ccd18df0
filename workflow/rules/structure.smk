# Stage 4 - structure of numbers (paper section 4.1, appendix B): bare number tokens at the
# output of layer 0 - Fourier spectrum, PC1, distances.  Reads the cache, not the model.
# helixclock.stages.structure

STRUCTURE_FIGURES = "helixclock.stages.structure.figures"


rule number_structure:
    """The bare numbers' Fourier spectrum, PC1 and distances at every layer, and the spectrum's peaks (table)."""
    input:
        cache=outputs.CACHE,
    output:
        **outputs.STRUCTURE,
        peaks=table("fourier_peaks", stage="structure")[0],
        peaks_md=table("fourier_peaks")[1],
    log:
        outputs.log("number_structure"),
    benchmark:
        outputs.benchmark("number_structure")
    conda:
        ENV
    resources:
        mem_mb=cache_memory,
        runtime=cpu_runtime,
    params:
        layer=per_model("structure", "layer"),
        n_fourier=config["cache"]["largest_bare_number"],
        compat=config["compat"],
    script:
        "../../scripts/number_structure.py"


rule number_bases:
    """Which basis explains a number's last token at every layer: the competing bases' held-out R^2."""
    input:
        cache=outputs.CACHE,
    output:
        **outputs.NUMBER_BASES,
    log:
        outputs.log("number_bases"),
    benchmark:
        outputs.benchmark("number_bases")
    conda:
        ENV
    resources:
        mem_mb=cache_memory,
        runtime=cpu_runtime,
    params:
        periods=config["helix"]["periods"],
        n_fourier=config["cache"]["largest_bare_number"],
        bootstrap=config["helix"]["bootstrap"],
        seed=config["seed"],
        # the layers a registry entry sets by hand (structure.layer, helix.figure_layer): the rule's, checked
        registry_layers=lambda w: settled(
            {
                s: {k: REGISTRY[w.model][s][k]}
                for s, k in (("structure", "layer"), ("helix", "figure_layer"))
                if k in REGISTRY[w.model].get(s, {})
            }
        ),
    script:
        "../../scripts/number_bases.py"


use rule figure as fig_number_bases with:
    """Fig. N1 (helixclock's): which basis a number's last token encodes, held-out R^2 by layer."""
    input:
        outputs.NUMBER_BASES["r2"],
        outputs.NUMBER_BASES["winner"],
        outputs.NUMBER_BASES["peaks"],
        outputs.NUMBER_BASES["nested"],
    output:
        figure_files("figN1_number_bases", "structure"),
    log:
        outputs.log("fig_number_bases"),
    benchmark:
        outputs.benchmark("fig_number_bases")
    localrule: True
    params:
        function=f"{STRUCTURE_FIGURES}:figN1_number_bases",


use rule figure as fig_fourier_pc1 with:
    """Fig. 2: the spectrum of the layer-0 output over the numbers 0..n-1, and PC1 of 0..99 against a."""
    input:
        outputs.STRUCTURE["spectrum"],
        outputs.STRUCTURE["pc1"],
    output:
        figure_files("fig02_fourier_pc1", "structure"),
    log:
        outputs.log("fig_fourier_pc1"),
    benchmark:
        outputs.benchmark("fig_fourier_pc1")
    localrule: True
    params:
        function=f"{STRUCTURE_FIGURES}:fig02_fourier_pc1",


use rule figure as fig_fourier_360_vs_361 with:
    """Fig. B1: the spectrum over n numbers against n+1."""
    input:
        outputs.STRUCTURE["spectrum"],
    output:
        figure_files("figB1_fourier_360_vs_361", "structure"),
    log:
        outputs.log("fig_fourier_360_vs_361"),
    benchmark:
        outputs.benchmark("fig_fourier_360_vs_361")
    localrule: True
    params:
        function=f"{STRUCTURE_FIGURES}:figB1_fourier_360_vs_361",
        kwargs=each_model(n=config["cache"]["largest_bare_number"]),


use rule figure as fig_distance_similarity with:
    """Fig. B2: Euclidean distance and cosine similarity between every pair of numbers a1, a2."""
    input:
        outputs.STRUCTURE["similarity"],
    output:
        figure_files("figB2_distance_similarity", "structure"),
    log:
        outputs.log("fig_distance_similarity"),
    benchmark:
        outputs.benchmark("fig_distance_similarity")
    localrule: True
    params:
        function=f"{STRUCTURE_FIGURES}:figB2_distance_similarity",
        kwargs=each_model(layer=per_model("structure", "layer")),


use rule figure as fig_delta_n_distance with:
    """Fig. B3: mean distance between a and a+dn against dn, for two ranges of a."""
    input:
        outputs.STRUCTURE["delta_n"],
    output:
        figure_files("figB3_delta_n_distance", "structure"),
    log:
        outputs.log("fig_delta_n_distance"),
    benchmark:
        outputs.benchmark("fig_delta_n_distance")
    localrule: True
    params:
        function=f"{STRUCTURE_FIGURES}:figB3_delta_n_distance",
        kwargs=each_model(layer=per_model("structure", "layer")),


use rule figure as fig_pc1_360 with:
    """Fig. B4: PC1 over every cached number (the paper sees a jump at 100)."""
    input:
        outputs.STRUCTURE["pc1"],
    output:
        figure_files("figB4_pc1_360", "structure"),
    log:
        outputs.log("fig_pc1_360"),
    benchmark:
        outputs.benchmark("fig_pc1_360")
    localrule: True
    params:
        function=f"{STRUCTURE_FIGURES}:figB4_pc1_360",
        kwargs=each_model(layer=per_model("structure", "layer")),


register(*table("fourier_peaks"))
register(*outputs.NUMBER_BASES.values())

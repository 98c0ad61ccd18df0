# The numbers config key compat changes, under each mode run (docs/differences.md, "Differences from the
# authors' code").  Run once with --config compat=authors and once without: the table then
# holds both.  helixclock.stages.report.compat

COMPAT_MODES = ("corrected", "authors")


rule compat_numbers:
    """The numbers config key compat changes, under this run's mode."""
    input:
        tab01=table("tab01_other_tasks")[0],
        best=outputs.HELIX_SUMMARY["best"],
        peaks=table("fourier_peaks")[0],
        head_topk=outputs.HEADS_SUMMARY["topk"],
        mlp_topk=outputs.MLPS_SUMMARY["mlp_topk"],
        mixed=outputs.HEADS_SUMMARY["mixed"],
        categories=table("tabD1_head_categories")[0],
        last_token=outputs.LAST_TOKEN_SUMMARY["fits"],
    output:
        outputs.compat(config["compat"]),
    log:
        outputs.log("compat_numbers"),
    localrule: True
    conda:
        ENV
    params:
        compat=config["compat"],
        spectrum_main=config["cache"]["largest_bare_number"] + (1 if config["compat"] == "authors" else 0),
    script:
        "../../scripts/compat_numbers.py"


rule compat_effects:
    """The numbers config key compat changes, under every mode run so far, side by side."""
    input:
        outputs.compat(config["compat"]),
    output:
        table("compat_effects", stage="report"),
    log:
        outputs.log("compat_effects"),
    localrule: True
    conda:
        ENV
    params:
        modes=lambda w: [outputs.compat(m, w.model) for m in COMPAT_MODES],
    script:
        "../../scripts/compat_effects.py"


register(*table("compat_effects"))

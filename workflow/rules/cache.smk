# Stage 3 - residual cache: resid_pre of the correct a+b prompts at the a, b and last
# tokens, and of the bare numbers 0..cache.largest_bare_number, at every layer (HDF5).


rule residual_cache:
    """resid_pre of the correct a+b prompts at the a, b and last tokens and of the bare numbers, every layer (HDF5)."""
    input:
        card=outputs.CARD,
        weights=model_weights,
        accuracy=outputs.ADD_ACCURACY,
        _current=current("residual_cache"),
    output:
        **staged("residual_cache", cache=outputs.CACHE),
    log:
        outputs.log("residual_cache-{params_hash}"),
    benchmark:
        outputs.benchmark("residual_cache-{params_hash}")
    conda:
        ENV
    threads: 2
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        **MODEL_JOB_PARAMS,
        minimum=minimum("correct_prompts"),
        dtype=config["cache"]["dtype"],
        largest_bare_number=config["cache"]["largest_bare_number"],
    script:
        "../../scripts/residual_cache.py"


use rule publish as publish_residual_cache with:
    """Moves residual_cache's cache into place once it has succeeded."""
    input:
        unpack(published("residual_cache")),
    output:
        cache=outputs.CACHE,
    log:
        outputs.log("publish_residual_cache"),
    localrule: True


register(outputs.CACHE)

# Stage 3 - residual cache: resid_pre of the correct a+b prompts at the a, b and last
# tokens, and of the bare numbers 0..max_number, at every layer (HDF5).


rule residual_cache:
    input:
        card="results/{model}/model.json",
        weights=model_weights,
        accuracy="results/{model}/accuracy/add.csv",
    output:
        "results/{model}/cache/residuals.h5",
    log:
        "logs/{model}/residual_cache.log",
    benchmark:
        "logs/{model}/residual_cache.benchmark.tsv"
    params:
        **model_job_params(),
        minimum=settled(config["minimum"]),
        dtype=config["cache"]["dtype"],
        max_number=config["cache"]["max_number"],
    threads: 2
    resources:
        gpu=1,
    conda:
        ENV
    script:
        "../../scripts/residual_cache.py"


register("results/{model}/cache/residuals.h5")

# Stage 3 - residual cache: resid_pre of the correct a+b prompts at the a, b and last
# tokens, and of the bare numbers 0..cache.largest_bare_number, at every layer (HDF5).


model_job(
    "residual_cache",
    output={"cache": outputs.CACHE},
    params=dict(
        minimum=minimum("correct_prompts"),
        dtype=config["cache"]["dtype"],
        largest_bare_number=config["cache"]["largest_bare_number"],
    ),
)


register(outputs.CACHE)

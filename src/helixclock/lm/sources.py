"""Where a registered model's weights come from (config/README.md, key ``source``): the kind of
its source, what transformers' ``from_pretrained`` loads for it, and the settings that decide a
toy's checkpoint (what a committed checkpoint is compared with).

Imports nothing beyond the standard library and :mod:`helixclock.project.outputs`: the DAG's build reads it.
"""

from __future__ import annotations

from pathlib import Path

from ..project.outputs import CONVERTED_GGUF, MODEL_FILES

TOY_SOURCE = "toy"
PACKAGE_SOURCE = "python-package:"  # a GGUF inside an installed Python package


def source_kind(source: str) -> str:
    """'toy', 'package' (a GGUF inside an installed package), 'gguf' (a local .gguf file),
    'local' (a local directory of transformers' files: one that exists, or a path that starts
    with /, ./ or ../) or 'hub' (a Hugging Face hub id, owner/name)."""
    if source == TOY_SOURCE:
        return "toy"
    if source.startswith(PACKAGE_SOURCE):
        return "package"
    if source.endswith(".gguf"):
        return "gguf"
    if source.startswith(("/", "./", "../", "~")) or Path(source).is_dir():
        return "local"
    return "hub"


def model_files(name: str, spec: dict, resources: str | Path = MODEL_FILES) -> tuple[str, dict]:
    """(path, keyword arguments) for transformers' ``from_pretrained``: a GGUF file is loaded
    from its directory with ``gguf_file=`` (transformers dequantises it to float); a package's
    GGUF from what the install_gguf job converted it to (:func:`helixclock.lm.models.convert_gguf`);
    a hub model at its registry ``revision`` from the local cache alone (``local_files_only``:
    rule download_model fills the cache on the submit host, and no other job reaches the hub)."""
    kind = source_kind(spec["source"])
    if kind == "toy":
        return str(Path(resources) / name), {}
    if kind == "package":
        return str(Path(resources) / name / CONVERTED_GGUF), {}
    if kind == "gguf":
        path = Path(spec["source"])
        return str(path.parent), {"gguf_file": path.name}
    if kind == "hub":
        return spec["source"], {"revision": spec.get("revision"), "local_files_only": True}
    return spec["source"], {}


def model_resources(weights) -> str:
    """The folder :func:`model_files` finds a toy's or a package's model in, from the record a
    job reads as its input ``weights`` (a path, or a list of one or none): the record's folder's
    parent (the project's resources/models, or for a committed toy the checkout's resources/toys);
    resources/models where a job has no such record."""
    if weights is not None and not isinstance(weights, (str, Path)):
        weights = next(iter(weights), None)
    return str(Path(weights).parent.parent) if weights else MODEL_FILES


# Training keys of a toy: with the registry entry, what decides its weights
TOY_TRAINING_KEYS = ("steps", "batch_size", "lr", "weight_decay", "warmup", "holdout", "seed", "threads")


def toy_settings(spec: dict, training: dict) -> dict:
    """Everything that decides a toy's weights, as its training.json records it: the registry
    entry and ``training`` (every key of :data:`TOY_TRAINING_KEYS`; helixclock.lm.toy.toy_settings
    fills the defaults of a partial one).  Without torch: the DAG compares it with a committed
    checkpoint's record."""
    arch = {k: v for k, v in spec["toy"].items() if k not in TOY_TRAINING_KEYS}
    return {
        "family": spec["family"],
        "number_limit": spec.get("number_limit", 399),
        "prompts": dict(spec["prompts"]),
        "architecture": arch,
        **{k: training[k] for k in TOY_TRAINING_KEYS},
    }

"""Loading and validating the pipeline config and the model registry.

Both files are checked against the JSON schemas in ``workflow/schemas/`` before any job
runs.  Errors name the key, the value found and what is allowed, e.g.::

    config key 'cache.dtype': value 'float8' is not one of the allowed values
    float16, float32

This module imports no torch, so the Snakefile can use it while building the DAG.
"""

from __future__ import annotations

import copy
import string
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..prompts.layout import NumberTokens
from .families import FAMILIES as _FAMILY_TABLE
from .sources import PACKAGE_SOURCE, TOY_SOURCE, source_kind

REPO = Path(__file__).resolve().parents[3]
SCHEMAS = REPO / "workflow" / "schemas"
FAMILIES = tuple(_FAMILY_TABLE)  # architecture families with an adapter (families.py, whose table imports no torch)


class ConfigError(ValueError):
    """The config or the model registry is invalid; the message says where and why."""


def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"file not found: {path}")
    with open(path) as fh:
        return yaml.safe_load(fh)


def _key(path) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "<top level>"


def _format_error(err, what: str) -> str:
    key = _key(err.absolute_path)
    v = err.validator
    if v == "enum":
        allowed = ", ".join(str(x) for x in err.validator_value)
        return f"{what} key '{key}': value {err.instance!r} is not one of the allowed values {allowed}"
    if v == "required":
        missing = [k for k in err.validator_value if k not in (err.instance or {})]
        where = f" under '{key}'" if err.absolute_path else ""
        return f"{what} is missing required key(s) {', '.join(missing)}{where}"
    if v == "additionalProperties":
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        where = f"'{key}'" if err.absolute_path else "the top level"
        return f"{what} has unknown key(s) {', '.join(map(repr, extra))} at {where}; allowed keys: {allowed}"
    if v == "type":
        return f"{what} key '{key}': value {err.instance!r} should be of type {err.validator_value}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{what} key '{key}': value {err.instance!r} violates {v} {err.validator_value}"
    if v == "pattern":
        return f"{what} key '{key}': value {err.instance!r} does not match {err.validator_value!r}"
    return f"{what} key '{key}': {err.message}"


def _defaults(schema: dict, instance: Any) -> Any:
    """Fill schema defaults into a copy of ``instance`` (objects only, recursively)."""
    if schema.get("type") != "object" or not isinstance(instance, dict):
        return instance
    out = dict(instance)
    for name, sub in schema.get("properties", {}).items():
        if name not in out and "default" in sub:
            out[name] = copy.deepcopy(sub["default"])
        if name in out:
            out[name] = _defaults(sub, out[name])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for name in out:
            if name not in schema.get("properties", {}):
                out[name] = _defaults(extra, out[name])
    return out


def _coerce(schema: dict, value: Any) -> Any:
    """Turn strings into the numbers or booleans the schema asks for: Snakemake's --config
    hands over values nested in a dict (--config helix='{"n_pairs": 50}') as strings."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {k: _coerce(props.get(k, extra if isinstance(extra, dict) else {}), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_coerce(schema.get("items", {}), v) for v in value]
    if isinstance(value, str) and schema.get("type") in ("integer", "number", "boolean"):
        parsed = yaml.safe_load(value)
        if isinstance(parsed, (int, float, bool)):
            return parsed
    return value


def validate(instance: Any, schema_file: str | Path, what: str) -> Any:
    """Validate against a YAML JSON-schema; return the instance with defaults filled."""
    schema = load_yaml(schema_file)
    instance = _defaults(schema, _coerce(schema, instance if instance is not None else {}))
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        deepest = max(errors, key=lambda e: len(e.absolute_path))
        raise ConfigError(_format_error(_leaf(deepest), what))
    return instance


def _leaf(err):
    """For oneOf/anyOf errors, descend to the most specific cause."""
    while err.context:
        err = max(err.context, key=lambda e: len(e.absolute_path))
    return err


# Training keys a registry entry's toy section may set for its model (the rest is architecture)
REGISTRY_TRAINING_KEYS = ("steps", "lr", "weight_decay", "batch_size", "warmup")


def training_settings(toy_config: dict, spec: dict) -> dict:
    """The keyword arguments of :func:`helixclock.lm.toy.train_toy` for a registry entry: config
    key ``toy``, overridden by the training keys of the entry's ``toy`` section."""
    own = {k: v for k, v in spec["toy"].items() if k in REGISTRY_TRAINING_KEYS}
    return {**toy_config, **own}


# Keys with a new name: the old one is refused with what it is called now (config/README.md)
RENAMED_CONFIG_KEYS = {
    ("cache", "max_number"): "cache.largest_bare_number",  # the largest bare number the cache holds
}
RENAMED_REGISTRY_KEYS = {
    "max_number": "number_limit",  # the largest number a model is studied with (one token each, where it is one)
}


def _refuse_renamed(config: dict, registry: dict | None = None) -> None:
    """A :class:`ConfigError` for a key used under its old name: which key, what it is called now."""
    for (section, key), new in RENAMED_CONFIG_KEYS.items():
        if isinstance(config.get(section), dict) and key in config[section]:
            raise ConfigError(
                f"config key '{section}.{key}' is now called '{new}' (same meaning); rename it "
                f"(registry key 'max_number', the model's own limit, is now 'number_limit')"
            )
    for name, spec in (registry or {}).items():
        for key, new in RENAMED_REGISTRY_KEYS.items():
            if isinstance(spec, dict) and key in spec:
                raise ConfigError(
                    f"registry key '{name}.{key}' is now called '{name}.{new}' (same meaning); rename it "
                    f"(config key 'cache.max_number', the cache's range, is now 'cache.largest_bare_number')"
                )


def load_registry(path: str | Path) -> dict:
    reg = load_yaml(path)
    if not isinstance(reg, dict) or not reg:
        raise ConfigError(f"model registry {path} must map model names to specs")
    _refuse_renamed({}, reg)
    return validate(reg, SCHEMAS / "models.schema.yaml", "model registry")


def check_config(
    config: dict,
    registry_path: str | Path | None = None,
    schema_dir: str | Path | None = None,
    base: str | Path | None = None,
) -> tuple[dict, dict]:
    """Validate the pipeline config and registry together; return both with defaults.

    A relative registry path is the project folder's file where it has one, else the workflow's
    own (``base``: the Snakefile's folder, workflow.basedir; helixclock's checkout by default), so
    a variant run in a folder of its own (``--directory runs/<variant>``) reads the checkout's.
    Raises :class:`ConfigError` naming the key and value at fault; an unknown model
    name lists the registered ones.
    """
    schemas = Path(schema_dir) if schema_dir else SCHEMAS
    _refuse_renamed(config or {})
    config = validate(config, schemas / "config.schema.yaml", "config")
    reg_path = Path(registry_path or config["registry"])
    if not reg_path.is_absolute() and not reg_path.exists():
        reg_path = Path(base or REPO) / reg_path
    registry = load_registry(reg_path)
    for name in config["models"]:
        if name not in registry:
            raise ConfigError(
                f"config key 'models': unknown model {name!r}; known models: {', '.join(sorted(registry))}"
            )
    for name, spec in registry.items():
        missing = [t for t in config["accuracy"]["tasks"] if t not in spec["prompts"]]
        if missing and name in config["models"]:
            raise ConfigError(
                f"registry key '{name}.prompts': no prompt for task(s) "
                f"{', '.join(missing)} (tasks come from config key 'accuracy.tasks')"
            )
        if spec["source"] == TOY_SOURCE and "toy" not in spec:
            raise ConfigError(
                f"registry key '{name}': source 'toy' needs a 'toy' "
                "section with the architecture (d_model, n_layers, n_heads)"
            )
    check_settings(config, registry)
    return config, registry


# -- what the config and the registry tell without a model or a tokenizer ------------------------
# Every check a job would otherwise make on its own settings, made while the DAG is built, so
# that a rejected setting costs no job (docs/running.md, "When a run fails").
FEWEST_NUMBERS = 99  # the schema's minimum of cache.largest_bare_number: App. E's line and Fig. 2's PC1 read 0..99
OPERANDS = {"add": ("a", "b")}  # every other task has the one operand a


def check_prompt(name: str, task: str, template: str, key: str | None = None) -> None:
    """A prompt template has exactly its task's placeholders ({a} and {b} for a+b, {a} alone
    for the other tasks and for the bare numbers' ``number_prompt``), each once, no other
    field, and braces that ``str.format`` accepts."""
    key = key or f"registry key '{name}.prompts.{task}'"
    wanted = OPERANDS.get(task, ("a",))
    allowed = ", ".join("{" + w + "}" for w in wanted)
    try:
        fields = [
            (f, f"{{{f}{'!' + conv if conv else ''}{':' + spec if spec else ''}}}")
            for _, f, spec, conv in string.Formatter().parse(template)
            if f is not None
        ]
    except ValueError as err:
        raise ConfigError(
            f"{key}: value {template!r} has unmatched braces ({err}); allowed: the "
            f"placeholders {allowed} and text without braces"
        ) from None
    for field, written in fields:
        if field not in wanted or written != "{" + field + "}":
            raise ConfigError(f"{key}: value {template!r} has the unknown placeholder {written}; allowed: {allowed}")
    names = [field for field, _ in fields]
    for w in wanted:
        if names.count(w) != 1:
            problem = "lacks the placeholder" if w not in names else f"repeats ({names.count(w)} times) the placeholder"
            raise ConfigError(
                f"{key}: value {template!r} {problem} {{{w}}}; a prompt of task {task} needs {allowed}, each once"
            )


def _toy_checks(name: str, spec: dict, config: dict) -> None:
    """Shape checks a toy's registry entry makes possible: its architecture, and the layers
    and top neurons the config asks of it."""
    arch = spec["toy"]
    key = f"registry key '{name}.toy"
    if arch["d_model"] % arch["n_heads"]:
        raise ConfigError(
            f"{key}.n_heads': value {arch['n_heads']} does not divide d_model "
            f"{arch['d_model']}; allowed: a divisor of d_model"
        )
    if spec.get("family") == "llama" and arch["n_heads"] % arch.get("n_kv_heads", arch["n_heads"]):
        raise ConfigError(
            f"{key}.n_kv_heads': value {arch['n_kv_heads']} does not divide n_heads "
            f"{arch['n_heads']}; allowed: a divisor of n_heads"
        )
    top = arch["n_layers"]
    for section, key in (("structure", "layer"), ("helix", "figure_layer")):
        value = spec.get(section, {}).get(key, config[section][key])  # the registry's overrides the config's
        cfg_key = f"{section}.{key}"
        if value > top:
            raise ConfigError(
                f"config key '{cfg_key}': value {value} is past the residual stream of model "
                f"{name!r}; allowed: 0..{top} (resid_pre[{top}] is its final residual)"
            )
    neurons = arch["n_layers"] * arch.get("d_mlp", 4 * arch["d_model"])
    share = {**config["neurons"], **spec.get("neurons", {})}["top_share"]
    n_top = max(1, int(share * neurons))
    ranks = config["neurons"]["figure_ranks"]
    if max(ranks) >= n_top:
        raise ConfigError(
            f"config key 'neurons.figure_ranks': value {ranks} asks for rank {max(ranks)} but "
            f"model {name!r} has {n_top} top neurons{' per place' if NumberTokens.of(spec).several else ''} "
            f"(top_share {share:g} of {neurons}); "
            f"allowed: ranks 0..{n_top - 1}"
        )


def check_settings(config: dict, registry: dict) -> None:
    """Raise :class:`ConfigError` for a setting that would fail inside a job but needs no model
    or tokenizer to tell: the cache's numbers against each model's registry ``number_limit``,
    prompt placeholders, settings that contradict each other, a toy's architecture."""
    tasks = config["accuracy"]["tasks"]
    for key, values in (
        ("models", config["models"]),
        ("accuracy.tasks", tasks),
        ("helix.periods", config["helix"]["periods"]),
        ("clock.corrupt", config["clock"]["corrupt"]),
    ):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ConfigError(
                f"config key '{key}': value {values} names {', '.join(map(str, twice))} more than "
                "once; allowed: each at most once"
            )
    if "add" not in tasks:
        raise ConfigError(
            f"config key 'accuracy.tasks': value {tasks} lacks 'add'; every stage after the "
            "accuracy sweep studies a+b, so the list must include add"
        )
    largest = config["cache"]["largest_bare_number"]
    neurons = config["neurons"]
    if neurons["de_pairs"] > neurons["attribution_pairs"]:
        raise ConfigError(
            f"config key 'neurons.de_pairs': value {neurons['de_pairs']} is more than the "
            f"{neurons['attribution_pairs']} attribution pairs it is taken from; allowed: at most "
            "neurons.attribution_pairs"
        )
    for name in config["models"]:
        spec = registry[name]
        limit = spec.get("number_limit")
        if limit is not None and largest > limit:
            kept = "checks in its number prompt" if NumberTokens.of(spec).several else "keeps as one token"
            raise ConfigError(
                f"config key 'cache.largest_bare_number': value {largest} is more than model {name!r} "
                f"{kept} (registry key '{name}.number_limit': {limit}); allowed: {FEWEST_NUMBERS}..{limit}"
            )
        for task in tasks:
            check_prompt(name, task, spec["prompts"][task])
        check_prompt(name, "number", spec.get("number_prompt", "{a}"), key=f"registry key '{name}.number_prompt'")
        if spec.get("layer_step", 1) > 1 and not NumberTokens.of(spec).several:
            raise ConfigError(
                f"registry key '{name}.layer_step': value {spec['layer_step']} thins Fig. 6's layers, from "
                "which the MLP stage of a one-token model chooses its circuit MLPs; allowed: 1, or a model "
                "with number_tokens: several (whose MLP stage measures the MLPs the grid skips)"
            )
        if source_kind(spec["source"]) == "package":
            package_source(name, spec["source"])
        if "revision" in spec and source_kind(spec["source"]) != "hub":
            raise ConfigError(
                f"registry key '{name}.revision': value {spec['revision']!r} is for a model of the Hugging Face "
                f"hub, and source {spec['source']!r} is a {source_kind(spec['source'])} model; allowed: no revision "
                "(or a hub id as the source)"
            )
        if spec["source"] == TOY_SOURCE:
            _toy_checks(name, spec, config)


def package_source(name: str, source: str) -> tuple[str, str, str]:
    """(module, "file" or "function", path inside the package or function name) of a
    'python-package:MODULE/PATH.gguf' or 'python-package:MODULE:FUNCTION' source."""
    body = source[len(PACKAGE_SOURCE) :]
    if ":" in body:
        module, function = body.split(":", 1)
        if module and function.isidentifier():
            return module, "function", function
    elif "/" in body:
        module, path = body.split("/", 1)
        if module and path.endswith(".gguf"):
            return module, "file", path
    raise ConfigError(
        f"registry key '{name}.source': value {source!r} is not a package source; allowed: "
        f"'{PACKAGE_SOURCE}MODULE/PATH.gguf' (a file of the package) or '{PACKAGE_SOURCE}MODULE:FUNCTION' "
        "(a function that writes the GGUF to the path it is given)"
    )

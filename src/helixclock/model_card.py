"""A model's card: family, shape and token positions, checked without a forward pass."""

from __future__ import annotations

from .config import FAMILIES, ConfigError, UnsupportedFamilyError, detect_family, model_dir
from .tasks import check_all_tasks, number_token_ids


def model_card(name: str, spec: dict, tasks, max_number: int,
               resources: str = "resources/models") -> dict:
    """Load config and tokenizer only; check every task's numbers and the bare numbers
    0..max_number are single tokens; return what later stages need to know."""
    from transformers import AutoConfig, AutoTokenizer

    path = model_dir(name, spec, resources)
    cfg = AutoConfig.from_pretrained(path)
    family = detect_family(cfg)
    if spec.get("family") and spec["family"] != family:
        raise UnsupportedFamilyError(f"model {name!r}: registry says family {spec['family']!r}, "
                                     f"its config says {family!r} (supported: {', '.join(FAMILIES)})")
    if spec.get("max_number") is not None and spec["max_number"] < max_number:
        raise ConfigError(f"config key 'cache.max_number' is {max_number} but model {name!r} keeps "
                          f"only numbers up to {spec['max_number']} as one token (registry key "
                          f"'{name}.max_number')")
    tokenizer = AutoTokenizer.from_pretrained(path)
    positions = check_all_tasks(tokenizer, name, spec["prompts"], tasks)
    number_ids = number_token_ids(tokenizer, name, list(range(max_number + 1)))
    return {
        "model": name, "source": spec["source"], "path": str(path), "family": family,
        "dtype": spec.get("dtype", "float32"),
        "n_layers": int(cfg.num_hidden_layers), "n_heads": int(cfg.num_attention_heads),
        "d_model": int(cfg.hidden_size),
        "positions": {t: p.as_dict() for t, p in positions.items()},
        "number_length": len(number_ids[0]),
        "prompts": {t: spec["prompts"][t] for t in tasks},
    }

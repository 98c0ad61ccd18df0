"""A model's card: family, shape and token positions, checked without a forward pass."""

from __future__ import annotations

from .config import FAMILIES, UnsupportedFamilyError, detect_family, model_dir
from .tasks import check_all_tasks, number_token_ids, single_token_limit

SCAN_NUMBERS = 999  # how far the card looks for single-token numbers when the registry gives no max_number


def model_card(name: str, spec: dict, tasks, resources: str = "resources/models") -> dict:
    """Load config and tokenizer only; check every task's numbers are single tokens, and the
    bare numbers 0..the registry's ``max_number`` (or find how far they are, up to
    :data:`SCAN_NUMBERS`, when the entry gives none); return what later stages need to know.

    The card describes the model: only its registry entry and the task list go into it, so no
    other run setting remakes it (and reruns what reads it)."""
    from transformers import AutoConfig, AutoTokenizer

    path = model_dir(name, spec, resources)
    cfg = AutoConfig.from_pretrained(path)
    family = detect_family(cfg)
    if spec.get("family") and spec["family"] != family:
        raise UnsupportedFamilyError(
            f"model {name!r}: registry says family {spec['family']!r}, "
            f"its config says {family!r} (supported: {', '.join(FAMILIES)})"
        )
    tokenizer = AutoTokenizer.from_pretrained(path)
    positions = check_all_tasks(tokenizer, name, spec["prompts"], tasks)
    max_number = spec.get("max_number")
    if max_number is None:
        max_number = single_token_limit(tokenizer, SCAN_NUMBERS)
    number_ids = number_token_ids(tokenizer, name, list(range(max_number + 1)))
    return {
        "model": name,
        "source": spec["source"],
        "path": str(path),
        "family": family,
        "dtype": spec.get("dtype", "float32"),
        "n_layers": int(cfg.num_hidden_layers),
        "n_heads": int(cfg.num_attention_heads),
        "d_model": int(cfg.hidden_size),
        "positions": {t: p.as_dict() for t, p in positions.items()},
        "number_length": len(number_ids[0]),
        "max_number": int(max_number),
        "prompts": {t: spec["prompts"][t] for t in tasks},
    }

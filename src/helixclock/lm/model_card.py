"""A model's card: family, shape and token positions, checked without a forward pass."""

from __future__ import annotations

from ..environment.provenance import environment
from ..project.outputs import MODEL_FILES
from ..prompts.layout import NumberTokens
from ..prompts.numbers import describe_classes, number_prompt_tokens, several_task_tokens, task_shapes
from ..prompts.tasks import TokenisationError, check_all_tasks, get_task, number_token_ids, single_token_limit
from .config import FAMILIES
from .families import UnsupportedFamilyError, detect_family
from .sources import model_files, source_kind

SCAN_NUMBERS = 999  # how far the card looks for single-token numbers when the registry gives no number_limit
SEVERAL_NUMBER_LIMIT = 360  # the bare numbers a model of several-token numbers is checked on without number_limit


def load_tokenizer(name: str, spec: dict, resources: str = MODEL_FILES):
    """The tokenizer of a registered model (from a GGUF file where the source is one)."""
    # deferred: transformers (about a second) only where a tokenizer loads, not in a table job of one-token numbers
    from transformers import AutoTokenizer

    path, kwargs = model_files(name, spec, resources)
    return AutoTokenizer.from_pretrained(path, **kwargs)


def tokenizer_task_shapes(name: str, spec: dict, frames: dict, resources: str = MODEL_FILES) -> dict | None:
    """Numbers of several tokens: each task's correct prompts' token shapes
    (:func:`helixclock.prompts.numbers.task_shapes`; ``frames``: task -> accuracy table), from the model's
    tokenizer alone, with which a table job counts the pairs a model job will draw (partners of
    one shape); None where every number is one token (a task's prompts then share one shape)."""
    if not NumberTokens.of(spec).several:
        return None
    return task_shapes(load_tokenizer(name, spec, resources), spec["prompts"], frames)


def model_card(name: str, spec: dict, tasks, resources: str = MODEL_FILES) -> dict:
    """Load config and tokenizer only; check every task's numbers are single tokens, and the
    bare numbers 0..the registry's ``number_limit`` (or find how far they are, up to
    :data:`SCAN_NUMBERS`, when the entry gives none); return what later stages need to know.
    With ``number_tokens: several`` (helixclock's extension) the card records instead, per
    task, the length classes of the prompts and the token spans of the operands (see
    :mod:`helixclock.prompts.numbers`).

    The card describes the model: only its registry entry and the task list go into it, so no
    other run setting remakes it (and reruns what reads it).  It also records the environment
    (:func:`helixclock.environment.provenance.environment`) its model's jobs run on; a change of versions
    does not remake it (a model job then warns)."""
    # deferred: transformers (about a second) only where a tokenizer loads, not in a table job of one-token numbers
    from transformers import AutoConfig

    path, kwargs = model_files(name, spec, resources)
    cfg = AutoConfig.from_pretrained(path, **kwargs)
    family = detect_family(cfg)
    if spec.get("family") and spec["family"] != family:
        raise UnsupportedFamilyError(
            f"model {name!r}: registry says family {spec['family']!r}, "
            f"its config says {family!r} (supported: {', '.join(FAMILIES)})"
        )
    tokenizer = load_tokenizer(name, spec, resources)
    card = {
        "model": name,
        "source": spec["source"],
        "path": str(path),
        **weights_revision(spec),
        "family": family,
        "dtype": spec.get("dtype", "float32"),
        "n_layers": int(cfg.num_hidden_layers),
        "n_heads": int(cfg.num_attention_heads),
        "d_model": int(cfg.hidden_size),
        "vocab": int(cfg.vocab_size),
        "parameters": parameter_count(cfg),  # with dtype, what a job's memory is sized from (helixclock.jobs.placement)
        "prompts": {t: spec["prompts"][t] for t in tasks},
        "number_tokens": spec.get("number_tokens", "one"),
        "environment": environment(),  # the versions the model's jobs run on (docs/running.md, "Provenance of a run")
    }
    if NumberTokens.of(card).several:
        return {**card, **_several(tokenizer, name, spec, tasks)}
    try:
        positions = check_all_tasks(tokenizer, name, spec["prompts"], tasks)
        limit = spec.get("number_limit")
        if limit is None:
            limit = single_token_limit(tokenizer, SCAN_NUMBERS)
        number_ids = number_token_ids(tokenizer, name, list(range(limit + 1)))
    except TokenisationError as err:
        raise TokenisationError(
            f"{err}. helixclock studies such a model as an extension of the paper: set registry key "
            f"'{name}.number_tokens' to 'several' (README, \"Numbers of several tokens\")"
        ) from None
    return {
        **card,
        "positions": {t: p.as_dict() for t, p in positions.items()},
        "spans": {t: _single_spans(p) for t, p in positions.items()},
        "number_length": len(number_ids[0]),
        "number_limit": int(limit),
    }


def weights_revision(spec: dict) -> dict:
    """A hub model's ``revision`` (the registry's; None: the hub's default branch) and the
    ``commit`` it resolved to in the local cache (rule download_model filled it); nothing for a
    model of another source."""
    if source_kind(spec["source"]) != "hub":
        return {}
    # deferred: helixclock.lm.models imports torch, which the card of a model of another source does without
    from .models import hub_commit

    return {"revision": spec.get("revision"), "commit": hub_commit(spec["source"], spec.get("revision"))}


def parameter_count(cfg) -> int:
    """The parameters of the model ``cfg`` describes, counted on PyTorch's meta device (no
    memory, no weights read: a second for a 7B model)."""
    # deferred: torch and transformers' model classes only where a card is made
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    return int(sum(p.numel() for p in model.parameters()))


def _single_spans(p) -> dict:
    """The spans of a single-token model's task (each number one token)."""
    out = {"a": [p.a, p.a + 1], "last": p.last, "answer": [p.length, p.length + 1], "length": p.length}
    if p.b is not None:
        out["b"] = [p.b, p.b + 1]
    return out


def _several(tokenizer, name: str, spec: dict, tasks) -> dict:
    """The card's record of a model whose numbers may take several tokens: per task its length
    classes (operand and answer token counts, how many prompts, one prompt's spans), and the
    bare numbers' token counts."""
    classes = {}
    for task in tasks:
        tokens = several_task_tokens(tokenizer, name, get_task(task), spec["prompts"][task])
        classes[task] = describe_classes(tokens)
    limit = int(spec.get("number_limit", SEVERAL_NUMBER_LIMIT))
    numbers = number_prompt_tokens(tokenizer, name, spec.get("number_prompt", "{a}"), range(limit + 1))
    widths = numbers.spans["a"][:, 1] - numbers.spans["a"][:, 0]
    return {
        "classes": classes,
        "number_prompt": spec.get("number_prompt", "{a}"),
        "number_token_counts": {str(int(w)): int((widths == w).sum()) for w in sorted(set(widths.tolist()))},
        "number_limit": limit,
    }

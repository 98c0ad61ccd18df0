"""Rule residual_cache's model job: resid_pre of correct a+b prompts and of bare numbers, at
every layer, written to HDF5 (layout and reading: :mod:`helixclock.cache`)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import torch

from .io import to_numpy
from .models import LoadedModel
from .numbers import number_prompt_tokens, ordered, padded, several_task_tokens
from .patching import PatchingEngine, Point
from .tasks import check_task_tokens, get_task, number_token_ids, render

LAYER_CONVENTION = (
    "layer l = resid_pre[l], the input of block l; layer n_layers = the final residual (input of the final norm)"
)
POSITIONS = ("a", "b", "last")


def _create(f: h5py.File, name: str, n: int, L1: int, d: int, dtype: str) -> h5py.Dataset:
    return f.create_dataset(name, shape=(n, L1, d), dtype=dtype, chunks=(max(1, min(n, 1024)), 1, d))


def write_residual_cache(
    model: LoadedModel,
    template: str,
    a: np.ndarray,
    b: np.ndarray,
    path: str | Path,
    dtype: str = "float32",
    max_number: int = 360,
    engine: PatchingEngine | None = None,
    number_prompt: str = "{a}",
    several: bool = False,
) -> dict:
    """Run the a+b prompts (a[i], b[i]) and the bare numbers; write the cache to ``path``.

    With numbers of several tokens (``several``) a number is read at the last token of its span
    and rows are stored in the order of their token layouts (``ab`` says which problem each
    row is); the bare numbers sit in ``number_prompt``."""
    engine = engine or PatchingEngine(model)
    task = get_task("add")
    problems = task.problems()
    keep = np.isin(problems.a * 1000 + problems.b, a * 1000 + b)
    problems.a, problems.b, problems.answer = problems.a[keep], problems.b[keep], problems.answer[keep]
    numbers = list(range(max_number + 1))
    prompts = _several_rows if several else _single_rows
    ids, groups, order, pos, where = prompts(model, task, template, problems)
    nums, ngroups, norder, npos, nwhere = (_several_numbers if several else _single_numbers)(
        model, number_prompt, numbers
    )
    L1 = model.adapter.n_layers + 1
    d = model.adapter.d_model
    n = len(problems)
    points = [Point("resid_pre", layer, pos) for layer in range(L1)]
    tmp = Path(str(path) + ".tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(tmp, "w") as f:
        dsets = {k: _create(f, k, n, L1, d, dtype) for k in POSITIONS}
        f.create_dataset("ab", data=np.stack([problems.a, problems.b], 1).astype(np.int64)[order])
        start = 0
        for chunk in engine.iter_collect(ids, points, logits=False, desc="cache a+b", groups=groups):
            stacked = torch.stack([chunk[p] for p in points], 2)  # [B, 3, L1, d]
            stacked = to_numpy(stacked, dtype)
            stop = start + stacked.shape[0]
            for j, k in enumerate(POSITIONS):
                dsets[k][start:stop] = stacked[:, j]
            start = stop
        num = _create(f, "numbers", len(numbers), L1, d, dtype)
        npoints = [Point("resid_pre", layer, npos) for layer in range(L1)]
        values, _ = engine.collect(nums, npoints, logits=False, desc="cache numbers", groups=ngroups)
        num[:] = to_numpy(torch.stack([values[p][:, 0] for p in npoints], 1), dtype)[np.argsort(norder)]
        f["numbers"].attrs["values"] = np.array(numbers)
        attrs = {
            "model": model.name,
            "source": str(model.source),
            "model_dtype": str(model.dtype),
            "dtype": dtype,
            "template": template,
            "example_prompt": render(template, 12, 34),
            **where,
            **nwhere,
            "n_layers": model.adapter.n_layers,
            "d_model": d,
            "family": model.adapter.family,
            "layer_convention": LAYER_CONVENTION,
        }
        f.attrs.update(attrs)
    tmp.replace(path)
    return attrs


def _single_rows(model, task, template, problems):
    """One-token numbers: every prompt has the same positions (attributes position_*)."""
    found = check_task_tokens(model.tokenizer, model.name, task, template, problems, answers=False)
    p = found.positions
    where = {"position_a": p.a, "position_b": p.b, "position_last": p.last, "prompt_length": p.length}
    return torch.from_numpy(found.input_ids), None, np.arange(len(problems)), (p.a, p.b, p.last), where


def _several_rows(model, task, template, problems):
    """Numbers of several tokens: a and b at the last token of their spans, rows grouped by
    layout (positions -1: not shared; attribute number_tokens)."""
    tokens = several_task_tokens(model.tokenizer, model.name, task, template, problems, answers=False)
    order, groups, _ = ordered(tokens)
    ids = torch.from_numpy(padded([tokens.ids[i] for i in order]))
    where = {
        "position_a": -1,
        "position_b": -1,
        "position_last": -1,
        "prompt_length": -1,
        "number_tokens": "several",
        "positions": "a and b: the last token of their spans",
    }
    return ids, groups, order, ("a", "b", "last"), where


def _single_numbers(model, template, numbers):
    ids = torch.tensor(number_token_ids(model.tokenizer, model.name, numbers))
    last = ids.shape[1] - 1
    return ids, None, np.arange(len(numbers)), (last,), {"number_position": last}


def _several_numbers(model, template, numbers):
    tokens = number_prompt_tokens(model.tokenizer, model.name, template, numbers)
    order, groups, _ = ordered(tokens)
    ids = torch.from_numpy(padded([tokens.ids[i] for i in order]))
    return ids, groups, order, ("a",), {"number_position": -1, "number_prompt": template}

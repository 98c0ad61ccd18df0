"""Rule residual_cache's model job: resid_pre of correct a+b prompts and of bare numbers, at
every layer, written to HDF5 (layout and reading: :mod:`helixclock.project.cache`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import h5py
import numpy as np
import torch

from ..lm.models import LoadedModel
from ..patching import PatchingEngine, Point
from ..project.io import to_numpy
from ..prompts.numbers import number_prompt_tokens, ordered, padded, several_task_tokens
from ..prompts.tasks import Problems, Task, check_task_tokens, get_task, number_token_ids, render

LAYER_CONVENTION = (
    "layer l = resid_pre[l], the input of block l; layer n_layers = the final residual (input of the final norm)"
)
POSITIONS = ("a", "b", "last")


def _create(f: h5py.File, name: str, n: int, L1: int, d: int, dtype: str) -> h5py.Dataset:
    return f.create_dataset(name, shape=(n, L1, d), dtype=dtype, chunks=(max(1, min(n, 1024)), 1, d))


class _Prompts(NamedTuple):
    """Prompts to run: ``ids`` [n, seq], their token-layout ``groups`` (None: one layout), the
    problem or number of each row (``order``), the positions read (indices or roles) and the
    file attributes that say where they sit."""

    ids: torch.Tensor
    groups: list | None
    order: np.ndarray
    positions: tuple
    attrs: dict


def write_residual_cache(
    model: LoadedModel,
    template: str,
    a: np.ndarray,
    b: np.ndarray,
    path: str | Path,
    dtype: str = "float32",
    largest_bare_number: int = 360,
    engine: PatchingEngine | None = None,
    number_prompt: str = "{a}",
) -> dict:
    """Rule residual_cache's entry point: run the a+b prompts (a[i], b[i]) and the bare numbers;
    write the cache to ``path``.

    With numbers of several tokens (:attr:`helixclock.lm.models.LoadedModel.tokens` of the model) a
    number is read at the last token of its span and rows are stored in the order of their token
    layouts (``ab`` says which problem each row is); the bare numbers sit in ``number_prompt``."""
    engine = engine or PatchingEngine(model)
    task = get_task("add")
    problems = _kept_problems(task, a, b)
    numbers = list(range(largest_bare_number + 1))
    several = model.tokens.several
    prompts = (_several_rows if several else _single_rows)(model, task, template, problems)
    bare = (_several_numbers if several else _single_numbers)(model, number_prompt, numbers)
    L1, d = model.adapter.n_layers + 1, model.adapter.d_model
    # a temporary file of this process's own: two writers of one cache (two Snakemake commands in one
    # folder) never share one, which HDF5 would truncate on opening before it checks its lock, and
    # which with HDF5_USE_FILE_LOCKING=FALSE (the workflow's, docs/gpus-and-clusters.md) it would
    # not check at all; a failed write leaves no temporary file behind
    tmp = Path(f"{path}.{os.getpid()}.tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        with h5py.File(tmp, "w") as f:
            # datasets made here, held open until the file closes (HDF5 lays out the file by it)
            at = {k: _create(f, k, len(problems), L1, d, dtype) for k in POSITIONS}
            f.create_dataset("ab", data=np.stack([problems.a, problems.b], 1).astype(np.int64)[prompts.order])
            _fill_prompts(at, engine, prompts, L1, dtype)
            bare_values = _create(f, "numbers", len(numbers), L1, d, dtype)
            _fill_numbers(bare_values, engine, bare, L1, dtype)
            f["numbers"].attrs["values"] = np.array(numbers)
            attrs = _file_attributes(model, template, dtype, {**prompts.attrs, **bare.attrs})
            f.attrs.update(attrs)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    return attrs


def _kept_problems(task: Task, a: np.ndarray, b: np.ndarray) -> Problems:
    """The task's problems (a[i], b[i]), in the task's order."""
    problems = task.problems()
    keep = np.isin(problems.a * 1000 + problems.b, a * 1000 + b)
    problems.a, problems.b, problems.answer = problems.a[keep], problems.b[keep], problems.answer[keep]
    return problems


def _fill_prompts(at: dict[str, h5py.Dataset], engine: PatchingEngine, prompts: _Prompts, L1: int, dtype: str) -> None:
    """resid_pre at a, b and the last token of every a+b prompt, at each of the ``L1`` layers,
    written batch by batch into ``at`` (datasets a, b, last [n, L1, d_model]; the residuals that
    section 4.3 fits helices to)."""
    points = [Point("resid_pre", layer, prompts.positions) for layer in range(L1)]
    start = 0
    for chunk in engine.iter_collect(prompts.ids, points, logits=False, desc="cache a+b", groups=prompts.groups):
        stacked = torch.stack([chunk[p] for p in points], 2)  # [B, 3, L1, d]
        stacked = to_numpy(stacked, dtype)
        stop = start + stacked.shape[0]
        for j, k in enumerate(POSITIONS):
            at[k][start:stop] = stacked[:, j]
        start = stop


def _fill_numbers(dataset: h5py.Dataset, engine: PatchingEngine, bare: _Prompts, L1: int, dtype: str) -> None:
    """resid_pre of the bare numbers at each of the ``L1`` layers, written into ``dataset``
    ([numbers, L1, d_model], in the numbers' order; the residual stream of a single number that
    section 4.1 and appendix B analyse)."""
    points = [Point("resid_pre", layer, bare.positions) for layer in range(L1)]
    values, _ = engine.collect(bare.ids, points, logits=False, desc="cache numbers", groups=bare.groups)
    dataset[:] = to_numpy(torch.stack([values[p][:, 0] for p in points], 1), dtype)[np.argsort(bare.order)]


def _file_attributes(model: LoadedModel, template: str, dtype: str, where: dict) -> dict:
    """The file's attributes: the model, the dtypes, the template, where the numbers sit
    (``where``) and the layer convention."""
    return {
        "model": model.name,
        "source": str(model.source),
        "model_dtype": str(model.dtype),
        "dtype": dtype,
        "template": template,
        "example_prompt": render(template, 12, 34),
        **where,
        "n_layers": model.adapter.n_layers,
        "d_model": model.adapter.d_model,
        "family": model.adapter.family,
        "layer_convention": LAYER_CONVENTION,
    }


def _single_rows(model, task, template, problems) -> _Prompts:
    """One-token numbers: every prompt has the same positions (attributes position_*)."""
    found = check_task_tokens(model.tokenizer, model.name, task, template, problems, answers=False)
    p = found.positions
    where = {"position_a": p.a, "position_b": p.b, "position_last": p.last, "prompt_length": p.length}
    return _Prompts(torch.from_numpy(found.input_ids), None, np.arange(len(problems)), (p.a, p.b, p.last), where)


def _several_rows(model, task, template, problems) -> _Prompts:
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
    return _Prompts(ids, groups, order, ("a", "b", "last"), where)


def _single_numbers(model, template, numbers) -> _Prompts:
    """One-token numbers: each bare number alone (with the tokenizer's special tokens)."""
    ids = torch.tensor(number_token_ids(model.tokenizer, model.name, numbers))
    last = ids.shape[1] - 1
    return _Prompts(ids, None, np.arange(len(numbers)), (last,), {"number_position": last})


def _several_numbers(model, template, numbers) -> _Prompts:
    """Numbers of several tokens: each number in ``template``, read at the last token of its
    span, rows grouped by layout."""
    tokens = number_prompt_tokens(model.tokenizer, model.name, template, numbers)
    order, groups, _ = ordered(tokens)
    ids = torch.from_numpy(padded([tokens.ids[i] for i in order]))
    return _Prompts(ids, groups, order, ("a",), {"number_position": -1, "number_prompt": template})

"""Reading a finished project's outputs from Python: tables, figures, findings and the residual
cache by the names the pipeline gives them (docs/results-api.md, "Reading the results"; docs/results-api.md).

An output is named in one of three ways:

* a **registry id**, the name of its path in :mod:`helixclock.outputs` (``"CACHE"``,
  ``"HELIX_SUMMARY.sweep"``, ``"FINDINGS.contrasts"``; :func:`registered_outputs` lists them);
* a **table id** of the paper's numbering (``"tab01_other_tasks"``, ``"tabD1_head_categories"``):
  ``results/{model}/tables/<id>.csv``;
* a **figure id** (``"fig04_helix_patching"``): ``results/{model}/figures/<id>.png``.

>>> from helixclock.results import Results
>>> run = Results("path/to/project")            # the folder Snakemake ran in
>>> run.models                                   # ['toy-gptj', 'toy-llama']
>>> run.table("tab01_other_tasks", "toy-gptj")   # a DataFrame
>>> run.table("HELIX_SUMMARY.sweep", "toy-gptj")
>>> a, ab = run.cache_layer("toy-gptj", layer=1)  # resid_pre[1] at the a token, and (a, b) per row

Only numpy, pandas and h5py are imported (no torch): a notebook opens a project in a second.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from . import outputs
from .cache import read_layer
from .io import read_json

# the suffixes of files (a path constant without one is a folder, e.g. outputs.HELIX)
FILE_SUFFIXES = (".csv", ".h5", ".json", ".npy", ".md", ".yaml", ".tsv")


def registered_outputs() -> dict[str, str]:
    """Every output path of :mod:`helixclock.outputs`, by registry id: a constant's name
    (``"CACHE"``), or ``"NAME.key"`` for an entry of a dict of paths (``"HELIX_RAW.sweep"``);
    patterns keep ``{model}``.  Folders and the workflow's own places (logs, staging) are not
    outputs."""
    found = {}
    for name, value in vars(outputs).items():
        if not name.isupper():
            continue
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, path in items:
            if _is_file(path) and "/tables/" not in path:  # a table has its table id
                found.setdefault(path, name if key is None else f"{name}.{key}")
    return {output: path for path, output in found.items()}


def _is_file(path) -> bool:
    return isinstance(path, str) and path.endswith(FILE_SUFFIXES) and path.startswith(("results/", "resources/"))


class Results:
    """The outputs of one project folder (where Snakemake ran; ``results/`` inside it)."""

    def __init__(self, project: str | Path = "."):
        self.project = Path(project)
        if not (self.project / "results").is_dir():
            raise FileNotFoundError(f"{self.project}: no results/ folder (run the pipeline there first: `make run`)")

    @property
    def models(self) -> list[str]:
        """The models with results (a model card written), sorted."""
        return sorted(p.parent.name for p in (self.project / "results").glob("*/model.json"))

    def path(self, output: str, model: str = "all") -> Path:
        """The file of ``output`` (a registry, table or figure id) for ``model`` ("all" for the
        cross-model outputs); an unknown id is an error naming the nearest known ones."""
        registry = registered_outputs()
        if output in registry:
            pattern = registry[output]
        elif output.startswith("tab") or output in ("fourier_peaks", "compat_effects", "paper_comparison"):
            pattern = outputs.table(output)[0]
        elif output.startswith("fig"):
            pattern = outputs.figure(output)[1]
        else:
            near = difflib.get_close_matches(output, list(registry), n=3)
            raise KeyError(
                f"output {output!r}: not a registry id (helixclock.results.registered_outputs()), "
                f"a table id (tab...) or a figure id (fig...)" + (f"; did you mean {', '.join(near)}?" if near else "")
            )
        return self.project / pattern.format(model=model)

    def _existing(self, output: str, model: str) -> Path:
        path = self.path(output, model)
        if not path.exists():
            known = ", ".join(self.models) or "none"
            raise FileNotFoundError(
                f"{path}: not made (models with results here: {known}); make it with "
                f"`snakemake --cores 1 {path.relative_to(self.project)}` in {self.project}"
            )
        return path

    def table(self, output: str, model: str = "all") -> pd.DataFrame:
        """A CSV output as a DataFrame (e.g. ``"tab01_other_tasks"``, ``"HEADS_SUMMARY.effects"``)."""
        path = self._existing(output, model)
        if path.suffix != ".csv":
            raise ValueError(f"output {output!r} is {path.name}, not a table (use .path() to open it)")
        return pd.read_csv(path)

    def figure(self, fig_id: str, model: str, kind: str = "png") -> Path:
        """The PNG (or, with ``kind="pdf"``, the PDF) of a figure."""
        path = self._existing(fig_id, model)
        return path.with_suffix(f".{kind}")

    def card(self, model: str) -> dict:
        """The model's card (family, shape, token positions; ``results/{model}/model.json``)."""
        return read_json(self._existing("CARD", model))

    def findings(self, model: str) -> pd.DataFrame:
        """The model's declared findings with their estimates, intervals and verdicts."""
        return self.table("FINDINGS.contrasts", model)

    def cache_layer(self, model: str, layer: int, position: str = "a") -> tuple[np.ndarray, np.ndarray]:
        """One layer of the residual cache: resid_pre[layer] (the input of block ``layer``) at
        ``position`` ("a", "b" or "last") of every correct a+b prompt, [n, d_model], and the (a, b)
        of each row, [n, 2]; ``position="numbers"`` gives the bare numbers 0..N and their values."""
        path = self._existing("CACHE", model)
        if position not in ("a", "b", "last", "numbers"):
            raise ValueError(f"position {position!r}: allowed 'a', 'b', 'last', 'numbers'")
        values = read_layer(path, position, layer)
        if position == "numbers":
            return values, np.arange(len(values))
        return values, read_layer_rows(path)


def read_layer_rows(path: str | Path) -> np.ndarray:
    """The (a, b) of each row of the cache's prompt datasets."""
    with h5py.File(path, "r") as f:
        return f["ab"][...]

"""Reading a project's outputs from Python: tables, figures, findings and the residual cache by
the names the pipeline gives them (docs/results-api.md, "Reading the results from Python").

An output is named in one of three ways:

* a **registry id**, the name of its path in :mod:`helixclock.project.outputs` (``"CACHE"``,
  ``"HELIX_SUMMARY.sweep"``, ``"FINDINGS.contrasts"``; :func:`registered_outputs` lists them);
* a **table id** of the paper's numbering (``"tab01_other_tasks"``, ``"tabD1_head_categories"``;
  :data:`helixclock.project.outputs.TABLE_IDS`): ``results/{model}/tables/<id>.csv``;
* a **figure id** (``"fig04_helix_patching"``; :data:`helixclock.project.outputs.FIGURE_IDS`):
  ``results/{model}/figures/<id>.png``.

Any other id is an error naming the nearest known ones.

A model is **finished** when its folder ``results/{model}/`` holds every output of
:data:`FINISHED_WHEN`: what the default target asks of every model whatever the config (its
card, its residual cache, its findings, the tables every model gets, the PNG of every figure of
a model).  :attr:`Results.models` lists the finished models; :attr:`Results.unfinished` the
other folders of ``results/`` (an interrupted or partial run), and :meth:`Results.lacks` what one
lacks.  Any model's outputs that exist can be read, finished or not.

>>> from helixclock.project.results import Results
>>> run = Results("path/to/project")            # the folder Snakemake ran in
>>> run.models                                   # ['toy-gptj', 'toy-llama']: the finished models
>>> run.unfinished                               # []: models with a folder, not finished
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
FILE_SUFFIXES = (".csv", ".h5", ".json", ".npy", ".md", ".html", ".yaml", ".tsv")


def registered_outputs() -> dict[str, str]:
    """Every output path of :mod:`helixclock.project.outputs`, by registry id: a constant's name
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


def _finished_when() -> tuple[str, ...]:
    """:data:`FINISHED_WHEN`, by id: what the default target asks of every model whatever the
    config (the outputs the rule files register for every model: the CSV of each table, the PNG
    of each figure of a model), and every file the cross-model outputs read of a model (its a+b
    accuracy and compared tables: docs/outputs.md, a model "with finished results" is compared in
    results/all).  Not here: Table C1, made only where config key accuracy.tasks has a task other
    than a+b, and the outputs of the model "all".  tests/unit/test_results.py checks this against
    the workflow's own list."""
    ids = {path: output for output, path in registered_outputs().items()}
    compared = [ids.get(path, Path(path).stem) for path in outputs.COMPARED_TABLES.values() if "{model}" in path]
    asked = [
        "CARD",
        "ADD_LOGITS",
        "CACHE",
        "FINDINGS.contrasts",
        "FINDINGS.page",
        "FINDINGS.html",
        "FINDINGS.model",
        "CLOCK_SUM",
        "HELIX_FITS.r2",
    ]
    asked += [f"NUMBER_BASES.{k}" for k in outputs.NUMBER_BASES] + [f"NEURON_BASES.{k}" for k in outputs.NEURON_BASES]
    asked += ["fourier_peaks", "tab01_other_tasks", "tabD1_head_categories", "tabD2_top_neurons", "tabF2_carry_test"]
    asked += ["compat_effects", "ADD_ACCURACY", *compared]
    figures = [f for f in outputs.FIGURE_IDS if not f.startswith("figAll_")]
    return tuple(o for o in dict.fromkeys([*asked, *figures]) if o != "tabC1_other_tasks_accuracy")


FINISHED_WHEN = _finished_when()  # a model whose folder holds all of these is finished


def known_ids() -> list[str]:
    """Every id :meth:`Results.path` knows: registry ids, table ids, figure ids."""
    return [*registered_outputs(), *outputs.TABLE_IDS, *outputs.FIGURE_IDS]


def nearest_ids(output: str, n: int = 3) -> list[str]:
    """The known ids nearest to a mistyped ``output``: those it begins (``"fig04"``), then the
    closest by :func:`difflib.get_close_matches`."""
    known = known_ids()
    near = [k for k in known if k.startswith(output)] if len(output) >= 4 else []
    near += difflib.get_close_matches(output, known, n=n)
    return list(dict.fromkeys(near))[:n]


def pattern(output: str) -> str:
    """The path pattern (``{model}`` for the model) of ``output``, a registry, table or figure id;
    an unknown id is a KeyError naming the nearest known ones (:func:`nearest_ids`)."""
    registry = registered_outputs()
    if output in registry:
        return registry[output]
    if output in outputs.TABLE_IDS:
        return outputs.table(output)[0]
    if output in outputs.FIGURE_IDS:
        return outputs.figure(output)[1]
    near = nearest_ids(output)
    raise KeyError(
        f"output {output!r}: not a registry id (helixclock.project.results.registered_outputs()), a table id "
        f"(helixclock.project.outputs.TABLE_IDS) or a figure id (helixclock.project.outputs.FIGURE_IDS)"
        + (f"; did you mean {', '.join(near)}?" if near else "")
    )


class Results:
    """The outputs of one project folder (where Snakemake ran; ``results/`` inside it)."""

    def __init__(self, project: str | Path = "."):
        self.project = Path(project)
        if not (self.project / "results").is_dir():
            raise FileNotFoundError(f"{self.project}: no results/ folder (run the pipeline there first: `make run`)")

    def _folders(self) -> list[str]:
        """The models with a folder under results/ (all but the cross-model "all"), sorted."""
        root = self.project / "results"
        return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "all" and not p.name.startswith("."))

    def lacks(self, model: str) -> list[str]:
        """The outputs of :data:`FINISHED_WHEN` that ``model``'s folder does not hold (none: finished)."""
        return [o for o in FINISHED_WHEN if not self.path(o, model).exists()]

    @property
    def models(self) -> list[str]:
        """The finished models, sorted: those whose folder holds every output of :data:`FINISHED_WHEN`."""
        return [m for m in self._folders() if not self.lacks(m)]

    @property
    def unfinished(self) -> list[str]:
        """The models with a folder under results/ that are not finished (an interrupted or partial
        run), sorted; :meth:`lacks` says what each lacks."""
        return [m for m in self._folders() if self.lacks(m)]

    def path(self, output: str, model: str = "all") -> Path:
        """The file of ``output`` (a registry, table or figure id) for ``model`` ("all" for the
        cross-model outputs); an unknown id is a KeyError naming the nearest known ones."""
        return self.project / pattern(output).format(model=model)

    def _existing(self, output: str, model: str) -> Path:
        path = self.path(output, model)
        if not path.exists():
            finished, unfinished = ", ".join(self.models) or "none", ", ".join(self.unfinished) or "none"
            raise FileNotFoundError(
                f"{path}: not made (finished models here: {finished}; unfinished: {unfinished}); make it with "
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

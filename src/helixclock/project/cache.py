"""The residual cache: resid_pre of correct a+b prompts and of bare numbers, in HDF5, and
its reading (numpy and h5py only: the jobs that read it load no torch; the model job that
writes it is :mod:`helixclock.jobs.cache_writer`).

Layout of ``results/{model}/cache/residuals.h5``:

=========  ================================  ===============================================
dataset    shape                             what
=========  ================================  ===============================================
a          [n_prompts, n_layers + 1, d]      resid_pre at the a token of each correct a+b
b          [n_prompts, n_layers + 1, d]      ... at the b token
last       [n_prompts, n_layers + 1, d]      ... at the last token ("=")
ab         [n_prompts, 2] int                (a, b) of each row
numbers    [N + 1, n_layers + 1, d]          the numbers 0..N, each in the
                                             registry's ``number_prompt`` (the bare number
                                             token by default)
=========  ================================  ===============================================

With numbers of several tokens (docs/several-tokens.md, "Numbers of several tokens") "the a token" is the last
token of a's span (likewise b, and each bare number), and the rows of a, b, last and ab are
in the order of the prompts' token layouts: ``ab`` says which problem each row is.

Layer index l is the input of block l; index n_layers is the final residual (the input
of the final norm).  Datasets are chunked so that one chunk holds one layer.  File
attributes record the model source, dtype, template, token positions and the layer
convention.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np


@dataclass
class ResidualCache:
    """The cache in memory (as numpy), with its attributes."""

    a: np.ndarray
    b: np.ndarray
    last: np.ndarray
    ab: np.ndarray
    numbers: np.ndarray
    attrs: dict

    @property
    def n_layers(self) -> int:
        return int(self.attrs["n_layers"])


def read_residual_cache(path: str | Path, datasets=("a", "b", "last", "ab", "numbers")) -> ResidualCache:
    with h5py.File(path, "r") as f:
        got = {k: (f[k][...] if k in datasets else None) for k in ("a", "b", "last", "ab", "numbers")}
        attrs = {k: (v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v) for k, v in f.attrs.items()}
    return ResidualCache(**got, attrs=attrs)


def read_layer(path: str | Path, dataset: str, layer: int) -> np.ndarray:
    """One layer of one dataset, [n, d] (reads only that layer's chunks)."""
    with h5py.File(path, "r") as f:
        return f[dataset][:, layer, :]

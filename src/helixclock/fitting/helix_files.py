"""HDF5 files of the helix fits (paper sections 4.3-4.5): :func:`save_helix_fits` writes the fits of
:mod:`helixclock.fitting.fits` (the PCA, then per basis C [L, m, d], R^2 [L] and its columns) and
:func:`load_helix_fits` reads them back for the jobs after the fitting job."""

from __future__ import annotations

from collections.abc import Mapping

import h5py
import numpy as np
import torch

from ..project.io import to_numpy
from .bases import Basis
from .fits import PCA, Fits


def save_helix_fits(path, fits: Fits, layer_values: Mapping[str, np.ndarray] | None = None, **attrs) -> None:
    """Write fits to HDF5: one group per basis with C [L, m, d], R^2 [L] and its columns."""
    with h5py.File(path, "w") as f:
        f.create_dataset("pca/mean", data=to_numpy(fits.pca.mean, "float32"))
        f.create_dataset("pca/components", data=to_numpy(fits.pca.components, "float32"))
        f.create_dataset("pca/variance", data=to_numpy(fits.pca.variance, "float32"))
        for s, basis in enumerate(fits.bases):
            g = f.create_group(f"fits/{basis.name}")
            m = len(basis.columns())
            g.create_dataset("C", data=to_numpy(fits.C[s, :, :m], "float32"))
            g.create_dataset("r2", data=to_numpy(fits.r2[s], "float32"))
            g.attrs.update(
                {
                    "kind": basis.kind,
                    "periods": np.array(basis.periods, dtype=np.int64),
                    "degree": basis.degree,
                    "variables": ",".join(basis.variables),
                    "scaled": basis.scaled,
                    "columns": ",".join(basis.columns()),
                    "n_params": basis.n_params,
                    "description": _describe(basis),
                }
            )
        f["fits"].attrs["order"] = [b.name for b in fits.bases]
        for k, v in (layer_values or {}).items():
            f.create_dataset(f"values/{k}", data=np.asarray(v))
        f.attrs.update({k: v for k, v in attrs.items() if v is not None})


def load_helix_fits(path) -> Fits:
    with h5py.File(path, "r") as f:
        pca = PCA(*(torch.from_numpy(f[f"pca/{k}"][...]).double() for k in ("mean", "components", "variance")))
        bases, Cs, r2 = [], [], []
        for name in f["fits"].attrs["order"]:
            g = f["fits"][name]
            bases.append(
                Basis(
                    g.attrs["kind"],
                    tuple(int(t) for t in g.attrs["periods"]),
                    int(g.attrs["degree"]),
                    tuple(g.attrs["variables"].split(",")),
                    bool(g.attrs.get("scaled", True)),
                )
            )
            Cs.append(torch.from_numpy(g["C"][...]))
            r2.append(torch.from_numpy(g["r2"][...]))
        attrs = dict(f.attrs)
    m_max = max(c.shape[1] for c in Cs)
    C = torch.zeros(len(Cs), Cs[0].shape[0], m_max, Cs[0].shape[2])
    for s, c in enumerate(Cs):
        C[s, :, : c.shape[1]] = c
    return Fits(bases, C, torch.empty(0), torch.stack(r2), pca, attrs)


def _describe(basis: Basis) -> str:
    var = ", ".join(basis.variables)
    if basis.kind == "poly":
        how = "scaled" if basis.scaled else "raw powers, the authors' least squares"
        return f"polynomial of degree {basis.degree} in {var} ({how}), plus a constant"
    lin = "a linear term, " if basis.kind == "helix" else ""
    return (
        f"{basis.kind} in {var}: {lin}cos/sin with periods {', '.join(str(t) for t in basis.periods)}, plus a constant"
    )

"""Tables and HDF5 files of the neuron fits (paper section 5.4): one row per neuron, one row per
fitted term, and the fits saved and loaded for the jobs after ``neuron_fits``."""

from __future__ import annotations

from dataclasses import replace

import h5py
import numpy as np
import pandas as pd

from ...prompts.layout import whole_numbers
from .basis import VARIABLES, columns
from .fit import NeuronFits, compare_bases, fit_digit_basis, fit_neurons
from .places import place_masks
from .tables import figure_grids


def neuron_table(fits: NeuronFits, k_terms: int = 3) -> pd.DataFrame:
    """One row per neuron: layer, neuron, nrmse, rmse, value_range, ab_fraction, top_terms
    (the k largest terms, :meth:`NeuronFits.leading_terms`), top_variable, top_period,
    top_amplitude, top_ab_period, w_a, w_b, w_ab, const, and the dominant periods
    dominant_period_a, dominant_period_b, dominant_period_ab."""
    lin = fits.linear
    df = pd.DataFrame(
        {
            "layer": fits.layer,
            "neuron": fits.neuron,
            "nrmse": fits.nrmse,
            "rmse": fits.rmse,
            "value_range": fits.value_range,
            "ab_fraction": fits.ab_fraction,
            "top_terms": fits.leading_terms(k_terms),
        }
    )
    df = pd.concat([df, fits.top_term()], axis=1)
    df = df.assign(w_a=lin[:, 0], w_b=lin[:, 1], w_ab=lin[:, 2], const=fits.const)
    for v, key in (("a", "a"), ("b", "b"), ("a+b", "ab")):
        df[f"dominant_period_{key}"] = fits.dominant[v]
    return df


def term_table(fits: NeuronFits) -> pd.DataFrame:
    """One row per (neuron, variable, period): layer, neuron, variable (a, b, a+b), period,
    amplitude, phase (units of t, [0, T)), alpha, beta."""
    n, nv, nt = fits.amplitude.shape
    rep = nv * nt
    return pd.DataFrame(
        {
            "layer": np.repeat(fits.layer, rep),
            "neuron": np.repeat(fits.neuron, rep),
            "variable": np.tile(np.repeat(VARIABLES, nt), n),
            "period": np.tile(np.asarray(fits.periods), n * nv),
            "amplitude": fits.amplitude.ravel(),
            "phase": fits.phase.ravel(),
            "alpha": fits.alpha.ravel(),
            "beta": fits.beta.ravel(),
        }
    )


def save_neuron_fits(path, fits: NeuronFits, up: NeuronFits | None = None, units: pd.DataFrame | None = None) -> None:
    """HDF5: datasets coef [n, m], rmse, nrmse, value_range, layer, neuron, dominant_{a,b,ab};
    attrs periods, columns, method, grid_shape and the method's hyperparameters.  ``up``: the
    fits of a gated MLP's up projection (when gate and up are both fitted), in group "up".
    ``units``: each unit's ``place`` and ``rank``, in group "units"."""
    with h5py.File(path, "w") as f:
        _write_fits(f, fits)
        if up is not None:
            _write_fits(f.create_group("up"), up)
        if units is not None:
            group = f.create_group("units")
            group.create_dataset("place", data=np.array([str(p) for p in units["place"]], dtype="S"))
            group.create_dataset("rank", data=np.asarray(units["rank"]))


def load_units(path) -> pd.DataFrame:
    """The units' places and ranks of a fits file (:func:`neuron_fits`' ``units``)."""
    with h5py.File(path, "r") as f:
        return pd.DataFrame({"place": [p.decode() for p in f["units/place"][()]], "rank": f["units/rank"][()]})


def _write_fits(f, fits: NeuronFits) -> None:
    f.create_dataset("coef", data=fits.coef)
    for name in ("rmse", "nrmse", "value_range", "layer", "neuron"):
        f.create_dataset(name, data=getattr(fits, name))
    for v, key in (("a", "a"), ("b", "b"), ("a+b", "ab")):
        f.create_dataset(f"dominant_{key}", data=fits.dominant[v])
    f.attrs["periods"] = np.asarray(fits.periods, dtype=np.float64)
    f.attrs["columns"] = fits.columns
    f.attrs["method"] = fits.method
    f.attrs["grid_shape"] = np.asarray(fits.grid_shape)
    for k, v in fits.info.items():
        if np.isscalar(v):
            f.attrs[f"info_{k}"] = v
        else:
            f.create_dataset(f"info/{k}", data=np.asarray(v))


def has_up_fits(path) -> bool:
    """Whether a fits file holds a gated MLP's up-projection fits beside the gate's."""
    with h5py.File(path, "r") as f:
        return "up" in f


def load_neuron_fits(path, group: str | None = None) -> NeuronFits:
    """Inverse of :func:`save_neuron_fits` (``group="up"``: the up projection's fits); checks that
    the stored columns match the periods."""
    with h5py.File(path, "r") as h5:
        f = h5[group] if group else h5
        periods = tuple(int(T) if float(T).is_integer() else float(T) for T in f.attrs["periods"])
        stored = [str(c) for c in f.attrs["columns"]]
        if stored != columns(periods):
            raise ValueError(f"{path}: columns {stored} do not match periods {periods} ({columns(periods)})")
        info = {k[5:]: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items() if k.startswith("info_")}
        if "info" in f:
            info.update({k: f["info"][k][()] for k in f["info"]})
        dom = {v: f[f"dominant_{key}"][()] for v, key in (("a", "a"), ("b", "b"), ("a+b", "ab"))}
        return NeuronFits(
            periods,
            f["coef"][()],
            f["rmse"][()],
            f["nrmse"][()],
            f["value_range"][()],
            dom,
            f["layer"][()],
            f["neuron"][()],
            str(f.attrs["method"]),
            tuple(int(x) for x in f.attrs["grid_shape"]),
            info,
        )


def fitted_units(path) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """What Fig. 9 (rule neuron_fit_eval) patches in from a fits file: the fitted units, in the
    fits' order (layer, neuron, place and rank, :func:`load_units`), and their fitted grids
    [n, 100, 100], the gate's then, for a gated MLP with both fitted, the up projection's."""
    fits = load_neuron_fits(path)
    fitted = [fits.predict()] + ([load_neuron_fits(path, "up").predict()] if has_up_fits(path) else [])
    top = pd.concat([pd.DataFrame({"layer": fits.layer, "neuron": fits.neuron}), load_units(path)], axis=1)
    return top, fitted


def neuron_fits(grids: dict, periods, method: str, figure_ranks) -> dict:
    """Rule neuron_fits: Eq. 5 fitted to every top unit's N(a, b) at once (no model).

    ``grids`` are the neuron stage's grids.h5 arrays (``pre``, with ``up`` for a gated MLP whose
    gate and up projection are both fitted, ``rank``, ``post_max``, ``max_a``, ``max_b``, ``layer``,
    ``neuron``, ``place``, ``quantity``).  Returns the fits (``fits``, ``up`` or None), the
    per-unit ``table`` (NRMSE, top terms, place, rank, the largest post-activation and its
    prompt, what N is), the ``terms`` table, Fig. 8's grids (``fig08``) for ``figure_ranks`` of
    every place and the units' places and ranks (``units``).  Each place's units are fitted on
    the cells where their place exists (:func:`~.places.place_masks`: the whole grid for the
    whole number and the units digit); at the digits' places the digit basis is fitted beside
    Eq. 5 (columns nrmse_digits, n_params_*, better: :func:`helixclock.prompts.layout.whole_numbers`),
    where one-token numbers keep the paper's Eq. 5 alone."""
    quantity = np.asarray(grids.get("quantity", "preactivation")).item()
    quantity = quantity.decode() if isinstance(quantity, bytes) else str(quantity)  # what N(a, b) is
    places = np.array([p.decode() if isinstance(p, bytes) else str(p) for p in grids["place"]])
    digits = not whole_numbers(places)  # the digit basis beside Eq. 5
    masks = place_masks(*grids["pre"].shape[1:])
    parts: dict[str, list] = {"fits": [], "up": [], "digits": []}
    for place in dict.fromkeys(places):
        idx = np.flatnonzero(places == place)
        ids = {"layer": grids["layer"][idx], "neuron": grids["neuron"][idx]}
        mask = None if masks[place].all() else masks[place]  # the whole number and the units place: the whole grid
        parts["fits"].append(fit_neurons(grids["pre"][idx], periods, method=method, mask=mask, **ids))
        if digits:
            parts["digits"].append(fit_digit_basis(grids["pre"][idx], mask=mask, **ids))
        if "up" in grids:
            parts["up"].append(fit_neurons(grids["up"][idx], periods, method=method, mask=mask, **ids))
    fits = concat_fits(parts["fits"])
    up = concat_fits(parts["up"]) if parts["up"] else None
    table = neuron_table(fits).assign(
        place=places,
        rank=grids["rank"],
        max_post=grids["post_max"],
        max_a=grids["max_a"],
        max_b=grids["max_b"],
        quantity=quantity,
    )
    if digits:
        bases = pd.concat([compare_bases(f, d) for f, d in zip(parts["fits"], parts["digits"])], ignore_index=True)
        for col in ("nrmse_digits", "n_params_eq5", "n_params_digits", "better"):
            table[col] = bases[col].to_numpy()
    if up is not None:
        table["nrmse_up"] = up.nrmse
    at = {p: np.flatnonzero(places == p) for p in dict.fromkeys(places)}  # Fig. 8's ranks in every place
    rows = [int(idx[r]) for idx in at.values() for r in figure_ranks if r < len(idx)] or [0]
    fitted = fits.predict(rows)
    fig08 = figure_grids({**grids, "pre": grids["pre"][rows]}, fitted, table.iloc[rows], figure_ranks, range(len(rows)))
    fig08 = fig08.assign(quantity=quantity, place=places[rows].repeat(grids["pre"][0].size))
    terms = term_table(fits)
    terms.insert(0, "place", np.repeat(places, len(terms) // max(len(places), 1)))
    return {"fits": fits, "up": up, "table": table, "terms": terms, "fig08": fig08, "units": table[["place", "rank"]]}


def concat_fits(parts: list[NeuronFits]) -> NeuronFits:
    """Fits of disjoint sets of neurons (e.g. the places of answers of several tokens) as one,
    in order (``info``, which describes one fit's cells, is left empty where there are several;
    one fit is itself)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    dominant = {v: np.concatenate([p.dominant[v] for p in parts]) for v in first.dominant}
    return replace(
        first,
        coef=cat("coef"),
        rmse=cat("rmse"),
        nrmse=cat("nrmse"),
        value_range=cat("value_range"),
        dominant=dominant,
        layer=cat("layer"),
        neuron=cat("neuron"),
        info={},
    )

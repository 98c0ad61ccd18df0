"""Rule neuron_fits: Eq. 5 fitted to every top neuron's N(a, b) at once (no model)."""

import numpy as np

from helixclock.io import read_arrays
from helixclock.pipeline import start
from helixclock.stages.neurons.fit import fit_neurons
from helixclock.stages.neurons.fit_files import neuron_table, save_fits, term_table
from helixclock.stages.neurons.tables import figure_grids

log = start(snakemake)
p = snakemake.params
grids = read_arrays(snakemake.input[0])
quantity = np.asarray(grids.pop("quantity", "preactivation")).item()
quantity = quantity.decode() if isinstance(quantity, bytes) else str(quantity)  # what N(a, b) is
fits = fit_neurons(grids["pre"], p.periods, method=p.method, layer=grids["layer"], neuron=grids["neuron"])
up = None  # a gated MLP's up projection, when gate and up are both fitted
if "up" in grids:
    up = fit_neurons(grids["up"], p.periods, method=p.method, layer=grids["layer"], neuron=grids["neuron"])
save_fits(snakemake.output.fits, fits, up)
table = neuron_table(fits).assign(
    rank=grids["rank"], max_post=grids["post_max"], max_a=grids["max_a"], max_b=grids["max_b"], quantity=quantity
)
if up is not None:
    table["nrmse_up"] = up.nrmse
table.to_csv(snakemake.output.table, index=False)
term_table(fits).to_csv(snakemake.output.terms, index=False)
figure_grids(grids, fits.predict(), table, p.figure_ranks).assign(quantity=quantity).to_csv(
    snakemake.output.fig08, index=False
)
log.info("median NRMSE %.4f over %d top neurons (%s)", float(table["nrmse"].median()), len(table), quantity)
if up is not None:
    log.info("median NRMSE of the up projection %.4f", float(np.median(up.nrmse)))

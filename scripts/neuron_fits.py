"""Rule neuron_fits: Eq. 5 fitted to every top neuron's N(a, b) at once (no model)."""
import numpy as np

from helixclock.io import read_arrays
from helixclock.pipeline import start
from helixclock.stages.neurons.fit import fit_neurons, neuron_table, save_fits, term_table
from helixclock.stages.neurons.tables import figure_grids

log = start(snakemake)
p = snakemake.params
grids = read_arrays(snakemake.input[0])
quantity = np.asarray(grids.pop("quantity", "preactivation")).item()
quantity = quantity.decode() if isinstance(quantity, bytes) else str(quantity)  # what N(a, b) is
fits = fit_neurons(grids["pre"], p.periods, method=p.method, layer=grids["layer"], neuron=grids["neuron"])
save_fits(snakemake.output.fits, fits)
table = neuron_table(fits).assign(rank=grids["rank"], max_post=grids["post_max"], max_a=grids["max_a"],
                                  max_b=grids["max_b"], quantity=quantity)
table.to_csv(snakemake.output.table, index=False)
term_table(fits).to_csv(snakemake.output.terms, index=False)
figure_grids(grids, fits.predict(), table, p.figure_ranks).assign(quantity=quantity).to_csv(snakemake.output.fig08,
                                                                                             index=False)
log.info("median NRMSE %.4f over %d top neurons", float(table["nrmse"].median()), len(table))

"""Rule neuron_fits: Eq. 5 fitted to every top unit's N(a, b) at once, place by place (no model)."""

import numpy as np

from helixclock.jobs.pipeline import start
from helixclock.project.io import read_arrays
from helixclock.stages.neurons.neuron_files import neuron_fits, save_neuron_fits

log = start(snakemake)
p = snakemake.params
grids = read_arrays(snakemake.input.grids)
out = neuron_fits(grids, p.periods, p.method, p.figure_ranks)
save_neuron_fits(snakemake.output.fits, out["fits"], out["up"], out["units"])
for name in ("table", "terms", "fig08"):
    out[name].to_csv(snakemake.output[name], index=False)
table = out["table"]
log.info("median NRMSE %.4f over %d top neurons (%s)", table["nrmse"].median(), len(table), table["quantity"].iloc[0])
if out["up"] is not None:
    log.info("median NRMSE of the up projection %.4f", float(np.median(out["up"].nrmse)))

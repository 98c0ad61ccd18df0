"""Rule neuron_bases: Eq. 5 against the digit basis at equal capacity, per top neuron and per
place bootstrapped over units (no model)."""

from helixclock.jobs.pipeline import start
from helixclock.project.io import read_arrays
from helixclock.stages.neurons.capacity import capacity_tables

log = start(snakemake)
p = snakemake.params
tables = capacity_tables(read_arrays(snakemake.input.grids), p.resampling["bootstrap"], p.resampling["seed"])
for name in ("bases", "bases_summary"):
    tables[name].to_csv(snakemake.output[name], index=False)
log.info("Eq. 5 against the digit basis, 24 columns each:\n%s", tables["bases_summary"].to_string())

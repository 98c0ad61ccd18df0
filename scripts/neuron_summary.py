"""Rule neuron_summary: figD9's curve, the top neurons (tabD2), figD11's cumulative DE, fig09's table."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.project.io import write_table
from helixclock.stages.neurons.tables import circuit_layers, neuron_summary, top_neurons_paper_table

start(snakemake)
inp, out = snakemake.input, snakemake.output
raw = {name: pd.read_csv(inp[name]) for name in ("attribution", "direct_effects", "ablation", "fit_eval")}
circuit = circuit_layers(pd.read_csv(inp.stages))
tables = neuron_summary(raw, pd.read_csv(inp.fits), circuit, resampling(snakemake))
for name, df in tables.items():
    df.to_csv(out[name], index=False)
write_table(top_neurons_paper_table(tables["neurons"]), out.table, out.table_md, floatfmt=".3f")

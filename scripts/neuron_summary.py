"""Rule neuron_summary: figD9's curve, the top neurons (tabD2), figD11's cumulative DE, fig09's table."""

import pandas as pd

from helixclock.io import write_table
from helixclock.pipeline import resampling, start
from helixclock.stages.neurons.tables import (
    ablation_table,
    cumulative_de,
    fit_eval_table,
    top_neuron_table,
    top_neurons_paper_table,
)

start(snakemake)
resample = resampling(snakemake)
inp, out = snakemake.input, snakemake.output
circuit = pd.read_csv(inp.stages)["layer"].tolist()
neurons = top_neuron_table(
    pd.read_csv(inp.attribution), pd.read_csv(inp.direct_effects), pd.read_csv(inp.fits), circuit, resample
)
neurons.to_csv(out.neurons, index=False)
ablation_table(pd.read_csv(inp.ablation), resample).to_csv(out.ablation, index=False)
cumulative_de(neurons).to_csv(out.cumulative_de, index=False)
fit_eval_table(pd.read_csv(inp.fit_eval), resample).to_csv(out.fit_eval, index=False)
write_table(top_neurons_paper_table(neurons), out.table, out.table_md, floatfmt=".3f")

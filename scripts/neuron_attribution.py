"""Rule neuron_attribution: every unit's (layer, neuron, place) attribution, the top units' DE and
the figD9 sweep (one-token numbers: the neurons at the last token; helixclock.stages.neurons.places)."""

import numpy as np

from helixclock.jobs.model_jobs import open_model, selection
from helixclock.jobs.pipeline import accuracy, minimum, require, settings, start
from helixclock.jobs.preconditions import attribution_needs
from helixclock.stages.neurons.jobs import neuron_attribution
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
acc = accuracy(snakemake)
neurons = settings(snakemake, "neurons", NeuronSettings)
require(snakemake, attribution_needs(acc, neurons.attribution_pairs, minimum(snakemake)))
model, engine = open_model(snakemake)
template = snakemake.params.spec["prompts"]["add"]
out = neuron_attribution(engine, acc, template, neurons, selection(snakemake))
np.save(snakemake.output.means, out.pop("means"))
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

"""Rule neuron_attribution: every neuron's attribution, the top neurons' DE and the figD9 sweep."""

import numpy as np

from helixclock.io import read_json
from helixclock.model_jobs import open_model
from helixclock.pipeline import accuracy, minimum, require, settings, start
from helixclock.preconditions import attribution_needs
from helixclock.stages.neurons.jobs import neuron_attribution
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
acc = accuracy(snakemake)
neurons = settings(snakemake, "neurons", NeuronSettings)
require(snakemake, attribution_needs(acc, neurons.attribution_pairs, minimum(snakemake)))
_, engine = open_model(snakemake)
last = read_json(snakemake.input.card)["positions"]["add"]["last"]
out = neuron_attribution(engine, acc, snakemake.params.spec["prompts"]["add"], last, neurons)
np.save(snakemake.output.means, out.pop("means"))
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

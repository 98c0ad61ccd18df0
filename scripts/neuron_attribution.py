"""Rule neuron_attribution: every neuron's attribution, the top neurons' DE and the figD9 sweep
(answers of several tokens: every unit (layer, neuron, place), helixclock.stages.neurons.places)."""

import numpy as np

from helixclock.io import read_json
from helixclock.model_jobs import open_model
from helixclock.models import several_tokens
from helixclock.pipeline import accuracy, minimum, require, settings, start
from helixclock.preconditions import attribution_needs
from helixclock.stages.neurons.jobs import neuron_attribution, place_attribution_job
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
acc = accuracy(snakemake)
neurons = settings(snakemake, "neurons", NeuronSettings)
require(snakemake, attribution_needs(acc, neurons.attribution_pairs, minimum(snakemake)))
model, engine = open_model(snakemake)
template = snakemake.params.spec["prompts"]["add"]
if several_tokens(model):
    out = place_attribution_job(engine, acc, template, neurons)
else:
    last = read_json(snakemake.input.card)["positions"]["add"]["last"]
    out = neuron_attribution(engine, acc, template, last, neurons)
np.save(snakemake.output.means, out.pop("means"))
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

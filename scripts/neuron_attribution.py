"""Rule neuron_attribution: every neuron's attribution, the top neurons' DE and the figD9 sweep."""

import numpy as np

from helixclock.io import read_json
from helixclock.pipeline import accuracy, load, minimum, patching_engine, require, settings, start
from helixclock.preconditions import attribution_needs
from helixclock.stages.neurons.jobs import attribution_job
from helixclock.stages.neurons.patching import NeuronSettings

log = start(snakemake)
acc = accuracy(snakemake)
require(snakemake, attribution_needs(acc, snakemake.params.neurons["attribution_pairs"], minimum(snakemake)))
model = load(snakemake)
last = read_json(snakemake.input.card)["positions"]["add"]["last"]
out = attribution_job(
    patching_engine(snakemake, model),
    acc,
    snakemake.params.spec["prompts"]["add"],
    last,
    settings(snakemake, "neurons", NeuronSettings),
)
np.save(snakemake.output.means, out.pop("means"))
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

"""Rule neuron_grids: N(a, b) of the top units of every place over the grid, their max activation
and logit lens (one-token numbers: of the top neurons at the last token)."""

import pandas as pd

from helixclock.jobs.model_jobs import open_model
from helixclock.jobs.pipeline import settings, start
from helixclock.stages.neurons.jobs import neuron_grids, save_grids
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
neurons = settings(snakemake, "neurons", NeuronSettings)
scores = pd.read_csv(snakemake.input.attribution)
model, engine = open_model(snakemake)
template = snakemake.params.spec["prompts"]["add"]
acc = pd.read_csv(snakemake.input.accuracy)
grids = neuron_grids(engine, acc, template, scores, neurons)
save_grids(snakemake.output[0], grids, snakemake.wildcards.model)

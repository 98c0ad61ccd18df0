"""Rule neuron_grids: N(a, b) of the top neurons over the grid, their max activation and logit
lens (answers of several tokens: of the top units of every place)."""

import pandas as pd

from helixclock.model_jobs import add_positions, open_model
from helixclock.pipeline import settings, start
from helixclock.stages.neurons.jobs import neuron_grids, save_grids
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
neurons = settings(snakemake, "neurons", NeuronSettings)
scores = pd.read_csv(snakemake.input.attribution)
model, engine = open_model(snakemake)
template = snakemake.params.spec["prompts"]["add"]
acc = pd.read_csv(snakemake.input.accuracy)
grids = neuron_grids(engine, acc, template, add_positions(snakemake), scores, neurons)
save_grids(snakemake.output[0], grids, snakemake.wildcards.model)

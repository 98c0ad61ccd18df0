"""Rule neuron_grids: N(a, b) of the top neurons over the grid, their max activation and logit lens."""

import pandas as pd

from helixclock.io import read_json
from helixclock.model_jobs import open_model
from helixclock.pipeline import settings, start
from helixclock.stages.neurons.jobs import neuron_grids, save_grids
from helixclock.stages.neurons.patching import NeuronSettings, n_top

start(snakemake)
neurons = settings(snakemake, "neurons", NeuronSettings)
scores = pd.read_csv(snakemake.input.attribution)
top = scores.iloc[: n_top(len(scores), neurons.top_share)]
_, engine = open_model(snakemake)
last = read_json(snakemake.input.card)["positions"]["add"]["last"]
template = snakemake.params.spec["prompts"]["add"]
grids = neuron_grids(engine, pd.read_csv(snakemake.input.accuracy), template, last, top, neurons)
save_grids(snakemake.output[0], grids, snakemake.wildcards.model)

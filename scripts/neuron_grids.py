"""Rule neuron_grids: N(a, b) of the top neurons over the grid, their max activation and logit
lens (answers of several tokens: of the top units of every place)."""

import pandas as pd

from helixclock.io import read_json
from helixclock.model_jobs import open_model
from helixclock.models import several_tokens
from helixclock.pipeline import settings, start
from helixclock.stages.neurons.jobs import neuron_grids, place_grids_job, save_grids
from helixclock.stages.neurons.patching import NeuronSettings, n_top
from helixclock.stages.neurons.places import top_units

start(snakemake)
neurons = settings(snakemake, "neurons", NeuronSettings)
scores = pd.read_csv(snakemake.input.attribution)
model, engine = open_model(snakemake)
template = snakemake.params.spec["prompts"]["add"]
acc = pd.read_csv(snakemake.input.accuracy)
if several_tokens(model):  # the first n of every place
    top = top_units(scores, n_top(int(scores.groupby("place").size().iloc[0]), neurons.top_share))
    grids = place_grids_job(engine, acc, template, top, neurons)
else:
    top = scores.iloc[: n_top(len(scores), neurons.top_share)]
    last = read_json(snakemake.input.card)["positions"]["add"]["last"]
    grids = neuron_grids(engine, acc, template, last, top, neurons)
save_grids(snakemake.output[0], grids, snakemake.wildcards.model)

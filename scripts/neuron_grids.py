"""Rule neuron_grids: N(a, b) of the top neurons over the grid, their max activation and logit lens."""

import pandas as pd

from helixclock.io import read_json
from helixclock.pipeline import load, patching_engine, settings, start
from helixclock.stages.neurons.jobs import grids_job, save_grids
from helixclock.stages.neurons.patching import NeuronSettings, n_top

start(snakemake)
scores = pd.read_csv(snakemake.input.attribution)
top = scores.iloc[: n_top(len(scores), snakemake.params.neurons["top_share"])]
model = load(snakemake)
last = read_json(snakemake.input.card)["positions"]["add"]["last"]
grids = grids_job(
    patching_engine(snakemake, model),
    pd.read_csv(snakemake.input.accuracy),
    snakemake.params.spec["prompts"]["add"],
    last,
    top,
    settings(snakemake, "neurons", NeuronSettings),
)
save_grids(snakemake.output[0], grids, snakemake.wildcards.model)

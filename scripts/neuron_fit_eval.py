"""Rule neuron_fit_eval: fig09, the top k neurons with actual or fitted preactivations (answers of
several tokens: the top k units of every place)."""

import numpy as np
import pandas as pd

from helixclock.io import read_json
from helixclock.model_jobs import open_model
from helixclock.models import several_tokens
from helixclock.pipeline import accuracy, minimum, require, settings, start
from helixclock.preconditions import fit_eval_needs
from helixclock.stages.neurons.jobs import neuron_fit_eval, place_fit_eval_job
from helixclock.stages.neurons.neuron_files import has_up_fits, load_neuron_fits, load_units
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
acc = accuracy(snakemake)
require(snakemake, fit_eval_needs(acc, minimum(snakemake)))
path = snakemake.input.fits
fits = load_neuron_fits(path)
fitted = [fits.predict()] + ([load_neuron_fits(path, "up").predict()] if has_up_fits(path) else [])
top = pd.DataFrame({"layer": fits.layer, "neuron": fits.neuron})
model, engine = open_model(snakemake)
template = snakemake.params.spec["prompts"]["add"]
means = np.load(snakemake.input.means)
neurons = settings(snakemake, "neurons", NeuronSettings)
if several_tokens(model):
    top = pd.concat([top, load_units(path)], axis=1)
    raw = place_fit_eval_job(engine, acc, template, top, fitted, means, neurons)
else:
    last = read_json(snakemake.input.card)["positions"]["add"]["last"]
    raw = neuron_fit_eval(engine, acc, template, last, top, fitted, means, neurons)
raw.to_csv(snakemake.output[0], index=False)

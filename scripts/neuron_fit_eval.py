"""Rule neuron_fit_eval: fig09, the top k neurons with actual or fitted preactivations."""

import numpy as np
import pandas as pd

from helixclock.io import read_json
from helixclock.model_jobs import open_model
from helixclock.pipeline import accuracy, minimum, require, settings, start
from helixclock.preconditions import fit_eval_needs
from helixclock.stages.neurons.jobs import neuron_fit_eval
from helixclock.stages.neurons.neuron_files import has_up_fits, load_neuron_fits
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
acc = accuracy(snakemake)
require(snakemake, fit_eval_needs(acc, minimum(snakemake)))
path = snakemake.input.fits
fits = load_neuron_fits(path)
fitted = [fits.predict()] + ([load_neuron_fits(path, "up").predict()] if has_up_fits(path) else [])
top = pd.DataFrame({"layer": fits.layer, "neuron": fits.neuron})
_, engine = open_model(snakemake)
last = read_json(snakemake.input.card)["positions"]["add"]["last"]
template = snakemake.params.spec["prompts"]["add"]
means = np.load(snakemake.input.means)
raw = neuron_fit_eval(engine, acc, template, last, top, fitted, means, settings(snakemake, "neurons", NeuronSettings))
raw.to_csv(snakemake.output[0], index=False)

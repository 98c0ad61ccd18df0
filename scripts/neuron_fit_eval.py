"""Rule neuron_fit_eval: fig09, the top k units of every place with actual or fitted preactivations
(one-token numbers: the top k neurons at the last token)."""

import numpy as np

from helixclock.jobs.model_jobs import open_model
from helixclock.jobs.pipeline import accuracy, minimum, require, settings, start
from helixclock.jobs.preconditions import fit_eval_needs
from helixclock.stages.neurons.jobs import neuron_fit_eval
from helixclock.stages.neurons.neuron_files import fitted_units
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
acc = accuracy(snakemake)
require(snakemake, fit_eval_needs(acc, minimum(snakemake)))
top, fitted = fitted_units(snakemake.input.fits)
model, engine = open_model(snakemake)
template = snakemake.params.spec["prompts"]["add"]
means = np.load(snakemake.input.means)
neurons = settings(snakemake, "neurons", NeuronSettings)
raw = neuron_fit_eval(engine, acc, template, top, fitted, means, neurons)
raw.to_csv(snakemake.output[0], index=False)

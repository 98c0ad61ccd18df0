"""Rule neuron_fit_eval: fig09, the top k neurons with actual or fitted preactivations."""

import numpy as np
import pandas as pd

from helixclock.io import read_json
from helixclock.pipeline import accuracy, load, minimum, patching_engine, require, settings, start
from helixclock.preconditions import fit_eval_needs
from helixclock.stages.neurons.fit_files import has_up_fits, load_fits
from helixclock.stages.neurons.jobs import fit_eval_job
from helixclock.stages.neurons.patching import NeuronSettings

start(snakemake)
acc = accuracy(snakemake)
require(snakemake, fit_eval_needs(acc, minimum(snakemake)))
fits = load_fits(snakemake.input.fits)
fitted = [fits.predict()] + (
    [load_fits(snakemake.input.fits, "up").predict()] if has_up_fits(snakemake.input.fits) else []
)
top = pd.DataFrame({"layer": fits.layer, "neuron": fits.neuron})
model = load(snakemake)
last = read_json(snakemake.input.card)["positions"]["add"]["last"]
raw = fit_eval_job(
    patching_engine(snakemake, model),
    acc,
    snakemake.params.spec["prompts"]["add"],
    last,
    top,
    fitted,
    np.load(snakemake.input.means),
    settings(snakemake, "neurons", NeuronSettings),
)
raw.to_csv(snakemake.output[0], index=False)

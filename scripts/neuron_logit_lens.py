"""Rule neuron_logit_lens: App. F, the top neurons' logit lens (Figs. F3, F4)."""

import numpy as np
import pandas as pd

from helixclock.io import read_arrays
from helixclock.pipeline import start
from helixclock.stages.errors.logit_lens import match_shares, neuron_lens_tables

log = start(snakemake)
neurons = pd.read_csv(snakemake.input.neurons)
grids = read_arrays(snakemake.input.grids)  # rows in attribution-rank order, as neurons.csv
rows = [int(np.flatnonzero(grids["rank"] == r)[0]) for r in snakemake.params.figure_ranks if (grids["rank"] == r).any()]
out = neuron_lens_tables(neurons, grids["lens"], rows, periods=snakemake.params.periods)
out["logit_lens"].to_csv(snakemake.output.lens, index=False)
out["logit_lens_periods"].to_csv(snakemake.output.periods, index=False)
shares = match_shares(out["logit_lens_periods"])
log.info(
    "figF4: %d neurons, lens period = fitted period %.1f%%, up to a harmonic %.1f%%",
    shares["n"],
    100 * shares["strict"],
    100 * shares["harmonic"],
)

"""Rule neuron_logit_lens: App. F, the top neurons' logit lens (Figs. F3, F4), and for answers of
several tokens F4's base rate."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.project.io import read_arrays
from helixclock.stages.mistakes.logit_lens import match_shares, neuron_logit_lens

log = start(snakemake)
p = snakemake.params
out = neuron_logit_lens(
    pd.read_csv(snakemake.input.neurons), read_arrays(snakemake.input.grids), p.figure_ranks, p.periods
)
out["logit_lens"].to_csv(snakemake.output.lens, index=False)
out["logit_lens_periods"].to_csv(snakemake.output.periods, index=False)
out["logit_lens_null"].to_csv(snakemake.output.null, index=False)
shares = match_shares(out["logit_lens_periods"])
log.info(
    "figF4: %d neurons, lens = fitted period %.1f%%, up to a harmonic %.1f%%",
    shares["n"],
    100 * shares["strict"],
    100 * shares["harmonic"],
)
if len(out["logit_lens_null"]):
    log.info("figF4 against its base rate:\n%s", out["logit_lens_null"].drop(columns="lens").to_string())

"""Rule last_token_patching: Fig. 5, last-token helix fits patched at every layer."""
import pandas as pd

from helixclock.cache import read_residual_cache
from helixclock.clock import clock_pairs, last_token_curves
from helixclock.pipeline import engine, load, start

log = start(snakemake)
p = snakemake.params
acc = pd.read_csv(snakemake.input.accuracy)
model = load(snakemake)
runner = engine(snakemake, model)
pairs = clock_pairs(runner, acc[acc["correct"]], p.spec["prompts"]["add"], p.n_pairs, p.seed, p.corrupt)
curves = last_token_curves(runner, pairs, read_residual_cache(snakemake.input.cache, datasets=("last", "ab")),
                           p.periods, p.n_components, p.bootstrap, p.seed)
curves.to_csv(snakemake.output[0], index=False)
log.info("max LD per fit:\n%s", curves.groupby("fit")["ld_mean"].max())

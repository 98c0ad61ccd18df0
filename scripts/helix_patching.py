"""Rule helix_patching: Fig. 4 sweep, controls (Fig. C5) and ablation (Fig. C6), per pair."""
import pandas as pd

from helixclock.cache import read_residual_cache
from helixclock.fits import FitSettings, load_fits, to_device
from helixclock.pipeline import load, patching_engine, require, settings, start
from helixclock.stages.helix.patching import helix_stage

start(snakemake)
require(snakemake)
p = snakemake.params
acc = pd.read_csv(snakemake.input.accuracy)
model = load(snakemake)
fits = to_device(load_fits(snakemake.input.fits), model.device)
cache = read_residual_cache(snakemake.input.cache)
out = helix_stage(patching_engine(snakemake, model), acc[acc["correct"]], cache, fits, p.spec["prompts"]["add"],
                  settings(snakemake, "fit", FitSettings), n_pairs=p.n_pairs, seed=p.seed,
                  test_fraction=p.test_fraction)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

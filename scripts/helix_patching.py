"""Rule helix_patching: Fig. 4 sweep, controls (Fig. C5) and ablation (Fig. C6), per pair."""

from helixclock.bases import FitSettings
from helixclock.cache import read_residual_cache
from helixclock.fit_files import load_fits
from helixclock.fits import to_device
from helixclock.pipeline import accuracy, load, minimum, patching_engine, require, settings, start
from helixclock.preconditions import helix_patching_needs
from helixclock.stages.helix.patching import helix_stage

start(snakemake)
p = snakemake.params
acc = accuracy(snakemake)
require(snakemake, helix_patching_needs(acc, p.fit["periods"], p.n_pairs, p.test_fraction, p.seed, minimum(snakemake)))
model = load(snakemake)
fits = to_device(load_fits(snakemake.input.fits), model.device)
cache = read_residual_cache(snakemake.input.cache)
out = helix_stage(
    patching_engine(snakemake, model),
    acc[acc["correct"]],
    cache,
    fits,
    p.spec["prompts"]["add"],
    settings(snakemake, "fit", FitSettings),
    n_pairs=p.n_pairs,
    seed=p.seed,
    test_fraction=p.test_fraction,
)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

"""Rule helix_patching: Fig. 4 sweep, controls (Fig. C5) and ablation (Fig. C6), per pair."""

from helixclock.bases import FitSettings
from helixclock.cache import read_residual_cache
from helixclock.fits import to_device
from helixclock.helix_files import load_helix_fits
from helixclock.model_jobs import open_model, token_shapes
from helixclock.pipeline import accuracy, minimum, require, settings, start
from helixclock.preconditions import helix_patching_needs
from helixclock.stages.helix.patching import helix_patching

start(snakemake)
p = snakemake.params
acc = accuracy(snakemake)
needs = helix_patching_needs(acc, p.fit["periods"], p.n_pairs, p.test_fraction, p.seed, minimum(snakemake))
require(snakemake, needs)
model, engine = open_model(snakemake)
shape = token_shapes(model, p.spec["prompts"]["add"], acc[acc["correct"]])
if shape is not None:  # numbers of several tokens: the pairs it will draw, partners of one shape
    needs = helix_patching_needs(acc, p.fit["periods"], p.n_pairs, p.test_fraction, p.seed, minimum(snakemake), shape)
    require(snakemake, needs)
fits = to_device(load_helix_fits(snakemake.input.fits), model.device)
cache = read_residual_cache(snakemake.input.cache)
fit = settings(snakemake, "fit", FitSettings)
out = helix_patching(
    engine,
    acc[acc["correct"]],
    cache,
    fits,
    p.spec["prompts"]["add"],
    fit,
    p.n_pairs,
    p.seed,
    p.test_fraction,
    p.layer_step,
    p.period_subsets,
)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

"""Rule helix_patching: Fig. 4 sweep, controls (Fig. C5) and ablation (Fig. C6), per pair."""

from functools import partial

from helixclock.fitting.bases import FitSettings
from helixclock.fitting.fits import to_device
from helixclock.fitting.helix_files import load_helix_fits
from helixclock.jobs.model_jobs import open_checked, selection
from helixclock.jobs.pipeline import accuracy, minimum, settings, start
from helixclock.jobs.preconditions import helix_patching_needs
from helixclock.project.cache import read_residual_cache
from helixclock.stages.helix.patching import helix_patching

start(snakemake)
p = snakemake.params
acc = accuracy(snakemake)
correct = acc[acc["correct"]]
needs = partial(helix_patching_needs, acc, p.fit["periods"], p.n_pairs, p.test_fraction, p.seed, minimum(snakemake))
model, engine = open_checked(snakemake, needs, p.spec["prompts"]["add"], correct)
fits = to_device(load_helix_fits(snakemake.input.fits), model.device)
cache = read_residual_cache(snakemake.input.cache)
fit = settings(snakemake, "fit", FitSettings)
out = helix_patching(
    engine,
    correct,
    cache,
    fits,
    p.spec["prompts"]["add"],
    fit,
    p.n_pairs,
    p.seed,
    p.test_fraction,
    p.layer_step,
    p.period_subsets,
    selection(snakemake),
)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)

"""Rule helix_patching: Fig. 4 sweep, controls (Fig. C5) and ablation (Fig. C6)."""
import pandas as pd

from helixclock.cache import read_residual_cache
from helixclock.helix import load_fits
from helixclock.helix_patching import helix_stage
from helixclock.pipeline import engine, load, start

log = start(snakemake)
p = snakemake.params
acc = pd.read_csv(snakemake.input.accuracy)
model = load(snakemake)
fits = load_fits(snakemake.input.fits)
fits.C, fits.pca.mean = fits.C.to(model.device), fits.pca.mean.to(model.device)
fits.pca.components = fits.pca.components.to(model.device)
out = helix_stage(engine(snakemake, model), acc[acc["correct"]], read_residual_cache(snakemake.input.cache),
                  fits, p.spec["prompts"]["add"], n_pairs=p.n_pairs, seed=p.seed, n_boot=p.bootstrap,
                  periods=p.periods, test_fraction=p.test_fraction, n_components=p.pca_components)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("best subsets:\n%s", out["best"].to_string())

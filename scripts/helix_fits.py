"""Rule helix_fits: helix, circle and polynomial fits of the a-token residuals at every layer."""
import torch

from helixclock.cache import read_residual_cache
from helixclock.helix import figure_tables, r2_table, save_fits, standard_bases, unique_rows
from helixclock.helix_patching import fit_token
from helixclock.pipeline import start

log = start(snakemake)
p = snakemake.params
cache = read_residual_cache(snakemake.input[0], datasets=("a", "ab"))
H = torch.from_numpy(cache.a).transpose(0, 1)  # [layers, rows, d]
a = cache.ab[:, 0]
fits = fit_token(H, a, standard_bases(p.periods), p.n_components)
save_fits(snakemake.output.fits, fits, model=snakemake.wildcards.model, token="a",
          layer_convention=cache.attrs["layer_convention"])
r2 = r2_table(fits)
r2.to_csv(snakemake.output.r2, index=False)
values, H_u, _ = unique_rows(a, H)
for name, df in figure_tables(fits, H_u, values, p.figure_layer, p.periods).items():
    df.to_csv(snakemake.output[name], index=False)
log.info("R^2 of the full helix by layer:\n%s", r2[r2["basis"] == f"helix(a)[{','.join(map(str, p.periods))}]"])

"""Rule number_bases: which basis explains a number's last token, at every layer (helixclock's
test of a T = 100 helix against digit circles and the digit-count classes)."""

from helixclock.cache import read_residual_cache
from helixclock.pipeline import start
from helixclock.stages.structure.number_bases import number_bases_tables

log = start(snakemake)
p = snakemake.params
cache = read_residual_cache(snakemake.input.cache, datasets=("numbers",))
tables = number_bases_tables(cache.numbers, n_boot=p.bootstrap, seed=p.seed, periods=p.periods, n_fourier=p.n_fourier)
for name in ("r2", "pairs", "winner", "layer", "peaks"):
    tables[name].to_csv(snakemake.output[name], index=False)
log.info("winner by layer:\n%s", tables["winner"].to_string())
log.info("where the whole number reaches its last token (the layer rule):\n%s", tables["layer"].to_string())

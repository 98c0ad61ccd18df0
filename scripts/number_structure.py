"""Rule number_structure: spectrum, peaks, PC1, distances of bare numbers (Fig. 2, B1-B4)."""

from helixclock.cache import read_residual_cache
from helixclock.io import write_table
from helixclock.pipeline import start
from helixclock.stages.structure.analysis import peaks_by_layer, structure_tables

log = start(snakemake)
cache = read_residual_cache(snakemake.input[0], datasets=("numbers",))
tables = structure_tables(
    cache.numbers, snakemake.params.layer, n_fourier=snakemake.params.n_fourier, compat=snakemake.params.compat
)
for name in ("spectrum", "pc1", "similarity", "delta_n"):
    tables[name].to_csv(snakemake.output[name], index=False)
write_table(tables["peaks"], snakemake.output.peaks, snakemake.output.peaks_md)
p = snakemake.params
peaks_by_layer(cache.numbers, p.n_fourier, compat=p.compat).to_csv(snakemake.output.peaks_by_layer, index=False)
log.info("strongest periods:\n%s", tables["peaks"].head(10).to_string())

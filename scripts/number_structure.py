"""Rule number_structure: spectrum, peaks, PC1, distances of bare numbers (Fig. 2, B1-B4)."""

from helixclock.jobs.pipeline import start
from helixclock.project.cache import read_residual_cache
from helixclock.project.io import write_table
from helixclock.stages.structure.analysis import number_structure

log = start(snakemake)
p = snakemake.params
cache = read_residual_cache(snakemake.input.cache, datasets=("numbers",))
tables = number_structure(cache.numbers, p.layer, p.n_fourier, p.compat)
for name in ("spectrum", "pc1", "similarity", "delta_n", "peaks_by_layer"):
    tables[name].to_csv(snakemake.output[name], index=False)
write_table(tables["peaks"], snakemake.output.peaks, snakemake.output.peaks_md)
log.info("strongest periods:\n%s", tables["peaks"].head(10).to_string())

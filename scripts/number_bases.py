"""Rule number_bases: which basis explains a number's last token, at every layer, and the nested
test of a T = 100 component beyond the digits with what it can detect (helixclock's, README
"Numbers of several tokens")."""

from helixclock.jobs.pipeline import start
from helixclock.project.cache import read_residual_cache
from helixclock.stages.structure.nested import nested_tables
from helixclock.stages.structure.number_bases import check_registry_layers, number_bases_tables

log = start(snakemake)
p = snakemake.params
cache = read_residual_cache(snakemake.input.cache, datasets=("numbers",))
tables = number_bases_tables(cache.numbers, n_boot=p.bootstrap, seed=p.seed, periods=p.periods, n_fourier=p.n_fourier)
tables.update(nested_tables(cache.numbers, n_boot=p.bootstrap, seed=p.seed, periods=p.periods))
# the layers the registry sets by hand must be the rule's
check_registry_layers(tables["layer"], p.registry_layers, snakemake.wildcards.model)
for name in ("r2", "pairs", "winner", "layer", "peaks", "nested", "power"):
    tables[name].to_csv(snakemake.output[name], index=False)
log.info("winner by layer (a description; the T = 100 verdict is the nested test):\n%s", tables["winner"].to_string())
verdict = tables["nested"][tables["nested"]["verdict_test"]]
log.info("T = 100 beyond the digit one-hot and classes (Holm over layers):\n%s", verdict.to_string())
log.info("where the whole number reaches its last token (the layer rule):\n%s", tables["layer"].to_string())

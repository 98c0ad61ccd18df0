"""Rule not_run: the parts of the paper a model with numbers of several tokens does not run, and why."""

from helixclock.io import write_table
from helixclock.pipeline import start
from helixclock.stages.report.compare import not_run_table

start(snakemake)
write_table(not_run_table(snakemake.wildcards.model, snakemake.params.reasons), *snakemake.output)

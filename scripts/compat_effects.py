"""Rule compat_effects: the affected numbers under every mode run so far, side by side."""

from helixclock.jobs.pipeline import start
from helixclock.project.io import write_table
from helixclock.stages.report.compat import compat_effects

start(snakemake)
write_table(compat_effects(snakemake.params.modes), *snakemake.output)

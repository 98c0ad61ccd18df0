"""Rule paper_comparison: every number of config/paper_values.yaml beside the run's, per model,
and the counts of each status per model."""

from pathlib import Path

from helixclock.jobs.pipeline import start
from helixclock.project.io import write_table
from helixclock.stages.report.compare import paper_comparison_report
from helixclock.stages.report.status import status_counts

start(snakemake)
df, md = paper_comparison_report(
    ".",
    snakemake.params.models,
    snakemake.input.values,
    provenance=snakemake.input.provenance,
    tolerance=snakemake.params.tolerance,
)
df.to_csv(snakemake.output[0], index=False)
Path(snakemake.output[1]).write_text(md)
write_table(status_counts(df), *snakemake.output[2:4])

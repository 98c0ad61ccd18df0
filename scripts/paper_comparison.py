"""Rule paper_comparison: every number of config/paper_values.yaml beside the run's, per model."""

from pathlib import Path

from helixclock.pipeline import start
from helixclock.stages.report.compare import paper_comparison_report

start(snakemake)
df, md = paper_comparison_report(
    ".", snakemake.params.models, snakemake.input.values, provenance=snakemake.input.provenance
)
df.to_csv(snakemake.output[0], index=False)
Path(snakemake.output[1]).write_text(md)

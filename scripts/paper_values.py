"""Rule paper_values: config/paper_values.yaml (its text, a param) copied into the project."""

from pathlib import Path

from helixclock.jobs.pipeline import start

log = start(snakemake)
Path(snakemake.output[0]).write_text(snakemake.params.text)
log.info("the paper's numbers: %d characters written to %s", len(snakemake.params.text), snakemake.output[0])

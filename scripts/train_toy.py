"""Rule train_toy: train a toy model of the embedded default."""
from pathlib import Path

from helixclock.pipeline import start
from helixclock.toy import train_toy

log = start(snakemake)
record = train_toy(snakemake.wildcards.model, snakemake.params.spec,
                   Path(snakemake.output[0]).parent, **snakemake.params.toy)
log.info("trained in %.1f s: %s", record["train_seconds"], record["accuracy"])

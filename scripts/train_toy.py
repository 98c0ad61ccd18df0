"""Rule train_toy: install the committed checkpoint of a toy model of the embedded default
when it was trained with exactly these settings, else train it here."""

from pathlib import Path

from helixclock.jobs.pipeline import start
from helixclock.lm.toy import install_checkpoint, matching_checkpoint, train_toy

log = start(snakemake)
model, spec, toy = snakemake.wildcards.model, snakemake.params.spec, snakemake.params.toy
out = Path(snakemake.output[0])  # the staged model directory (published into resources/models/)
# the checkpoint committed in the checkout (input committed, where its settings are these: the DAG
# then runs this job only with toy_retrain; README, "The embedded default")
record = snakemake.input.get("committed")
committed = matching_checkpoint(Path(record[0]).parent, spec, toy) if record else None
if committed is not None and not snakemake.params.retrain:
    record = install_checkpoint(committed, out)
    log.info(
        "installed the committed checkpoint %s (trained in %.0f s; --config toy_retrain=true trains it here): %s",
        committed,
        record["train_seconds"],
        record["accuracy"],
    )
else:
    if committed is None:
        log.info("no committed checkpoint of %s with these settings in %s: training", model, snakemake.params.committed)
    record = train_toy(model, spec, out, **toy)
    log.info("trained in %.1f s: %s", record["train_seconds"], record["accuracy"])

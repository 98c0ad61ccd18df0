"""Rule findings: every finding of config/findings.yaml that applies to the model, from the saved tables."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.stages.findings.registry import Registry
from helixclock.stages.findings.tables import findings_tables

start(snakemake)
p = snakemake.params
tables = {k: pd.read_csv(v) for k, v in snakemake.input.items()}
prompts = {k.removeprefix("prompts_"): t for k, t in tables.items() if k.startswith("prompts_")}
accuracy = {k.removeprefix("accuracy_"): t for k, t in tables.items() if k.startswith("accuracy_")}
frames = {k: t for k, t in tables.items() if not k.startswith(("prompts_", "accuracy_"))}
registry = Registry(**p.registry)
model = snakemake.wildcards.model
out = findings_tables(registry, p.several, frames, prompts, resampling(snakemake), p.compat, model, accuracy)
out["contrasts"].to_csv(snakemake.output.contrasts, index=False)
out["model"].to_csv(snakemake.output.model, index=False)
for name in ("page", "html"):
    with open(snakemake.output[name], "w", encoding="utf-8") as fh:
        fh.write(out[name])

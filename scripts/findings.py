"""Rule findings: every finding of config/findings.yaml that applies to the model, from the saved tables."""

import pandas as pd

from helixclock.jobs.pipeline import resampling, start
from helixclock.stages.findings.registry import Registry
from helixclock.stages.findings.tables import findings_tables

start(snakemake)
p = snakemake.params
prompts = {k.removeprefix("prompts_"): pd.read_csv(v) for k, v in snakemake.input.items() if k.startswith("prompts_")}
frames = {k: pd.read_csv(v) for k, v in snakemake.input.items() if not k.startswith("prompts_")}
registry = Registry(**p.registry)
out = findings_tables(registry, p.several, frames, prompts, resampling(snakemake), p.compat, snakemake.wildcards.model)
out["contrasts"].to_csv(snakemake.output.contrasts, index=False)
for name in ("page", "html"):
    with open(snakemake.output[name], "w", encoding="utf-8") as fh:
        fh.write(out[name])

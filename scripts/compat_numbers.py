"""Rule compat_numbers: the numbers config key compat changes, for this run's mode."""

import pandas as pd

from helixclock.jobs.pipeline import start
from helixclock.stages.report.compat import compat_numbers, write_numbers

start(snakemake)
t = {
    name: pd.read_csv(snakemake.input[name])
    for name in ("tab01", "best", "peaks", "head_topk", "mlp_topk", "mixed", "categories", "last_token")
}
numbers = compat_numbers(
    t["tab01"],
    t["best"],
    t["peaks"],
    snakemake.params.spectrum_main,
    t["head_topk"],
    t["mlp_topk"],
    t["mixed"],
    t["categories"],
    t["last_token"],
)
write_numbers(snakemake.output[0], numbers, snakemake.params.compat)

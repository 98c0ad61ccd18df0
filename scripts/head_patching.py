"""Rule head_patching: Figs. D2-D7, attention heads at the last token."""
import json

import pandas as pd

from helixclock.clock import clock_pairs, fit_prompt_ids
from helixclock.heads import head_stage
from helixclock.pipeline import engine, load, start

log = start(snakemake)
p = snakemake.params
acc = pd.read_csv(snakemake.input.accuracy)
correct = acc[acc["correct"]]
card = json.load(open(snakemake.input.card))
model = load(snakemake)
runner = engine(snakemake, model)
template = p.spec["prompts"]["add"]
pairs = clock_pairs(runner, correct, template, p.n_pairs, p.seed, p.corrupt)
ids, a, b = fit_prompt_ids(model, correct, template, p.fit_prompts, p.seed)
out = head_stage(runner, pairs, ids, a, b, card["positions"]["add"], p.top_heads, p.head_threshold, p.periods,
                 p.n_components, p.bootstrap, p.seed)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("head categories:\n%s", out["categories"].to_string())

"""Rule mlp_patching: Fig. 6 layer effects, Fig. D8 top-k MLPs, Fig. 7 MLP stages."""
import json

import pandas as pd

from helixclock.clock import clock_pairs, fit_prompt_ids
from helixclock.mlps import mlp_stage
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
out = mlp_stage(runner, pairs, ids, a, b, card["positions"]["add"]["last"], p.mlp_threshold, p.periods,
                p.n_components, p.bootstrap, p.seed)
for name, df in out.items():
    df.to_csv(snakemake.output[name], index=False)
log.info("circuit MLPs:\n%s", out["mlp_stages"].to_string())

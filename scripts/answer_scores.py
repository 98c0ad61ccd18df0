"""Rule answer_scores: numbers of several tokens, the log-likelihood L(n) of each answer 0..198
and its independent-digits control after a sample of the a+b prompts (Figs. F5, F6)."""

from helixclock.jobs.model_jobs import open_model
from helixclock.jobs.pipeline import accuracy, start
from helixclock.stages.mistakes.answer_scores import answer_scores, save_answer_scores

log = start(snakemake)
p = snakemake.params
acc = accuracy(snakemake)
model, _ = open_model(snakemake)
template = p.spec["prompts"]["add"]
out = answer_scores(model, acc, template, p.prompts, p.seed)
save_answer_scores(snakemake.output.scores, out, template)
log.info("L(n) of the answers 0..198 after %d a+b prompts", len(out["rows"]))

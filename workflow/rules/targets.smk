# The default target and the report: the outputs each rule file registers for `rule all`, the
# report's sections (one per paper section), a table's or a figure's outputs (table, figure_files),
# and the models the cross-model outputs compare (COMPARED_MODELS).
import re
from pathlib import Path

from snakemake.logging import logger

from helixclock.project import outputs

# Outputs of each stage, registered by its rule file; `rule all` asks for all of them.
PER_MODEL_OUTPUTS = []  # patterns with {model}
ALL_MODELS_OUTPUTS = []  # cross-model outputs under results/all/
# Report categories, one per paper section, in the paper's order ("0 Paper vs run" first), then
# the findings pages and their tables (the report's landing text, workflow/report/workflow.rst,
# links each model's page first)
SECTIONS = {
    "report": "0 Paper vs run",
    "accuracy": "1 Accuracy (section 3, App. A)",
    "structure": "2 Structure of numbers (section 4.1, App. B)",
    "helix": "3 The helix (sections 4.2-4.5, App. C)",
    "last_token": "4 The last token (section 5.1)",
    "heads": "5 Attention heads (section 5.2, App. D.1)",
    "mlps": "6 MLPs (section 5.3, App. D.2)",
    "neurons": "7 Neurons (section 5.4, App. D.2)",
    "mistakes": "8 Why a helix, and the model's errors (App. E, F)",
    "findings": "9 Findings: every declared claim tested",
}


def caption(output_id):
    """workflow/report/<id>.rst for a figure (by its number, fig04_... -> fig04.rst) or a table."""
    number = re.match(r"(fig|tab)[A-Z]?[0-9]+", output_id)
    return f"../report/{number.group(0) if number else output_id}.rst"


def table(tab_id, model="{model}", stage=None):
    """The CSV and Markdown of one table; with ``stage``, the CSV goes into the report under
    that stage's section."""
    csv, md = outputs.table(tab_id, model)
    if stage is not None:
        csv = report(
            csv,
            caption=caption(tab_id),
            category=SECTIONS[stage],
            subcategory="{model}" if model == "{model}" else model,
        )
    return [csv, md]


def register(*paths, all_models=False):
    """The outputs the default target (``all``) asks for: of every model (patterns with {model}),
    or with ``all_models`` the cross-model ones."""
    (ALL_MODELS_OUTPUTS if all_models else PER_MODEL_OUTPUTS).extend(paths)


def figure_files(fig_id, stage):
    """The outputs of a figure rule: the PNG (into the report, under the stage's section,
    captioned by workflow/report/<figure number>.rst) and the PDF of one figure of every model,
    which the default target asks for (registered here; every output path: helixclock.project.outputs)."""
    pdf, png = outputs.figure(fig_id)
    register(pdf, png)
    return [report(png, caption=caption(fig_id), category=SECTIONS[stage], subcategory="{model}"), pdf]


def final_outputs():
    return [p.format(model=m) for m in MODELS for p in PER_MODEL_OUTPUTS] + ALL_MODELS_OUTPUTS


def cross_model_inputs(model):
    """What the cross-model outputs read of a model: its card and compared tables, its a+b
    accuracy (Table A1)."""
    per_model = [p for p in outputs.COMPARED_TABLES.values() if "{model}" in p]
    return [p.format(model=model) for p in per_model] + [outputs.accuracy("add", model)]


# The cross-model outputs (results/all) compare every model with finished results in this project
# folder, not only this command's (README, "Outputs"): the models of config key models, made or
# remade by this command, and, read as they stand, every other registered model whose files
# cross_model_inputs all exist (those models' jobs are not in this command's DAG, so nothing of
# theirs is rerun).  Running the paper's models one by one thus ends with all of them compared,
# in the registry's order.  Only the command's models are the cross-model jobs' inputs (a finished
# model's files as inputs would bring its jobs into the DAG, to be rerun on any change of code or
# settings): a command naming another set of models reruns those local jobs, in seconds, with
# every finished model still compared.
FINISHED = [m for m in REGISTRY if m not in MODELS and all(Path(f).exists() for f in cross_model_inputs(m))]
COMPARED_MODELS = [m for m in REGISTRY if m in MODELS or m in FINISHED]
if FINISHED:
    logger.info(f"{outputs.ALL} compares {', '.join(COMPARED_MODELS)} ({', '.join(FINISHED)}: finished results)")

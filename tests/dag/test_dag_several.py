"""The whole DAG on a model whose numbers take several tokens (docs/several-tokens.md, "Numbers of several
tokens"): toy-digits of tests/configs/models.yaml, a tiny Llama-architecture toy whose tokenizer
splits every number into digits, trained in seconds.  Every stage runs (accuracy, the structure of
numbers, the helix and its causal tests, the last token, heads, MLPs, neurons by place and App. E/F's
error analysis), and nothing is left to plan."""

import json

import h5py
import pandas as pd
import pytest

MODEL = "toy-digits"
RUNS = (
    "figures/figA1_accuracy_heatmap.png",
    "figures/fig02_fourier_pc1.png",
    "figures/fig03_helix_projection.png",
    "figures/fig04_helix_patching.png",
    "figures/fig05_last_token_helix.png",
    "figures/fig06_layer_patching.png",
    "figures/figD8_mlp_topk.png",
    "figures/figF5_logit_examples.png",
    "figures/figF6_logit_slope_fourier.png",
    "figures/fig07_mlp_stages.png",
    "figures/figC5_helix_controls.png",
    "figures/figE1_linear_addition.png",
    "figures/figF1_error_distribution.png",
    "figures/fig01_clock.png",
    "figures/figD2_head_patching.png",
    "figures/figD6_head_categories.png",
    "figures/figD7_head_paths.png",
    "figures/fig08_neuron_preacts.png",
    "figures/fig09_neuron_fit_eval.png",
    "figures/figD9_neuron_ablation.png",
    "figures/figD11_neuron_direct_effect.png",
    "figures/figF3_neuron_logit_lens.png",
    "figures/figF4_logit_lens_periods.png",
    "tables/fourier_peaks.csv",
    "tables/tab01_other_tasks.csv",
    "tables/tabD1_head_categories.csv",
    "tables/tabD2_top_neurons.csv",
)


def test_every_stage_runs(digits_run):
    work, _ = digits_run
    results = work / "results" / MODEL
    for rel in RUNS:
        assert (results / rel).stat().st_size > 0, rel
    heads = pd.read_csv(results / "heads/effects.csv")  # both readings, LD the log-likelihood ratio
    assert set(heads["reading"]) == {"last token", "answer positions"} and (heads["term"] == "ld").all()
    neurons = pd.read_csv(results / "neurons/neurons.csv")  # units by place, both bases fitted
    assert set(neurons["place"]) == {"units", "tens", "hundreds"}
    assert neurons[["nrmse", "nrmse_digits"]].notna().all().all() and set(neurons["better"]) <= {"Eq. 5", "digits"}
    stages = pd.read_csv(results / "mlps/mlp_stages.csv")  # the MLP stage at both readings (section 5.3)
    assert len(stages) and set(stages["reading"]) == {"last token", "answer positions"}  # (an empty table fails)
    effects = pd.read_csv(results / "mlps/mlp_effects.csv")
    assert effects.groupby("reading")["layer"].nunique().to_dict() == {"answer positions": 2, "last token": 2}
    assert effects[["te_matched", "de_over_te_matched"]].notna().all().all()  # TE of the tokens DE scores
    # the first differing token, by stratum (answer tokens, p*), beside the last token's matched terms
    readings = {"last token", "answer positions", "first differing token"}
    for table in ("mlps/mlp_strata.csv", "heads/strata.csv", "last_token/layer_effects_strata.csv"):
        strata = pd.read_csv(results / table)
        assert len(strata) and set(strata["reading"]) == readings, table
        at = strata[strata["reading"] == "first differing token"]
        assert (at["p_star"] < at["answer_tokens"]).all() and at[["te", "de"]].notna().all().all(), table
    fits = pd.read_csv(results / "last_token/fits_strata.csv")
    assert "first differing token" in set(fits["reading"]) and "first differing token" not in set(
        pd.read_csv(results / "last_token/fits.csv")["reading"]
    )
    tab01 = pd.read_csv(results / "tables/tab01_other_tasks.csv")
    assert "a+b" in set(tab01["task"])
    per_prompt = pd.read_csv(results / "mistakes/logit_line_fourier.csv")  # L(n) of the tiny config's 200 prompts
    assert len(per_prompt) == 200 and {"control_top_period", "control_slope"} <= set(per_prompt)
    examples = pd.read_csv(results / "mistakes/logit_examples.csv")
    assert examples.groupby("example")["token"].nunique().eq(199).all() and (examples["logit"] < 0).all()
    comparison = pd.read_csv(work / "results/all/tables/paper_comparison.csv")
    mine = comparison[comparison["model"] == MODEL]
    assert mine["status"].isin(["agree", "differ"]).any()
    logits = mine.set_index("id").loc[["logit_top_period", "logit_slope_negative_share"]]  # Fig. F6 of L(n)
    assert (logits["status"] == "not comparable").all() and logits["run_value"].notna().all()
    assert logits["reason"].str.startswith("measured on another score than the paper's").all()
    assert logits["ratio"].isna().all()
    assert logits["reason"].str.contains("log-likelihoods L(n)", regex=False).all()
    # Table 1's LD is compared through its ratios to Full only
    judged = mine["status"].isin(["agree", "differ", "not comparable"])
    assert not (mine["status"] == "missing").any() and not (judged & mine["run_value"].isna()).any()
    assert mine.set_index("id").loc["heads_k_for_80pct", "run_value"] >= 0  # the head stage's last-token reading
    add = mine.set_index("id").loc["tab01_add_helix"]
    assert add["status"] in ("agree", "differ") and pd.isna(add["ratio"]) and "ratio to Full" in add["reason"]
    assert add["run_to_full"] == pytest.approx(
        add["run_value"] / mine.set_index("id").loc["tab01_add_full", "run_value"]
    )


def test_spans_answers_and_the_cache_of_numbers_of_several_tokens(digits_run):
    work, _ = digits_run
    results = work / "results" / MODEL
    card = json.loads((results / "model.json").read_text())
    assert card["number_tokens"] == "several" and "positions" not in card
    classes = {(c["a_tokens"], c["b_tokens"]): c["count"] for c in card["classes"]["add"]}
    assert classes == {(1, 1): 100, (1, 2): 900, (2, 1): 900, (2, 2): 8100}
    acc = pd.read_csv(results / "accuracy/add.csv")
    assert len(acc) == 10000 and set(acc["answer_tokens"]) == {1, 2, 3}
    right = acc[acc["correct"]]
    assert len(right) > 0 and (right["pred"].astype(str) == right["answer"].astype(str)).all()
    with h5py.File(results / "cache/residuals.h5") as f:
        assert f.attrs["number_tokens"] == "several" and f["a"].shape[0] == len(right)
        assert sorted(map(tuple, f["ab"][()].tolist())) == sorted(zip(right["a"], right["b"]))
        assert f["numbers"].shape[0] == 121  # the tiny config's bare numbers 0..120

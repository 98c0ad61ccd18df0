"""The findings job (helixclock.stages.findings): the registry and its checks, findings computed
from planted raw tables (verdicts recovered, differences aligned pair by pair, choices
cross-fitted), and the page, every number of which is a value of the contrasts table."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.pages import assert_every_number_is_in_the_table
from helpers.tables import pairs_table, sampled_correct
from scipy import stats

from helixclock.lm.config import ConfigError
from helixclock.stages.findings import registry as reg
from helixclock.stages.findings.contrasts import Tables
from helixclock.stages.findings.page import findings_page
from helixclock.stages.findings.tables import findings_tables
from helixclock.stages.heads.tables import categorise, mean_effects
from helixclock.stats.multiplicity import mde
from helixclock.stats.statistics import Resampling

RESAMPLING = Resampling(bootstrap=1000, seed=0)
N = 60
LAYERS = 4


def planted_pairs(seed: int = 0) -> pd.DataFrame:
    """The helix stage's pairs table of a draw by pair_indices (vary a, partners share b), its
    pairs named."""
    pairs = pairs_table(sampled_correct(per_b=6, n_b=25, seed=seed), N, seed)
    pairs.insert(0, "pair", [f"pair_{i}" for i in range(len(pairs))])
    return pairs


def planted_sweep(n: int, seed: int = 0) -> pd.DataFrame:
    """A Fig. 4 sweep: per pair a layer patch rising with the layer, the helix 1.0 below it, PCA
    level with the helix (noise of mean exactly 0 over the pairs), the circle 0.6 below the
    helix, the polynomial 2.0 above it (the opposite of the paper's)."""
    rng = np.random.default_rng(seed)
    pair = rng.normal(0, 2.0, n)
    rows, labels = [], []
    for layer in range(LAYERS):
        full = 3.0 + layer + pair + rng.normal(0, 0.5, n)
        helix = full - 1.0 + rng.normal(0, 0.5, n)
        planted = {
            ("layer", "", np.nan): full,
            ("helix", "2,5,10,100", 4.0): helix,
            ("pca", "", 4.0): helix + (e := rng.normal(0, 0.5, n)) - e.mean(),
            ("circle", "2,5,10,100", 4.0): helix - 0.6 + rng.normal(0, 0.5, n),
            ("poly", "", 4.0): helix + 2.0 + rng.normal(0, 0.5, n),
        }
        for (method, periods, k), values in planted.items():
            labels.append({"layer": layer, "method": method, "periods": periods, "k": k})
            rows.append(values)
    values = pd.DataFrame(np.array(rows), columns=[f"pair_{i}" for i in range(n)])
    return pd.concat([pd.DataFrame(labels), values], axis=1)


REGISTRY = """
min_pairs: 10
families:
  table1: {kind: confirmatory, title: "Table 1 (planted)"}
  ratios: {kind: estimate, title: "Ratios (planted)"}
findings:
  - {id: below_full, section: "4.3", family: table1, models: both, claim: "the helix below Full", quantity: difference,
     expect: negative, table: helix_sweep, x: {label: Helix, method: helix}, y: {label: Full, method: layer},
     select: {over: layer, by: x, rule: max, what: "the helix's best layer"}}
  - {id: above_pca, section: "4.3", family: table1, models: both, claim: "the helix above PCA", quantity: difference,
     expect: positive, table: helix_sweep, x: {label: Helix, method: helix}, y: {label: PCA, method: pca},
     select: {over: layer, by: x, rule: max, what: "the helix's best layer"}}
  - {id: above_circle, section: "4.3", family: table1, models: one-token, claim: "the helix above the circle at layer 2",
     quantity: difference, expect: positive, table: helix_sweep, x: {label: Helix, method: helix, layer: 2},
     y: {label: Circle, method: circle, layer: 2}}
  - {id: above_poly, section: "4.3", family: table1, models: both, claim: "the helix above Poly", quantity: difference,
     expect: positive, table: helix_sweep, x: {label: Helix, method: helix}, y: {label: Poly, method: poly},
     select: {over: layer, by: x, rule: max, what: "the helix's best layer"}}
  - {id: helix_over_full, section: "4.3", family: ratios, models: both, claim: "Helix / Full at layer 1",
     quantity: ratio, table: helix_sweep, x: {label: Helix, method: helix, layer: 1}, y: {label: Full, method: layer, layer: 1}}
  - {id: pca_over_zero, section: "4.3", family: ratios, models: several-token, claim: "PCA / (Helix - PCA)",
     quantity: ratio, table: helix_sweep, x: {label: PCA, method: pca, layer: 0}, y: {label: Circle, method: circle, layer: 0}}
"""


def load_registry(tmp_path, text: str = REGISTRY) -> reg.Registry:
    path = tmp_path / "findings.yaml"
    path.write_text(text)
    return reg.load(path)


def run(registry, sweep, pairs=None, several=False, compat="corrected") -> pd.DataFrame:
    prompts = {"helix_sweep": pairs} if pairs is not None else {}
    out = findings_tables(registry, several, {"helix_sweep": sweep}, prompts, RESAMPLING, compat, "planted")
    return out["contrasts"].set_index("id")


# -- the registry ---------------------------------------------------------------------------------
def test_the_committed_registry_loads_and_names_known_tables():
    registry = reg.load()
    assert len(registry.findings) >= 15
    assert {f["family"] for f in registry.findings} == set(registry.families)
    assert "neuron_bases" in registry.tables(several=True) and "neuron_bases" not in registry.tables(several=False)
    inputs = reg.inputs(registry, False, "toy-gptj")
    assert inputs["helix_sweep"] == "results/toy-gptj/helix/raw/sweep.csv"
    assert inputs["prompts_helix_sweep"] == "results/toy-gptj/helix/raw/pairs.csv"
    assert set(reg.params(registry, False)["families"]) < set(registry.families)  # neurons: several tokens only


@pytest.mark.parametrize(
    "change, message",
    [
        ({"table": "helix_swep"}, "table(s) helix_swep unknown"),
        ({"family": "tabel1"}, "family 'tabel1' is not declared"),
        ({"expect": None}, "needs an expected sign"),
        ({"y": {"method": "layer", "table": "last_token_fits"}}, "different jobs"),
        ({"x": {"method": "helix", "layer": "$layer"}}, "`each` fills no column 'layer'"),
        ({"quantity": "mean"}, "quantity mean takes no y"),
        ({"models": "all"}, "not one of the allowed values"),
        ({"quantity": "tested"}, "quantity tested, a `test` and a table of kind tested go together"),
    ],
)
def test_a_bad_finding_is_refused_with_what_is_wrong(tmp_path, change, message):
    assert_refused(tmp_path, REGISTRY, change, message)


def assert_refused(tmp_path, text: str, change: dict, message: str) -> None:
    """The registry ``text`` with its first finding changed (a key set, or dropped where the
    value is None; a dict for ``test`` changes that block's keys the same way) is refused with
    ``message``."""
    data = yaml.safe_load(text)
    finding = data["findings"][0]
    for k, v in change.items():
        target, items = (finding["test"], v.items()) if k == "test" and isinstance(v, dict) else (finding, [(k, v)])
        for key, value in items:
            if value is None:
                target.pop(key)
            else:
                target[key] = value
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_registry(tmp_path, yaml.safe_dump(data))


# -- computed from planted tables ----------------------------------------------------------------
def test_planted_orderings_are_recovered_with_their_verdicts(tmp_path):
    pairs = planted_pairs()
    t = run(load_registry(tmp_path), planted_sweep(len(pairs)), pairs)
    assert t.loc["below_full", "verdict"] == "holds"
    assert t.loc["above_pca", "verdict"] == "not distinguished"
    assert t.loc["above_circle", "verdict"] == "holds"
    assert t.loc["above_poly", "verdict"] == "reversed"
    for fid, planted in (("below_full", -1.0), ("above_circle", 0.6), ("above_poly", -2.0)):
        assert t.loc[fid, "low"] <= planted <= t.loc[fid, "high"], fid
    assert t.loc["below_full", "selection"] == "the helix's best layer: layer 3 (fold 1) | layer 3 (fold 2)"
    assert (
        t.loc["below_full", "split"] == "cross-fitted (conservative bound)"
        and t.loc["above_circle", "split"] == "fixed"
    )
    # the resampling unit: the pair, though partners repeat (docs/findings.md, "Findings")
    assert t.loc["below_full", "clusters"] == "pairs"
    assert t.loc["above_circle", "n_clusters"] == t.loc["above_circle", "n_pairs"] == len(pairs)
    assert (t["resamples"] == 1000).all() and (t["m"].dropna() == 4).all()
    # an interval that agrees with each verdict
    tested = t[t["verdict"].isin(["holds", "reversed", "not distinguished"])]
    excludes = (tested["adj_low"] > 0) | (tested["adj_high"] < 0)
    assert (excludes == (tested["verdict"] != "not distinguished")).all()
    # the ratio of two means with Fieller's interval; pca_over_zero applies to several tokens only
    assert t.loc["helix_over_full", "verdict"] == "estimate" and "pca_over_zero" not in t.index
    assert t.loc["helix_over_full", "low"] < t.loc["helix_over_full", "estimate"] < t.loc["helix_over_full", "high"]


def test_a_ratio_whose_denominator_straddles_zero_is_not_defined(tmp_path):
    sweep = planted_sweep(N)
    circle = (sweep["method"] == "circle") & (sweep["layer"] == 0)
    cols = [c for c in sweep if c.startswith("pair_")]
    sweep.loc[circle, cols] = np.random.default_rng(1).normal(0, 1, (1, N))  # mean about 0
    t = run(load_registry(tmp_path), sweep, several=True)
    assert t.loc["pca_over_zero", "verdict"] == "not defined"
    assert t.loc["pca_over_zero", "den_low"] < 0 < t.loc["pca_over_zero", "den_high"]
    assert np.isnan(t.loc["pca_over_zero", "low"])
    assert t.loc["pca_over_zero", "clusters"] == "pairs"
    assert t.loc["pca_over_zero", "n_clusters"] == N


def test_a_difference_is_taken_pair_by_pair_over_the_pairs_both_rows_have(tmp_path):
    """Rows with different missing pairs (terms of answers of several tokens): the difference is
    the mean of x - y over the shared pairs, not a difference of means over different pairs (and
    not statistics._present_first's reordered pairs)."""
    sweep = planted_sweep(N)
    cols = [c for c in sweep if c.startswith("pair_")]
    helix2 = (sweep["method"] == "helix") & (sweep["layer"] == 2)
    circle2 = (sweep["method"] == "circle") & (sweep["layer"] == 2)
    sweep.loc[helix2, cols[:10]] = np.nan
    sweep.loc[circle2, cols[-5:]] = np.nan
    x, y = sweep.loc[helix2, cols].to_numpy()[0], sweep.loc[circle2, cols].to_numpy()[0]
    t = run(load_registry(tmp_path), sweep)
    assert t.loc["above_circle", "n_pairs"] == N - 15
    assert t.loc["above_circle", "estimate"] == pytest.approx(np.nanmean(x - y))
    assert t.loc["above_circle", "estimate"] != pytest.approx(np.nanmean(x) - np.nanmean(y))


def test_reading_and_term_rows_pick_the_findings_rows(tmp_path):
    """A table of several tokens has a reading column and term rows: a finding reads its own."""
    sweep = planted_sweep(N)
    other = sweep.assign(**{c: sweep[c] + 100 for c in sweep if c.startswith("pair_")})
    table = pd.concat(
        [sweep.assign(term="ld", reading="last token"), other.assign(term="units", reading="last token")],
        ignore_index=True,
    )
    table = pd.concat([table, other.assign(term="ld", reading="answer positions")], ignore_index=True)
    assert run(load_registry(tmp_path), table).loc["above_circle", "estimate"] == pytest.approx(
        run(load_registry(tmp_path), sweep).loc["above_circle", "estimate"]
    )


def test_compat_authors_chooses_on_all_pairs_and_says_so(tmp_path):
    """Ten layers of no difference: chosen on the pairs that measure it, the best is biased up;
    the row names its split."""
    rng = np.random.default_rng(2)
    rows = []
    for layer in range(10):
        for method in ("helix", "pca"):
            rows.append(
                {"layer": layer, "method": method, **{f"pair_{i}": v for i, v in enumerate(rng.normal(0, 1, N))}}
            )
    sweep = pd.DataFrame(rows)
    text = REGISTRY.split("  - {id: above_circle")[0].replace("by: x", "by: y").replace("rule: max", "rule: min")
    authors = run(load_registry(tmp_path, text), sweep, compat="authors").loc["above_pca"]
    crossed = run(load_registry(tmp_path, text), sweep).loc["above_pca"]
    assert (
        authors["split"] == "same pairs (compat: authors)" and crossed["split"] == "cross-fitted (conservative bound)"
    )
    assert authors["selection"].endswith(", on all pairs")


# -- the page -------------------------------------------------------------------------------------
def test_every_number_of_the_page_is_a_value_of_the_table(tmp_path):
    pairs = planted_pairs()
    table = run(load_registry(tmp_path), planted_sweep(len(pairs)), pairs).reset_index()
    page = findings_page(table, "planted")
    assert assert_every_number_is_in_the_table(page, table) > 40
    for verdict in ("**Holds**", "**Reversed**", "**Not distinguished from 0**"):
        assert verdict in page
    assert "Fieller" in page and "detects a true effect of" in page


def test_a_number_the_table_lacks_is_caught():
    """The page check itself: a planted table of random numbers renders a page that passes, and
    a number changed in the page fails it."""
    rng = np.random.default_rng(3)
    rows = []
    for i, verdict in enumerate(["holds", "reversed", "not distinguished", "estimate", "not defined"]):
        est, se = rng.normal(0, 3), rng.uniform(0.1, 1)
        rows.append(
            {
                "id": f"f{i}",
                "family": "fam",
                "family_kind": "confirmatory",
                "family_title": "Planted family",
                "claim": f"planted claim {i}",
                "quantity": "difference",
                "x": "X",
                "y": "Y",
                "expect": "positive",
                "selection": "",
                "split": "fixed",
                "estimate": est,
                "low": est - 2 * se,
                "high": est + 2 * se,
                "level": 95.0,
                "interval": "t on the bootstrap SE",
                "se": se,
                "m": 5,
                "adj_level": 98.75,
                "adj_low": est - 2.5 * se,
                "adj_high": est + 2.5 * se,
                "verdict": verdict,
                "den_estimate": rng.normal(),
                "den_low": -rng.uniform(),
                "den_high": rng.uniform(),
                "n_pairs": 47,
                "n_clusters": 41,
                "clusters": "prompt-sharing components",
                "resamples": 1000,
                "seed": 7,
                "alpha": 0.05,
                "power": 0.8,
                "mde": rng.uniform(0.2, 2),
                "note": "",
            }
        )
    table = pd.DataFrame(rows)
    page = findings_page(table, "planted")
    assert assert_every_number_is_in_the_table(page, table) > 30
    est = f"{abs(table.loc[0, 'estimate']):.2f}"
    with pytest.raises(AssertionError, match="is not in the table"):
        assert_every_number_is_in_the_table(page.replace(est, "123.45", 1), table)


def test_a_best_layer_is_chosen_on_the_jobs_selection_draw_and_measured_on_all_pairs(tmp_path):
    """Where the helix job recorded its selection draw (raw/sweep_selection.csv), Table 1's best
    layer is chosen there and measured on every measuring pair: the mean of the per-pair
    differences at that layer, its own SE on C - 1 df.  The selection draw plants layer 1 best
    (the measuring pairs' best is layer 3): the choice is the draw's, not the measuring pairs'.
    A job that recorded no draw (a table with no rows) falls back to the conservative bound."""
    pairs = planted_pairs()
    sweep = planted_sweep(len(pairs))
    draw = planted_sweep(30, seed=1)
    helix = draw["method"] == "helix"
    draw.loc[helix & (draw["layer"] == 1), [f"pair_{i}" for i in range(30)]] += 10.0
    registry = load_registry(tmp_path)
    frames = {"helix_sweep": sweep, "helix_sweep_selection": draw[helix].reset_index(drop=True)}
    t = findings_tables(registry, False, frames, {"helix_sweep": pairs}, RESAMPLING, "corrected", "planted")
    t = t["contrasts"].set_index("id")
    row = t.loc["below_full"]
    assert row["selection"] == "the helix's best layer: layer 1, on the job's selection draw of 30 pairs"
    assert row["split"] == "separate draw" and row["df"] == row["n_clusters"] - 1
    cols = [f"pair_{i}" for i in range(len(pairs))]
    at = sweep[sweep["layer"] == 1].set_index("method")[cols]
    assert row["estimate"] == pytest.approx((at.loc["helix"] - at.loc["layer"]).mean(), abs=1e-12)
    empty = {**frames, "helix_sweep_selection": draw.iloc[:0, :5]}
    t = findings_tables(registry, False, empty, {"helix_sweep": pairs}, RESAMPLING, "corrected", "planted")
    assert t["contrasts"].set_index("id").loc["below_full", "split"] == "cross-fitted (conservative bound)"
    assert "helix_sweep_selection" in reg.tables_of(registry.findings[0])


def test_tables_resample_pairs_one_by_one_and_check_the_jobs_prompts():
    """Each pair its own cluster though partners repeat (the pair is the design's unit:
    tests/unit/test_inference.py); a pair column its job's prompts table lacks is an error."""
    pairs = planted_pairs()
    sweep = planted_sweep(len(pairs))
    tables = Tables({"helix_sweep": sweep}, {"helix_sweep": pairs.iloc[::-1]})  # rows in any order
    clusters, unit = tables.clusters("helix_sweep")
    assert unit == "pairs" and clusters.tolist() == list(range(len(pairs)))
    assert (pairs.groupby(["corrupted_a", "corrupted_b"]).size() > 1).any()  # prompts are shared
    with pytest.raises(ValueError, match="pair column\\(s\\) pair_0 not in its prompts table"):
        Tables({"helix_sweep": sweep}, {"helix_sweep": pairs.iloc[1:]}).clusters("helix_sweep")


# -- the heads' categories and the neurons' units ------------------------------------------------
HEADS_REGISTRY = """
min_pairs: 10
families:
  heads: {kind: confirmatory, title: "Categories (planted)"}
  units: {kind: confirmatory, title: "Bases by place (planted)"}
  shares: {kind: estimate, title: "Shares (planted)"}
findings:
  - {id: category, section: "5.2", family: heads, models: one-token, claim: "L$layerH$head keeps its category",
     quantity: category, expect: positive, table: head_effects, x: {layer: $layer, head: $head},
     each: {table: head_categories, columns: [layer, head], chosen_by: "the run's heads"}}
  - {id: eq5, section: "5.4", family: units, models: several-token, claim: "Eq. 5 better at the $place place",
     quantity: difference, expect: positive, table: neuron_fits, each: {table: neuron_fits, columns: [place]},
     x: {column: nrmse_digits, place: $place}, y: {column: nrmse, place: $place}}
  - {id: share, section: "5.4", family: shares, models: several-token, claim: "digits better at the $place place",
     quantity: share_below, table: neuron_fits, each: {table: neuron_fits, columns: [place]},
     x: {column: nrmse_digits, place: $place}, y: {column: nrmse, place: $place}}
"""


def planted_heads(n: int, seed: int = 4) -> dict[str, pd.DataFrame]:
    """Three heads: L1H0 writes a+b (DE = TE, helix(a+b) keeps it), L0H1 moves a and b (DE 0,
    helix(a,b) keeps it), L0H2 has no total effect."""
    rng = np.random.default_rng(seed)
    cols = [f"pair_{i}" for i in range(n)]
    effects, fits = [], []
    for (layer, head), (te_mean, de_share, kind) in {
        (1, 0): (1.0, 1.0, "sum"),
        (0, 1): (1.0, 0.0, "ab"),
        (0, 2): (0.0, 0.5, "ab"),
    }.items():
        te = te_mean + rng.normal(0, 0.5, n)
        de = de_share * te + rng.normal(0, 0.1, n)
        keep = {
            "helix(a,b,a+b)": te,
            "helix(a+b)": te if kind == "sum" else 0 * te,
            "helix(a,b)": te if kind == "ab" else 0 * te,
        }
        effects += [
            {"layer": layer, "component": "head", "head": head, "effect": e, **dict(zip(cols, v))}
            for e, v in (("te", te), ("de", de))
        ]
        fits += [
            {"layer": layer, "head": head, "fit": f, **dict(zip(cols, v + rng.normal(0, 0.05, n)))}
            for f, v in keep.items()
        ]
    cats = pd.DataFrame({"layer": [1, 0, 0], "head": [0, 1, 2]})
    return {"head_effects": pd.DataFrame(effects), "head_fits": pd.DataFrame(fits), "head_categories": cats}


def test_a_heads_category_is_the_sign_of_g_tested_on_all_pairs(tmp_path):
    """Section 5.2's rule: L1H0 (DE = TE, helix(a+b) keeps it) has g = TE^2 = 1 > 0, a+b; L0H1
    (DE = 0, helix(a,b) keeps it) g = -1, a,b; each row's estimate is |g| with its interval, and
    L0H2 (no TE) is not categorised."""
    frames = planted_heads(N)
    t = findings_tables(load_registry(tmp_path, HEADS_REGISTRY), False, frames, {}, RESAMPLING, "corrected", "planted")[
        "contrasts"
    ]
    t = t.set_index("id")
    assert t.loc["category[layer=1,head=0]", "selection"] == "the run's heads; a+b"
    assert t.loc["category[layer=0,head=1]", "selection"] == "the run's heads; a,b"
    for head in ("category[layer=1,head=0]", "category[layer=0,head=1]"):  # |g| = 1 planted (TE 1, noise 0.5)
        assert t.loc[head, "verdict"] == "holds" and t.loc[head, "low"] < 1.0 < t.loc[head, "high"]
        assert t.loc[head, "split"].startswith("same pairs") and t.loc[head, "df"] == N - 1
    assert t.loc["category[layer=0,head=2]", "verdict"] == "not defined"
    assert t.loc["category[layer=0,head=2]", "note"].startswith("no category tested: the head's TE")
    assert t.loc["category[layer=0,head=2]", "den_low"] <= 0 and t.loc["category[layer=1,head=0]", "m"] == 2


def one_head(n: int, te: float, de_share: float, ab: float, total: float, seed: int = 9) -> dict[str, pd.DataFrame]:
    """One head L0H0 with TE ``te`` (noise 0.3), DE/TE ``de_share``, helix(a,b) = ``ab`` TE,
    helix(a+b) = ``total`` TE and helix(a,b,a+b) = TE, over ``n`` pairs."""
    rng = np.random.default_rng(seed)
    cols = [f"pair_{i}" for i in range(n)]
    t = te + rng.normal(0, 0.3, n)
    effects = [
        {"layer": 0, "component": "head", "head": 0, "effect": "te", **dict(zip(cols, t))},
        {
            "layer": 0,
            "component": "head",
            "head": 0,
            "effect": "de",
            **dict(zip(cols, de_share * t + rng.normal(0, 0.05, n))),
        },
    ]
    fits = [
        {"layer": 0, "head": 0, "fit": f, **dict(zip(cols, share * t + rng.normal(0, 0.05, n)))}
        for f, share in (("helix(a,b,a+b)", 1.0), ("helix(a+b)", total), ("helix(a,b)", ab))
    ]
    return {
        "head_effects": pd.DataFrame(effects),
        "head_fits": pd.DataFrame(fits),
        "head_categories": pd.DataFrame({"layer": [0], "head": [0]}),
    }


def test_the_category_test_is_the_rules_not_de_above_half_te(tmp_path):
    """DE/TE 0.6, helix(a,b)/helix 0.9, helix(a+b)/helix 0.4: the rule says a,b (c_ab 0.36 >
    c_a+b 0.24, g = 0.24 - 0.36 < 0), and the test confirms it.  The wrong arm, each pair's
    DE - TE/2 signed by the category (this row's statistic before), reads the same head
    "reversed": its threshold DE/TE > 1/2 is not the rule's h(a,b) / (h(a,b) + h(a+b)) = 0.69."""
    n = 400
    frames = one_head(n, 1.0, 0.6, 0.9, 0.4)
    reg = load_registry(tmp_path, HEADS_REGISTRY)
    row = findings_tables(reg, False, frames, {}, RESAMPLING, "corrected", "planted")["contrasts"].iloc[0]
    assert row["selection"] == "the run's heads; a,b" and row["verdict"] == "holds"
    assert row["low"] < 0.12 < row["high"] and row["low"] > 0  # |g| = 0.36 - 0.24 at TE 1 (E[TE^2] ~ 1.09)
    effects = frames["head_effects"]
    te, de = (effects.loc[effects["effect"] == e].filter(like="pair_").to_numpy()[0] for e in ("te", "de"))
    wrong = -(de - te / 2)  # signed by a,b
    assert wrong.mean() / (wrong.std(ddof=1) / np.sqrt(n)) < -5  # the old statistic: confidently "reversed"
    job = categorise(
        mean_effects(effects.assign(reading="last token"), frames["head_fits"].assign(reading="last token"))
    )
    assert job["category"].tolist() == ["a,b"]  # the job's list table agrees with the finding


def test_the_paper_formulas_are_not_clipped():
    """DE/TE 0.45, helix(a,b)/helix 1.0, helix(a+b)/helix 1.6: unclipped (the paper's formula)
    c_a+b = 0.72 > c_ab = 0.55, a+b, the sign of g = 0.45 * 1.6 - 0.55 * 1.0 > 0; clipping the
    ratio helix(a+b)/helix to 1 would call it a,b (0.45 < 0.55)."""
    heads = pd.DataFrame({"te": [1.0], "de": [0.45], "fit_all": [1.0], "fit_sum": [1.6], "fit_ab": [1.0]})
    cats = categorise(heads)
    assert cats["category"].tolist() == ["a+b"]
    assert cats["c_a+b"].iloc[0] == pytest.approx(0.72) and cats["c_ab"].iloc[0] == pytest.approx(0.55)
    clipped = 0.45 * min(1.6, 1.0)
    assert clipped < cats["c_ab"].iloc[0]  # the wrong arm: the clipped rule flips it


def test_neuron_units_are_compared_and_counted_by_place(tmp_path):
    rng = np.random.default_rng(5)
    n = 200
    nrmse = rng.uniform(0.05, 0.2, 2 * n)
    gap = np.r_[0.02 + rng.normal(0, 0.01, n), rng.normal(0, 0.01, n) - 0.0001]
    units = pd.DataFrame({"place": ["units"] * n + ["tens"] * n, "nrmse": nrmse, "nrmse_digits": nrmse + gap})
    t = findings_tables(
        load_registry(tmp_path, HEADS_REGISTRY), True, {"neuron_fits": units}, {}, RESAMPLING, "corrected", "planted"
    )
    t = t["contrasts"].set_index("id")
    assert (
        t.loc["eq5[place=units]", "verdict"] == "holds" and t.loc["eq5[place=tens]", "verdict"] == "not distinguished"
    )
    assert t.loc["eq5[place=units]", "low"] < 0.02 < t.loc["eq5[place=units]", "high"]
    share = t.loc["share[place=units]"]
    assert (
        share["estimate"] == pytest.approx((gap[:n] < 0).mean()) and share["low"] >= 0 and share["clusters"] == "units"
    )
    assert t.loc["share[place=tens]", "low"] < 0.5 < t.loc["share[place=tens]", "high"]
    # the page counts units, and shows an R^2-sized difference with the decimals it needs
    page = findings_tables(
        load_registry(tmp_path, HEADS_REGISTRY), True, {"neuron_fits": units}, {}, RESAMPLING, "corrected", "planted"
    )["page"]
    tens = next(
        line for line in page.splitlines() if line.startswith("- ") and "Eq. 5 better at the tens place" in line
    )
    assert "With these 200 units the test detects" in tens and "200 pairs" not in tens
    assert "the sampling unit is the chosen unit" in tens
    assert re.search(r"= −?0\.0+[1-9]\d \[", tens), tens  # two significant digits, not 0.00


# -- a stage's own test (quantity tested) -------------------------------------------------------------
TESTED = """
alpha: 0.05
power: 0.8
min_pairs: 10
families:
  nested: {kind: confirmatory, title: "T = 100 beyond the digits"}
findings:
  - id: t100
    section: "4.1"
    family: nested
    models: both
    claim: "at layer $layer a T = 100 circle adds held-out R^2"
    quantity: tested
    expect: positive
    table: number_bases_nested
    each: {table: number_bases_nested, columns: [layer]}
    x: {label: increment, column: increment, layer: $layer}
    test: {p: p, sided: two, low: low, high: high, level: 95, se: se, n: n_numbers, unit: numbers, method: planted}
"""


def planted_tests() -> pd.DataFrame:
    """Five layers' tests: a clear increment (holds), a clear decrease (not detected, not
    reversed), one whose p fails Holm's fourth step (0.03 > 0.05 / 2), one covering 0, and one
    whose p passes but whose interval covers 0 (not detected: the stage's interval must agree)."""
    rows = [
        (0.01, 0.005, 0.015, 1e-5),
        (-0.01, -0.015, -0.005, 1e-5),
        (0.004, 0.001, 0.007, 0.03),
        (0.001, -0.002, 0.004, 0.5),
        (0.003, -0.0001, 0.006, 1e-5),
    ]
    t = pd.DataFrame(rows, columns=["increment", "low", "high", "p"])
    return t.assign(layer=range(5), se=0.002, n_numbers=200, verdict_test=True)


def test_a_stages_own_test_keeps_its_p_and_gets_the_familys_holm(tmp_path):
    registry = load_registry(tmp_path, TESTED)
    table = planted_tests()
    out = findings_tables(registry, False, {"number_bases_nested": table}, {}, RESAMPLING, "corrected", "planted")
    t = out["contrasts"].set_index("id")
    assert list(t["verdict"]) == ["holds", "not detected", "not detected", "not detected", "not detected"]
    assert t["p"].tolist() == table["p"].tolist() and (t["m"] == 5).all()  # the stage's p, not recomputed
    assert t["alpha_step"].tolist() == pytest.approx([0.01, 0.0125, 0.025, 0.025, 0.05 / 3])
    assert t["adj_low"].isna().all() and t["low"].tolist() == table["low"].tolist() and (t["level"] == 95).all()
    assert (t["n_pairs"] == 200).all() and (t["clusters"] == "numbers").all() and (t["interval"] == "planted").all()
    page = out["page"]
    assert "Verdicts of all 5 rows: holds 1, not detected 4." in page and page.count("**Not detected**") == 4
    assert "The stage's test: planted." in page and "Reversed" not in page
    assert assert_every_number_is_in_the_table(page, out["contrasts"]) > 30
    assert t["mde"].isna().all()  # a stage's own test says what it detects itself


def test_a_stages_row_without_its_p_or_interval_is_not_judged_and_a_tiny_value_is_printed(tmp_path):
    registry = load_registry(tmp_path, TESTED)
    table = planted_tests()
    table.loc[0, "low"] = np.nan  # an interval named by the finding but missing: not "holds"
    table.loc[3, "p"] = np.nan
    table.loc[2, ["increment", "low", "high"]] = [5.8e-6, -4.9e-6, 1.7e-5]
    out = findings_tables(registry, False, {"number_bases_nested": table}, {}, RESAMPLING, "corrected", "planted")
    t = out["contrasts"].set_index("id")
    assert t.loc["t100[layer=0]", "verdict"] == t.loc["t100[layer=3]", "verdict"] == "not computed"
    assert "no low" in t.loc["t100[layer=0]", "note"] and "no p" in t.loc["t100[layer=3]", "note"]
    assert (t["m"].dropna() == 3).all()  # the two rows left out of the family
    assert "= 0.0000058 [−0.0000049, 0.0000170]" in out["page"]


INTERSECTION = TESTED.replace(
    "test: {p: p, sided: two, low: low, high: high, level: 95, se: se, n: n_numbers, unit: numbers, method: planted}",
    "test: {p: p, sided: greater, low: low, high: high, level: 95, se: se, df: df, n: n_numbers, unit: pairs, "
    "method: planted, also: {label: against the placebo, estimate: gap, low: gap_low, high: gap_high, p: p_gap}}",
)
INTERSECTION_SE = INTERSECTION.replace("p: p_gap}", "p: p_gap, se: gap_se}")  # the second arm with its SE


def planted_findings(tmp_path, registry: str, table: pd.DataFrame) -> dict:
    """The findings job's tables of the registry text ``registry`` on the planted stage table ``table``."""
    return findings_tables(
        load_registry(tmp_path, registry), False, {"number_bases_nested": table}, {}, RESAMPLING, "corrected", "planted"
    )


def test_planted_at_the_printed_mde_the_intersection_union_test_rejects_with_the_declared_power(tmp_path):
    """The MDE the page prints for an intersection-union test, simulated: 50 normal pairs (SD 1, SE
    0.141 in both arms, df 49), 5 layers, both arms' true effects at the printed MDE; each arm's
    one-sided t test at alpha / m (Holm's first, strictest step) rejects in both in 0.81 of 4,000
    runs (0.9 squared: at least the declared 0.8 but for Monte Carlo error).  At the MDE of one
    arm at power 0.8 (the wrong method: it ignores that both must reject) only 0.64 do."""
    n, runs = 50, 4000
    se = 1 / np.sqrt(n)
    table = planted_tests().assign(df=n - 1, se=se, gap=0.5, gap_low=0.2, gap_high=0.8, p_gap=1e-6, gap_se=se)
    out = planted_findings(tmp_path, INTERSECTION_SE, table)
    printed = float(out["contrasts"]["mde"].iloc[0])
    crit = stats.t.ppf(1 - 0.05 / 5, n - 1)  # one-sided at alpha / m
    rng = np.random.default_rng(0)

    def both_reject(delta: float) -> float:
        x = rng.normal(delta, 1.0, size=(runs, 2, n))
        t = x.mean(2) / (x.std(2, ddof=1) / np.sqrt(n))
        return float((t > crit).all(1).mean())

    assert 0.79 <= both_reject(printed) <= 0.84
    assert both_reject(se * mde(1.0, 1, 2 * 0.05 / 5, 0.8, df=n - 1)) < 0.68


def test_a_stages_intersection_union_test_prints_both_arms_and_its_one_sided_mde(tmp_path):
    """A stage's test with its SE, df and a second arm (the causal nested test): the findings job
    keeps the stage's p (the larger arm's), prints the second arm beside the first, and gives each
    row the MDE of a one-sided t test at alpha / m, the two-sided one at 2 alpha / m (with 5 rows
    and df 49: 3.259 SEs at power 0.8; the two-sided test at alpha / m, the wrong arm, needs 3.538)."""
    table = planted_tests().assign(df=49, gap=0.02, gap_low=0.01, gap_high=0.03, p_gap=1e-6)
    out = planted_findings(tmp_path, INTERSECTION, table)
    t = out["contrasts"].set_index("id")
    assert t["p"].tolist() == table["p"].tolist()
    np.testing.assert_allclose(t["mde"], 0.002 * mde(1.0, 1, 2 * 0.05 / 5, 0.8, df=49), rtol=1e-9)
    np.testing.assert_allclose(t["mde"] / 0.002, 3.259, atol=0.001)
    assert abs(mde(1.0, 1, 0.05 / 5, 0.8, df=49) - 3.538) < 0.001  # two-sided at alpha / m: a larger MDE
    page = out["page"]
    assert (
        page.count("against the placebo = 0.02 [0.01, 0.03], one-sided p = 0.0000010; the test's p is the larger") == 5
    )
    assert page.count("the test detects a true increment of 0.0065 or more with power 0.80") == 5
    assert (t["also_label"] == "against the placebo").all() and (t["df"] == 49).all()
    # the same test declared two-sided: its MDE is the two-sided one at alpha / m
    out = planted_findings(tmp_path, INTERSECTION.replace("sided: greater", "sided: two"), table)
    np.testing.assert_allclose(out["contrasts"]["mde"] / 0.002, 3.538, atol=0.001)
    # both arms with their SEs: each arm's MDE at power 0.9, the larger (the placebo arm's, SE 0.004)
    # detects in both with power at least 0.8; the first arm's MDE at 0.8 (the wrong arm) is 2.3x smaller
    out = planted_findings(tmp_path, INTERSECTION_SE, table.assign(gap_se=0.004))
    both = out["contrasts"]["mde"].to_numpy()
    np.testing.assert_allclose(both, 0.004 * mde(1.0, 1, 2 * 0.05 / 5, 0.9, df=49), rtol=1e-9)
    assert both[0] > 2 * 0.002 * 3.259 and both[0] / 0.004 > 3.259
    assert "and a true against the placebo of" in out["page"] and "with power at least 0.80" in out["page"]
    # the first arm the larger SE (0.002 against 0.001): its MDE at power 0.9 is the test's
    out = planted_findings(tmp_path, INTERSECTION_SE, table.assign(gap_se=0.001))
    np.testing.assert_allclose(out["contrasts"]["mde"], 0.002 * mde(1.0, 1, 2 * 0.05 / 5, 0.9, df=49), rtol=1e-9)
    # the registry's power, not the default 0.8, sets a single arm's MDE
    out = planted_findings(tmp_path, INTERSECTION.replace("power: 0.8", "power: 0.9"), table)
    np.testing.assert_allclose(out["contrasts"]["mde"], 0.002 * mde(1.0, 1, 2 * 0.05 / 5, 0.9, df=49), rtol=1e-9)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"quantity": "mean"}, "go together"),
        ({"test": {"se": None, "df": "df"}}, "test.df gives the minimal detectable effect with test.se"),
        ({"test": None}, "go together"),
        ({"test": {"low": None}}, "low, high and level together"),
        ({"test": {"detectable": "detectable_fraction"}}, "detectable and test.detectable_of go together"),
        ({"test": {"sided": "greater"}, "expect": "negative"}, "sided: greater is the side expect: positive names"),
        ({"select": {"over": "layer", "by": "x", "rule": "max", "what": "best"}}, "no select"),
    ],
)
def test_a_bad_tested_finding_is_refused(tmp_path, change, message):
    assert_refused(tmp_path, TESTED, change, message)

"""Known-answer tests of what a number's last token encodes (docs/several-tokens.md, "Numbers of several
tokens"): planted digit circles, a planted T = 100 helix and a planted digit-count step are each
recovered as what they are; the class-mean spectrum drops the step's T = 360, 180, 120 bins;
the held-out R^2 equals scikit-learn's; the paper's bases are untouched."""

import numpy as np
import pytest

from helixclock.fitting.bases import Basis, Combined, clock_bases, digit, digit_count, number_bases, standard_bases
from helixclock.stages.structure.number_bases import (
    CANDIDATES,
    class_spectra,
    compare_number_bases,
    design,
    kfold,
    levelled_layer,
    number_bases_tables,
    winner,
)

N = 360
D = 32


def directions(rng, k, d=D):
    """k random directions of unit norm [k, d]."""
    u = rng.normal(size=(k, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def digit_circles(n, rng, d=D):
    """Levy & Geva: a circle of period 10 per digit (units, tens, hundreds), each in its own plane."""
    feats = [f(2 * np.pi * digit(n, p) / 10) for p in range(3) for f in (np.cos, np.sin)]
    return np.stack(feats, 1) @ directions(rng, 6, d)


def helix100(n, rng, d=D):
    """The paper's helix with T = 2, 5, 10, 100 and its linear term."""
    return Basis("helix", (2, 5, 10, 100), variables=("n",))(n)[:, :-1] @ directions(rng, 9, d)


def class_step(n, rng, d=D):
    """One constant per digit count (1, 2, 3 tokens under a digit tokenizer) and the units circle."""
    consts = 2 * directions(rng, 3, d)[digit_count(n) - 1]
    units = np.stack([np.cos(2 * np.pi * n / 10), np.sin(2 * np.pi * n / 10)], 1) @ directions(rng, 2, d)
    return consts + units


def planted(models, noise=0.05, seed=0, n_numbers=N, d=D):
    """Bare-number residuals [n, len(models), d]: layer l is models[l](n) plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    n = np.arange(n_numbers, dtype=np.float64)
    return np.stack([m(n, rng, d) + noise * rng.normal(size=(n_numbers, d)) for m in models], 1)


@pytest.fixture(scope="module")
def three():
    """Layer 0: digit circles, layer 1: a T = 100 helix, layer 2: a class step."""
    X = planted([digit_circles, helix100, class_step])
    return X, number_bases_tables(X, n_boot=500)


def test_planted_representations_are_recovered_as_what_they_are(three):
    _, t = three
    win = t["winner"].set_index("layer")
    assert list(win["winner"]) == ["digit circles", "helix", "digit-count classes"]
    assert (win["tied"] == "").all() and (win["low"] > 0).all()
    r2 = t["r2"].set_index(["layer", "basis"])
    # digit circles: not T = 100, and above it (the noise leaves R^2 about 0.965 at best)
    assert r2.loc[(0, "digit circles"), "r2"] > 0.95 and r2.loc[(0, "digit circles"), "vs_helix"] == "higher"
    assert r2.loc[(0, "helix"), "r2"] < r2.loc[(0, "digit circles"), "r2"] - 0.02
    # the helix: every single alternative below it, with intervals that say so
    for other in ("units digit", "digit circles", "digit-count classes"):
        assert r2.loc[(1, other), "vs_helix"] == "lower"
    assert r2.loc[(1, "helix"), "r2"] > 0.97
    # a class step is neither digit circles nor the helix
    assert r2.loc[(2, "digit-count classes"), "r2"] > 0.95
    assert r2.loc[(2, "digit-count classes"), "vs_helix"] == "higher"
    assert r2.loc[(2, "digit circles"), "r2"] < r2.loc[(2, "digit-count classes"), "r2"] - 0.05
    # adding the true basis to the helix closes the gap; the helix adds nothing to the truth
    pairs = t["pairs"].set_index(["layer", "basis", "other"])
    assert pairs.loc[(0, "helix + digit circles", "helix"), "low"] > 0
    assert pairs.loc[(0, "helix + digit circles", "digit circles"), "diff"] < 0.002
    assert pairs.loc[(2, "helix + classes", "digit-count classes"), "diff"] < 0.002


def test_tables_have_their_documented_shape(three):
    _, t = three
    r2, pairs = t["r2"], t["pairs"]
    names = [b.name for b in number_bases()]
    assert list(r2.columns) == [
        "layer", "basis", "columns", "rank", "n_numbers", "folds", "r2_in_sample", "r2", "r2_low", "r2_high",
        "diff_helix", "diff_helix_low", "diff_helix_high", "vs_helix",
    ]  # fmt: skip
    assert len(r2) == 3 * len(names) and list(r2["basis"][: len(names)]) == names
    cols = r2.drop_duplicates("basis").set_index("basis")
    assert cols["columns"].to_dict() == {
        "units digit": 6, "helix": 9, "digit circles": 10, "digit-count classes": 9, "helix + digit circles": 13,
        "helix + classes": 11, "digit circles + classes": 13, "helix + digit circles + classes": 15,
    }  # fmt: skip
    assert (cols["rank"] == cols["columns"] - 1).all()  # sin n T=2 vanishes on integers
    assert (r2["r2_low"] <= r2["r2"]).all() and (r2["r2"] <= r2["r2_high"]).all()
    assert (r2["r2"] <= r2["r2_in_sample"] + 1e-12).all()  # held out never beats in sample here
    helix = r2[r2["basis"] == "helix"]
    assert (helix["diff_helix"] == 0).all() and (helix["vs_helix"] == "reference").all()
    assert len(pairs) == 3 * len(names) * (len(names) - 1)
    back = pairs.set_index(["layer", "basis", "other"])["diff"]
    assert np.allclose(back.to_numpy(), -back.swaplevel(1, 2).reindex(back.index).to_numpy())


def test_class_means_removed_drop_the_step_bins():
    """A step in token count peaks at T = 360, 180, 120; with each class's mean removed those bins
    are noise, and the units circle's T = 10 leads; within 10..99 the step is gone too."""
    X = planted([class_step, helix100], noise=0.05, seed=1)
    t = class_spectra(np.concatenate([X, X[:1]]), n_fourier=360, n_peaks=10)  # 361 numbers, as the cache
    spec = t["spectrum"].set_index(["variant", "layer", "frequency"])["magnitude"].sort_index()
    med = t["spectrum"].groupby(["variant", "layer"])["magnitude"].median()
    step = [1, 2, 3]  # periods 360, 180, 120
    raw = spec.loc[("raw", 0)].loc[step] / med[("raw", 0)]
    removed = spec.loc[("class means removed", 0)].loc[step] / med[("class means removed", 0)]
    assert (raw > 5).all() and (removed < 2).all()
    peaks = t["peaks"].set_index(["variant", "layer", "rank"])["period"].sort_index()
    assert set(peaks.loc[("raw", 0)].iloc[:3]) & {360.0, 180.0, 120.0}
    assert peaks.loc[("class means removed", 0, 1)] == 10.0
    assert peaks.loc[("two-digit class", 0, 1)] == 10.0
    assert set(t["peaks"]["n_numbers"]) == {360, 90}
    # a helix is not a class step: its T = 100 (between the bins 90 and 120 over 360 numbers)
    # stays among the strongest when the class means go (layer 1)
    assert set(peaks.loc[("class means removed", 1)].iloc[:4]) & {90.0, 120.0}


def test_heldout_r2_equals_scikit_learn():
    """Same folds (KFold, shuffled, seeded), LinearRegression on the basis without its constant,
    every number predicted once: the total-variance R^2 agrees to float precision, for 121
    numbers (where the hundreds circle and the 3-digit class are collinear) and 360."""
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold, cross_val_predict

    for n_numbers, folds, seed in ((121, 5, 3), (360, 4, 0)):
        X = planted([digit_circles, class_step], noise=0.3, seed=seed, n_numbers=n_numbers, d=6)
        t = compare_number_bases(X, folds=folds, seed=seed, n_boot=10)["r2"].set_index(["layer", "basis"])
        cv = KFold(folds, shuffle=True, random_state=seed)
        ours = kfold(n_numbers, folds, seed)
        assert [set(test) for _, test in cv.split(X)] == [set(np.flatnonzero(ours == f)) for f in range(folds)]
        for basis in number_bases():
            A = design(basis, np.arange(n_numbers))[0][:, :-1]
            for layer in range(2):
                pred = cross_val_predict(LinearRegression(), A, X[:, layer], cv=cv)
                ref = r2_score(X[:, layer], pred, multioutput="variance_weighted")
                fit = LinearRegression().fit(A, X[:, layer]).predict(A)
                inside = r2_score(X[:, layer], fit, multioutput="variance_weighted")
                assert t.loc[(layer, basis.name), "r2"] == pytest.approx(ref, abs=1e-9), (n_numbers, basis.name)
                assert t.loc[(layer, basis.name), "r2_in_sample"] == pytest.approx(inside, abs=1e-9)


def test_winner_rule_on_a_table():
    """The best held-out R^2 wins only where its interval against every other excludes 0."""
    rows = []
    for layer, (d_h, lo_h, d_c, lo_c) in enumerate([(0.1, 0.05, 0.2, 0.1), (0.1, -0.01, 0.2, 0.1)]):
        # "digit circles" is best at both layers; at layer 1 its interval against the helix touches 0
        for other, d, lo in (("helix", d_h, lo_h), ("digit-count classes", d_c, lo_c)):
            rows.append(
                {"layer": layer, "basis": "digit circles", "other": other, "diff": d, "low": lo, "high": d + 0.1}
            )
            rows.append(
                {"layer": layer, "basis": other, "other": "digit circles", "diff": -d, "low": -d - 0.1, "high": -lo}
            )
        rows.append(
            {
                "layer": layer,
                "basis": "helix",
                "other": "digit-count classes",
                "diff": d_c - d_h,
                "low": 0.0,
                "high": 0.2,
            }
        )
        rows.append(
            {
                "layer": layer,
                "basis": "digit-count classes",
                "other": "helix",
                "diff": d_h - d_c,
                "low": -0.2,
                "high": 0.0,
            }
        )
    import pandas as pd

    w = winner(pd.DataFrame(rows), among=["helix", "digit circles", "digit-count classes"]).set_index("layer")
    assert list(w["best"]) == ["digit circles"] * 2
    assert list(w["winner"]) == ["digit circles", "not distinguished"]
    assert list(w["closest"]) == ["helix", "helix"] and list(w["tied"]) == ["", "helix"]
    assert w.loc[1, "low"] == -0.01
    with pytest.raises(ValueError, match="not in the table"):
        winner(pd.DataFrame(rows), among=CANDIDATES)


def test_new_kinds_and_their_columns():
    n = np.array([0.0, 7, 10, 42, 99, 100, 357])
    assert list(digit(n, 1)) == [0, 0, 1, 4, 9, 0, 5] and list(digit(n, 2)) == [0, 0, 0, 0, 0, 1, 3]
    assert list(digit_count(n)) == [1, 1, 2, 2, 2, 3, 3]
    dig = Basis("digits", (10,), variables=("n",), places=(1, 2))
    assert dig.columns() == [
        "cos n tens T=10",
        "sin n tens T=10",
        "cos n hundreds T=10",
        "sin n hundreds T=10",
        "const",
    ]
    assert np.allclose(dig(n)[6], [np.cos(np.pi), np.sin(np.pi), np.cos(0.6 * np.pi), np.sin(0.6 * np.pi), 1])
    cls = Basis("classes", variables=("n",), places=(1, 2))
    assert cls.columns() == ["n", "n has 2 digits", "n has 3 digits", "const"] and cls.n_params == 3
    assert np.array_equal(cls(n)[:, 1:3], [[0, 0], [0, 0], [1, 0], [1, 0], [1, 0], [0, 1], [0, 1]])
    assert dig.name == "digits(n)[tens,hundreds; T=10]" and cls.name == "classes(n)[2,3 digits]"
    both = Combined("helix + classes", (Basis("helix", (2, 5, 10, 100), variables=("n",)), cls))
    assert both.columns().count("n") == 1 and both.n_params == 11
    assert np.array_equal(both(n)[:, :9], Basis("helix", (2, 5, 10, 100), variables=("n",))(n)[:, :9])
    two = {b.name: b.n_params for b in number_bases(n_digits=2)}
    assert two["digit circles"] == 8 and two["digit-count classes"] == 8  # the tens place only
    for bad, match in (
        (lambda: Basis("digits", (10,)), "needs at least one digit place"),
        (lambda: Basis("helix", (10,), places=(1,)), "takes no digit places"),
        (lambda: Basis("classes", places=(0,)), "distinct integers >= 1"),
        (lambda: dig(np.array([3.5])), "non-negative integers"),
        (lambda: number_bases(periods=(3, 100)), "none that divides 10"),
    ):
        with pytest.raises(ValueError, match=match):
            bad()


def test_bad_input_is_refused_before_work():
    X = np.random.default_rng(0).normal(size=(20, 2, 3))
    with pytest.raises(ValueError, match="folds 1: allowed 2..20"):
        compare_number_bases(X, folds=1)
    with pytest.raises(ValueError, match="leave 10 to fit a basis of 12 columns"):
        compare_number_bases(X, folds=2)  # two digits: helix + tens circle + two-digit class
    with pytest.raises(ValueError, match="no variance over the numbers at layer\\(s\\) \\[2\\]"):
        compare_number_bases(np.concatenate([X, np.zeros((20, 1, 3))], 1))
    with pytest.raises(ValueError, match="expected \\[N numbers, L\\+1 layers, d_model\\]"):
        compare_number_bases(X[:, 0])
    with pytest.raises(ValueError, match="level 1.5"):
        compare_number_bases(X, level=1.5)


def test_the_paper_bases_are_untouched():
    """The new kinds add no column, name or value to helix, circle and poly."""
    a = np.arange(361.0)
    vals = {"a": a, "b": a[::-1].copy(), "a+b": a + a[::-1]}
    h = Basis("helix", (2, 5, 10, 100))
    assert h.columns() == [
        "a", "cos a T=2", "sin a T=2", "cos a T=5", "sin a T=5", "cos a T=10", "sin a T=10", "cos a T=100",
        "sin a T=100", "const",
    ]  # fmt: skip
    cols = [a / 99.0] + [f(2 * np.pi * a / T) for T in (2, 5, 10, 100) for f in (np.cos, np.sin)] + [np.ones(361)]
    assert np.array_equal(h(a), np.stack(cols, 1))
    assert np.array_equal(Basis("circle", (2, 5, 10, 100))(a), np.stack(cols[1:], 1))
    poly = Basis("poly", degree=9)
    assert poly.columns() == [f"a^{j}" for j in range(1, 10)] + ["const"]
    assert np.array_equal(poly(a), np.stack([(a / 99.0) ** j for j in range(1, 10)] + [np.ones(361)], 1))
    raw = Basis("poly", degree=3, scaled=False)
    assert np.array_equal(raw(a), np.stack([a, a**2, a**3, np.ones(361)], 1))
    names = [b.name for b in standard_bases()]
    assert len(names) == 34 and names[:2] == ["helix(a)[2]", "helix(a)[5]"] and names[-1] == "poly9(a)"
    assert [b.name for b in clock_bases()] == [
        "helix(a,b,a+b)[2,5,10,100]",
        "helix(a+b)[2,5,10,100]",
        "helix(a,b)[2,5,10,100]",
    ]
    three = clock_bases()[0]
    assert three.n_params == 27 and three(vals).shape == (361, 28)
    assert h == Basis("helix", (2, 5, 10, 100), places=()) and hash(h) == hash(Basis("helix", (2, 5, 10, 100)))
    helix_n = next(b for b in number_bases() if b.name == "helix")
    assert np.array_equal(helix_n(a), h(a))  # the comparison's helix is the paper's, in n


def test_the_layer_rule_finds_where_the_whole_number_is_gathered():
    """A digit model's last token starts as its units digit and gathers the whole number layer
    by layer: planted as the units circle plus a helix(T = 2, 5, 10, 100) of weight 0, 0.1,
    0.35, 1, 1 over five layers.  The helix's own R^2 is high from the embedding on (its T = 10
    circle is the units digit's), so the rule reads its gain over the units digit alone: it
    rises and levels off, and the rule (the first layer at half the largest gain) names layer 3,
    not the embedding's layer 0 nor resid_pre[1], where the paper reads Figs. 2, 3; a second,
    later rise (weight 1.6 at the last layer) does not move it."""

    def gathered(weight):
        def layer(n, rng, d):
            same = np.random.default_rng(1)  # the same directions at every layer: only the weight moves
            units = np.stack([np.cos(2 * np.pi * n / 10), np.sin(2 * np.pi * n / 10)], 1) @ directions(same, 2, d)
            return units + weight * helix100(n, same, d)

        return layer

    X = planted([gathered(w) for w in (0.0, 0.1, 0.35, 1.0, 1.0)])
    r2 = compare_number_bases(X, n_boot=200)["r2"]
    helix = r2[r2["basis"] == "helix"].set_index("layer")["r2"]
    assert helix[0] > 0.9  # the units circle alone: the helix's R^2 cannot tell
    found = levelled_layer(r2).iloc[0]
    assert found["layer"] == 3 and found["max_layer"] in (3, 4)
    assert 0 < found["gain_low"] <= found["gain"] <= found["gain_high"] and found["r2"] == helix[3]
    gains = -r2[r2["basis"] == "units digit"].set_index("layer")["diff_helix"]
    assert abs(gains[0]) < 0.01 and gains[1] < gains[2] < 0.5 * gains.max() <= gains[3]
    assert levelled_layer(r2, share=0.3).iloc[0]["layer"] < 3  # a looser share stops earlier
    later = compare_number_bases(planted([gathered(w) for w in (0.0, 0.1, 0.35, 1.0, 1.0, 1.6)]), n_boot=50)["r2"]
    assert levelled_layer(later).iloc[0][["layer", "max_layer"]].tolist() == [3, 5]
    with pytest.raises(ValueError, match="share"):
        levelled_layer(r2, share=1.5)
    units_only = compare_number_bases(planted([gathered(0.0)] * 2), n_boot=50)["r2"]
    assert np.isnan(levelled_layer(units_only).iloc[0]["layer"])  # nothing gathered: no layer named

"""Numbers of several tokens (docs/several-tokens.md, "Numbers of several tokens"): spans found through the
tokenizer, pairs of one shape, the teacher-forced LD (equal to the paper's LD for one-token
answers, and to a plain-hook computation for answers of several), batches that never mix token
layouts, and a number read at the last token of its span."""

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.families import tiny_hf_model
from helpers.hooks import replace_io
from helpers.prompts import GPTJ_PROMPTS, digit_splitting_tokenizer
from helpers.tables import correct_table

from helixclock.causal.pairs import draw_pairs
from helixclock.lm.models import wrap_model
from helixclock.patching import Patch, PatchingEngine, Point
from helixclock.prompts.layout import Layout, boundaries, groups_of, layout_order
from helixclock.prompts.numbers import describe_classes, ordered, several_task_tokens
from helixclock.prompts.tasks import TASKS, render

ADD = GPTJ_PROMPTS["add"]  # "Output ONLY a number.\n{a}+{b}="


@pytest.fixture(scope="module")
def digits():
    return digit_splitting_tokenizer()


@pytest.fixture(scope="module")
def digit_llama(digits):
    hf = tiny_hf_model("llama", len(digits), seed=1)
    return wrap_model(hf, digits, name="digit-llama", number_tokens="several")


def test_spans_answers_and_length_classes_of_a_digit_tokenizer(digits):
    tokens = several_task_tokens(digits, "digit", TASKS["add"], ADD)
    classes = tokens.classes().set_index(["a_tokens", "b_tokens", "answer_tokens"])["count"]
    # a, b in 0..99: one or two digits each; answers 0..198 one to three
    assert classes.groupby(level=[0, 1]).sum().to_dict() == {(1, 1): 100, (1, 2): 900, (2, 1): 900, (2, 2): 8100}
    assert classes.loc[(2, 2, 3)] == sum(a + b >= 100 for a in range(10, 100) for b in range(10, 100))
    i = 12 * 100 + 57  # 12+57=69: "Output ONLY a number . 1 2 + 5 7 ="
    assert tokens.spans["a"][i].tolist() == [5, 7] and tokens.spans["b"][i].tolist() == [8, 10]
    assert digits.decode(tokens.answers[i]).replace(" ", "") == "69" and len(tokens.ids[i]) == 11
    layout = tokens.layouts(teacher_forced=True)[i]
    assert layout.resolve("a") == (6,) and layout.resolve("b") == (9,) and layout.resolve("last") == (10,)
    assert layout.length == 12 and layout.answer == 2  # the prompt and the answer's first digit
    assert layout.resolve("a_span") == (5, 6) and tokens.layouts()[3].resolve("a_span") == (5, 5)  # padded span
    card = {(c["a_tokens"], c["b_tokens"]): c for c in describe_classes(tokens)}[(2, 2)]
    assert card["count"] == 8100 and card["example_spans"] == {"a": [5, 7], "b": [8, 10]}  # 10+10=20
    assert card["example_last"] == 10 and card["example_answer_span"] == [11, 13]


def test_rows_of_one_layout_are_contiguous_and_batches_never_cross_them():
    keys = ["x", "y", "x", "z", "y", "x"]
    order = layout_order(keys)
    assert [keys[i] for i in order] == ["x", "x", "x", "y", "y", "z"]
    assert layout_order(["x"] * 4).tolist() == [0, 1, 2, 3]  # one layout: the identity
    groups = groups_of([Layout(5), Layout(5), Layout(7), Layout(7), Layout(7), Layout(9)])
    assert [(g.start, g.stop) for g in groups] == [(0, 2), (2, 5), (5, 6)]
    assert boundaries(groups) == [2, 5]
    assert boundaries(groups, repeats=2) == [4, 10]  # each group's rows under both variants in turn
    assert boundaries(groups[:1]) == []


def test_pairs_keep_the_shape_and_teacher_force_the_clean_answer(digits):
    correct = correct_table([(a, b) for a in (3, 7, 12, 45, 60, 88) for b in (5, 21, 40)])
    pairs = draw_pairs(correct, 12, 0, digits, ADD, ("a",), several=True)
    meta = pairs.meta
    assert ((meta["clean_a"] >= 10) == (meta["corrupted_a"] >= 10)).all()  # same token count
    assert (meta["clean_b"] == meta["corrupted_b"]).all()
    assert sum(meta["classes"].values()) == len(pairs)
    for g in pairs.groups:
        rows = slice(g.start, g.stop)
        lay = g.layout
        clean, corrupt = pairs.clean[rows, : lay.length], pairs.corrupted[rows, : lay.length]
        # the last answer - 1 tokens are the clean answer's, in both prompts
        k = lay.answer
        if k > 1:
            assert torch.equal(clean[:, -(k - 1) :], pairs.answers[rows, : k - 1])
            assert torch.equal(corrupt[:, -(k - 1) :], pairs.answers[rows, : k - 1])
        for r in range(g.start, g.stop):
            text = digits.decode(pairs.clean[r, : lay.length - k + 1].tolist()).replace(" ", "")
            assert text.endswith(f"{meta['clean_a'][r]}+{meta['clean_b'][r]}=")


def test_one_token_answers_give_the_papers_ld_exactly(tiny_gptj):
    """The same pairs built as one-token pairs (the paper's LD) and through the several-token
    path (spans, teacher forcing of a one-token answer): identical LD, bit for bit."""
    tok = tiny_gptj.tokenizer
    rows = [(a, b) for a in (3, 12, 41, 99, 60) for b in (4, 57, 0)]
    correct = correct_table(rows)
    correct["answer_token"] = [tok.convert_tokens_to_ids(str(x)) for x in correct["answer"]]
    one = draw_pairs(correct, 10, 0, tok, ADD, ("a",))
    several = draw_pairs(correct, 10, 0, tok, ADD, ("a",), several=True)
    assert len(several.groups) == 1 and several.groups[0].layout.answer == 1
    assert torch.equal(one.clean, several.clean) and torch.equal(one.answers, several.answers)
    engine = PatchingEngine(tiny_gptj, progress=False)
    variants = [[Patch(Point("resid_pre", layer, (5,)))] for layer in range(3)]
    roles = [[Patch(Point("resid_pre", layer, ("a",)))] for layer in range(3)]
    ld_one = engine.run(one, variants).metric
    ld_several = PatchingEngine(tiny_gptj, progress=False).run(several, roles).metric
    assert torch.equal(ld_one, ld_several)
    assert ld_one.abs().max() > 1e-2  # the patches do something


def plain_ld(hf, clean, corrupt, answers, k, layer_path, position, scoring="logit"):
    """LD of patching the clean residual at ``position`` into the corrupted run, by plain hooks:
    the sum of the answer tokens' logits (or log-probabilities) at the last k positions, patched
    minus corrupted."""
    store = {}

    def keep(x):
        store["x"] = x.detach().clone()
        return x

    def put(x):
        y = x.clone()
        y[:, position] = store["x"][:, position]
        return y

    def score(logits):
        read = logits[:, -k:].float()
        read = read.log_softmax(-1) if scoring == "logprob" else read
        return read.gather(2, answers[:, :k, None])[..., 0].sum(1)

    with torch.no_grad():
        h = replace_io(hf.get_submodule(layer_path), "input", keep)
        hf(clean)
        h.remove()
        base = score(hf(corrupt).logits)
        h = replace_io(hf.get_submodule(layer_path), "input", put)
        patched = score(hf(corrupt).logits)
        h.remove()
    return patched - base


def test_teacher_forced_ld_of_several_token_answers_equals_plain_hooks(digit_llama, digits):
    correct = correct_table([(a, b) for a in (3, 7, 12, 45, 60, 88, 95) for b in (5, 21, 40, 99)])
    pairs = draw_pairs(correct, 20, 1, digits, ADD, ("a",), several=True)
    assert len(pairs.groups) >= 3  # several layouts in one run
    engine = PatchingEngine(digit_llama, batch_size=7, progress=False)  # batches smaller than groups
    for role in ("a", "b", "last"):
        got = engine.run(pairs, [[Patch(Point("resid_pre", 1, (role,)))]]).metric[0]
        for g in pairs.groups:
            rows = slice(g.start, g.stop)
            lay = g.layout
            want = plain_ld(
                digit_llama.hf,
                pairs.clean[rows, : lay.length],
                pairs.corrupted[rows, : lay.length],
                pairs.answers[rows],
                lay.answer,
                "model.layers.1",
                lay.resolve(role)[0],
                pairs.scoring,
            )
            torch.testing.assert_close(got[rows], want, atol=1e-4, rtol=1e-4)
    full = engine.run(pairs, [[Patch(Point("resid_pre", 0, ("a_span", "b_span", "last")))]]).metric[0]
    torch.testing.assert_close(full, engine.clean_ld(pairs), atol=1e-4, rtol=1e-4)  # restores the clean run


def test_the_chunked_logsumexp_is_torchs_and_ld_from_the_sweeps_score_is_the_metrics(digit_llama, digits, monkeypatch):
    """Log-probabilities over a large vocabulary: :func:`~helixclock.patching.metrics.logsumexp`
    (a few rows at a time) equals ``torch.logsumexp`` bit for bit, gradients included (attribution
    patching differentiates it), and ``log_softmax_at`` its columns of ``torch.log_softmax``; and a sweep's LD made from the answer score it has already
    computed equals LD computed again from the logits."""
    from helixclock.patching import metrics

    monkeypatch.setattr(metrics, "LSE_CHUNK", 1000)  # 700 logits a row: one row a chunk
    x = (torch.randn(5, 3, 700, generator=torch.Generator().manual_seed(0)) * 4).requires_grad_()
    got, want = metrics.logsumexp(x), torch.logsumexp(x, -1)
    assert got.shape == (5, 3) and torch.equal(got, want)
    g_got, g_want = (torch.autograd.grad((out * torch.arange(15.0).view(5, 3)).sum(), x)[0] for out in (got, want))
    assert torch.equal(g_got, g_want)
    rows, cols = x[:, 0].detach(), torch.tensor([3, 0, 699, 42])  # answer_scores' log-probabilities
    assert torch.equal(metrics.log_softmax_at(rows, cols), torch.log_softmax(rows, -1)[:, cols])
    assert metrics.log_softmax_at(rows[:0], cols).shape == (0, 4)
    monkeypatch.undo()  # Gemma-3's vocabulary at the chunk size in use: 4 rows a chunk, the last one row
    big = torch.randn(9, 262_144, generator=torch.Generator().manual_seed(1)) * 4
    assert torch.equal(metrics.logsumexp(big), torch.logsumexp(big, -1))
    assert torch.equal(metrics.log_softmax_at(big, cols), torch.log_softmax(big, -1)[:, cols])

    correct = correct_table([(a, b) for a in (3, 12, 45, 88) for b in (5, 40, 99)])
    pairs = draw_pairs(correct, 10, 1, digits, ADD, ("a",), several=True)
    engine = PatchingEngine(digit_llama, batch_size=5, progress=False)
    variants = [[Patch(Point("resid_pre", 1, ("a",)))], [Patch(Point("mlp_out", 0, ("last",)))]]
    fast = engine.run(pairs, variants).metric
    monkeypatch.setattr("helixclock.patching.engine.OF_ANSWER_SCORE", {})  # every metric from the logits
    assert torch.equal(fast, engine.run(pairs, variants).metric)


def test_a_number_is_read_at_the_last_token_of_its_span(digit_llama, digits):
    """resid_pre[0] is the token embedding: collected at role "a", it is the embedding of a's
    last digit (the units digit), whatever a's length."""
    rows = correct_table([(a, 7) for a in (0, 4, 9, 13, 58, 90, 99)])
    from helixclock.causal.pairs import prompt_rows

    ids, groups, order = prompt_rows(digits, ADD, rows, several=True)
    values, _ = PatchingEngine(digit_llama, progress=False).collect(
        ids, [Point("resid_pre", 0, ("a",))], logits=False, groups=groups
    )
    emb = digit_llama.hf.get_input_embeddings().weight
    units = [digits.convert_tokens_to_ids(str(a % 10)) for a in rows["a"].to_numpy()[order]]
    torch.testing.assert_close(values[Point("resid_pre", 0, ("a",))][:, 0], emb[units])


def test_ordered_rows_rebuild_the_prompts(digits):
    problems = TASKS["add"].problems()
    tokens = several_task_tokens(digits, "digit", TASKS["add"], ADD, problems)
    order, groups, layouts = ordered(tokens)
    assert sorted(order.tolist()) == list(range(len(problems)))
    for g in groups:
        assert all(layouts[i] == g.layout for i in range(g.start, g.stop))
    i = int(order[123])
    assert digits.decode(tokens.ids[i]).replace(" ", "") == render(ADD, problems.a[i], problems.b[i]).replace(
        " ", ""
    ).replace("\n", "")


def test_a_units_digit_circle_and_a_t100_helix_planted_on_the_last_token_are_recovered():
    """Synthetic last-token residuals of the numbers 0..299 at three layers: the units digit's
    circle (T = 10) alone, the circle with a T = 100 helix, noise.  The per-layer spectrum finds
    T = 10 at the first two layers and T = 100 only where it was planted; a helix of T = [10, 100]
    fits the second layer (R² ~ 1) and not the third."""
    from helixclock.fitting.bases import Basis
    from helixclock.fitting.fits import fit_token
    from helixclock.stages.structure.analysis import peaks_by_layer

    rng = np.random.default_rng(0)
    n = np.arange(301)  # the cache holds cache.largest_bare_number + 1 numbers; the spectrum reads the first 300
    d = 24
    waves = lambda T: np.stack([np.cos(2 * np.pi * n / T), np.sin(2 * np.pi * n / T)], 1)  # noqa: E731
    circle = waves(10) @ rng.normal(size=(2, d))
    helix = np.concatenate([waves(100), (n / 99.0)[:, None]], 1) @ rng.normal(size=(3, d))
    noise = lambda: 0.05 * rng.normal(size=(len(n), d))  # noqa: E731
    layers = np.stack([circle + noise(), circle + helix + noise(), 5 * noise()], 1)  # [300, 3, d]
    peaks = peaks_by_layer(layers, n_fourier=300, n_peaks=3)
    top = {layer: set(g["period"].round(2)) for layer, g in peaks.groupby("layer")}
    assert peaks[peaks["layer"] == 0].iloc[0]["period"] == 10 and 100 not in top[0]
    assert {10, 100} <= top[1]
    assert not {10, 100} & top[2]
    H = torch.from_numpy(layers[:100]).transpose(0, 1).float()  # the a values 0..99
    fits = fit_token(H, n[:100], [Basis("helix", (10,)), Basis("helix", (10, 100))], n_components=20)
    units, both = fits.r2.numpy()  # [layer] each
    assert units[0] > 0.99 and both[1] > 0.99 and both[2] < 0.3
    assert units[1] < both[1] - 0.1  # the second layer needs the T = 100 helix


def plain_greedy(hf, ids: list[int], steps: int, digit_ids: set[int]):
    """Greedy decoding of one prompt with no cache and no batching: (the digit tokens written,
    at most ``steps``; the first step's logits as the model outputs them)."""
    x = torch.tensor([ids])
    written = []
    with torch.no_grad():
        first = logits = hf(x).logits[0, -1]
        for _ in range(steps):
            tok = int(logits.argmax())
            if tok not in digit_ids:
                break
            written.append(tok)
            x = torch.cat([x, torch.tensor([[tok]])], 1)
            logits = hf(x).logits[0, -1]
    return written, first


# digits' unembedding scaled by boost: 3 writes digits to the bound; gemma2: a final logit soft-cap,
# applied once; gemma3 (Gemma-3-270M's family in make real): sliding and full attention layers under the
# key/value cache, at the bound (the most cached steps) and with rows that stop early (each leaves the
# batch and its cache)
@pytest.mark.parametrize(
    ("boost", "family"),
    [(1.0, "llama"), (3.0, "llama"), (1.0, "gemma2"), (3.0, "gemma2"), (1.0, "gemma3"), (3.0, "gemma3")],
)
def test_greedy_accuracy_equals_a_plain_decoding_loop(family, boost, digits):
    """Batched greedy decoding (layouts grouped, shared prefix cached, key/value cache, two tokens
    past the answer's own count at most) writes what a plain per-prompt loop writes, and reads
    the answer's logit as the model outputs it; exactly the rows that reach the bound are
    marked truncated."""
    from helixclock.prompts.tasks import Task
    from helixclock.stages.accuracy.greedy import greedy_accuracy

    hf = tiny_hf_model(family, len(digits), seed=3)
    with torch.no_grad():
        hf.lm_head.weight[2:12] *= boost
    model = wrap_model(hf, digits, name=f"digit-{family}", number_tokens="several")
    problems = [(a, b) for a in (0, 7, 12, 45, 99) for b in (3, 40, 98)]
    task = Task("add", "a+b", ("a", "b"), "a few", lambda: problems, lambda a, b: a + b)
    acc = greedy_accuracy(model, task, ADD, PatchingEngine(model, batch_size=4, progress=False))
    digit_ids = {digits.convert_tokens_to_ids(str(i)) for i in range(10)}
    for row in acc.itertuples():
        ids = digits(render(ADD, row.a, row.b))["input_ids"]
        written, first = plain_greedy(hf, ids, row.answer_tokens + 2, digit_ids)
        text = digits.decode(written).replace(" ", "") or digits.decode([int(first.argmax())]).strip()
        assert row.pred == text and row.correct == (text == str(row.answer))
        assert row.pred_token == int(first.argmax()) and row.rank == int((first > first[row.answer_token]).sum())
        torch.testing.assert_close(torch.tensor(row.answer_logit), first[row.answer_token])
    lengths = acc["pred"].str.len()
    at_bound = acc["pred"].str.isdigit() & (lengths == acc["answer_tokens"] + 2)  # each row its own bound
    assert at_bound.all() if boost > 1 else not at_bound.all()  # boost 1: some rows stop at a non-digit
    assert (acc["truncated"] == at_bound).all()


def test_pair_counts_know_the_token_counts(digits):
    """With numbers of several tokens a partner needs the clean prompt's shape, the token counts
    of its operands and of its answer: b = 95's only other prompt has a of another length, so no
    pair exists, and the count says so; 95 + 4 = 99 and 96 + 4 = 100 have answers of 2 and 3
    tokens, so they are not partners either ("is it 100 or more" is not what a pair changes)."""
    from helixclock.prompts.numbers import prompt_shapes
    from helixclock.prompts.sampling import pair_indices, pairs_available

    correct = correct_table([(7, 95), (23, 95), (4, 50), (8, 50)])
    shape = prompt_shapes(digits, ADD, correct)
    assert shape == [(1, 2, 3), (2, 2, 3), (1, 2, 2), (1, 2, 2)]  # a, b and answer tokens
    assert pairs_available(correct, ("a",)) == 4  # counted without the tokenizer: an upper bound
    assert (
        pairs_available(correct, ("a",), shape=shape) == 2 == len(pair_indices(correct, 9, 0, ("a",), shape=shape)[0])
    )
    assert pairs_available(correct, ("a",), clean_a=[7, 23], shape=shape) == 0
    with pytest.raises(ValueError, match="no clean/corrupted pairs"):
        draw_pairs(correct.iloc[:2], 4, 0, digits, ADD, ("a",), several=True)
    across = correct_table([(95, 4), (96, 4)])
    assert prompt_shapes(digits, ADD, across) == [(2, 1, 2), (2, 1, 3)]
    assert pairs_available(across, ("a",), shape=prompt_shapes(digits, ADD, across)) == 0


def test_minimum_pairs_is_checked_against_the_pairs_of_one_shape(digits):
    """``minimum.pairs`` counts what the job will draw: before the tokenizer is loaded the count
    is an upper bound (4 here) and the job goes on; with the prompts' shapes it is 2, and a
    minimum of 3 stops the job with the line that names the shaped count."""
    from helixclock.jobs.preconditions import Minimum, PreconditionError, check, clock_needs, helix_patching_needs
    from helixclock.prompts.numbers import prompt_shapes

    acc = correct_table([(7, 95), (23, 95), (4, 50), (8, 50)])
    shape = prompt_shapes(digits, ADD, acc)
    at_least = Minimum(pairs=3)
    first = clock_needs("last_token_patching", acc, [2], 50, ("a", "b"), at_least)[0]
    shaped = clock_needs("last_token_patching", acc, [2], 50, ("a", "b"), at_least, shape=shape)[0]
    assert (first.found, first.met) == (4, True)
    assert (shaped.found, shaped.met, shaped.minimum) == (2, False, 3)
    with pytest.raises(
        PreconditionError, match=r"needs at least 3 clean/corrupted pairs .*of one token shape.*found 2"
    ):
        check("toy", "last_token_patching", [shaped])
    helix = helix_patching_needs(acc, [2], 50, 0.2, 0, at_least, shape)[0]
    assert helix.found == 2 and "of one token shape" in helix.what


def test_table_1_leaves_out_a_task_whose_pairs_of_one_shape_fall_short(digits):
    """Table 1's other tasks count their pairs as the job draws them.  a-23 with five correct
    prompts has 5 pairs by the count that ignores tokens (a minimum of 5 met), but partners
    share a token shape: 30-23 = 7 is the only one-digit answer, so 4 pairs remain and the
    task is left out, with the shaped count in its reason; a+b, whose prompts share one
    shape, keeps its count and runs."""
    from helixclock.jobs.preconditions import Minimum, left_out, other_tasks_needs
    from helixclock.prompts.numbers import task_shapes

    sub = correct_table([(30, -1), (40, -1), (50, -1), (60, -1), (70, -1)]).assign(answer=lambda d: d["a"] - 23)
    add = correct_table([(a, 11) for a in range(10, 16)])
    frames = {"add": add, "sub23": sub}
    prompts = {"add": ADD, "sub23": "Output ONLY a number.\n{a}-23="}
    shapes = task_shapes(digits, prompts, frames)
    assert shapes["sub23"] == [(2, 1)] + [(2, 2)] * 4  # a's and the answer's tokens
    at_least = Minimum(pairs=5)
    bound = other_tasks_needs(frames, [2], 50, at_least)
    shaped = other_tasks_needs(frames, [2], 50, at_least, shapes)
    assert (bound["sub23"][0].found, bound["sub23"][0].met) == (5, True)
    assert (shaped["sub23"][0].found, shaped["sub23"][0].met, shaped["sub23"][0].minimum) == (4, False, 5)
    assert shaped["add"][0].found == bound["add"][0].found == 6 and shaped["add"][0].met
    table = left_out(shaped, frames, "digit", "other_tasks_patching")
    assert table["task"].tolist() == ["sub23"] and "of one token shape" in table["what"].iloc[0]
    assert table[["found", "minimum"]].iloc[0].tolist() == [4, 5]
    assert left_out(bound, frames, "digit", "other_tasks_patching").empty


def test_a_tensor_value_on_a_padded_span_gives_each_repeat_its_first_value(digit_llama, digits):
    """A span narrower than its class repeats its first position: a tensor that fills the repeats
    with the first position's value is the clean patch itself; one that gives a repeat another
    value is refused (the patch would not be defined)."""
    correct = correct_table([(a, b) for a in (3, 7, 12, 45) for b in (5, 21)])
    pairs = draw_pairs(correct, 8, 0, digits, ADD, ("a",), several=True)
    engine = PatchingEngine(digit_llama, progress=False)
    point = Point("resid_pre", 1, ("a_span",))
    clean = engine.run(pairs, [[Patch(point)]]).metric[0]  # "clean" fills the padding consistently
    values = engine.clean_values(pairs, [point])[point]  # [pairs, 2, d]: a one-digit a repeats its token
    assert any(g.layout.resolve("a_span")[0] == g.layout.resolve("a_span")[1] for g in pairs.groups)
    torch.testing.assert_close(engine.run(pairs, [[Patch(point, values)]]).metric[0], clean)
    with pytest.raises(ValueError, match="padded span"):
        engine.run(pairs, [[Patch(point, values + torch.randn_like(values))]])
    # added, the clean - corrupted difference (repeats as their first) is added once: the clean patch
    diff = values - engine.corrupted_values(pairs, [point])[point]
    torch.testing.assert_close(engine.run(pairs, [[Patch(point, diff, add=True)]]).metric[0], clean)
    with pytest.raises(ValueError, match="padded span"):
        engine.run(pairs, [[Patch(point, diff + torch.randn_like(diff), add=True)]])


def test_only_the_digits_0_to_9_continue_an_answer():
    """Greedy decoding continues on tokens spelled by 0-9 only: superscripts and other scripts'
    digits (str.isdigit() is true for them) end an answer like any other token."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from helixclock.prompts.numbers import digit_tokens

    words = ["<unk>", "7", "12", "²", "٣", "१८", "a", "7a"]
    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, "<unk>"))
    )
    assert digit_tokens(tok, len(words)).tolist() == [False, True, True, False, False, False, False, False]


def test_a_coarser_layer_grid_patches_every_step_th_layer_and_the_last(digits):
    """Registry key ``layer_step``: Fig. 6's TE and DE and Fig. 5's answer-position fits patch
    blocks 0, 2 and 3 of a 4-block model (and resid_pre 0, 2, 4), and each kept layer's numbers
    are those of the every-layer sweep (a grid selects layers, it does not change them)."""
    from helixclock.causal.experiments import answer_residuals, layer_grid
    from helixclock.stages.last_token.patching import answer_position_curves, layer_effects

    assert layer_grid(30, 3) == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 29] and layer_grid(5, 1) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="layer_step"):
        layer_grid(4, 0)
    model = wrap_model(
        tiny_hf_model("llama", len(digits), layers=4, seed=2), digits, name="d4", number_tokens="several"
    )
    correct = correct_table([(a, b) for a in (3, 7, 12, 45, 61, 88) for b in (5, 21, 34)])
    pairs = draw_pairs(correct, 12, 0, digits, ADD, ("a", "b"), several=True)
    engine = PatchingEngine(model, progress=False)
    every, coarse = layer_effects(engine, pairs, "answer"), layer_effects(engine, pairs, "answer", layer_step=2)
    assert sorted(coarse["layer"].unique()) == [0, 2, 3] and sorted(every["layer"].unique()) == [0, 1, 2, 3]
    kept = every[every["layer"].isin([0, 2, 3])].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, coarse.reset_index(drop=True), rtol=1e-4, atol=1e-6)  # batches differ
    fitted = answer_residuals(engine, correct, ADD, [0, 2, 4])
    assert len(fitted[0]) == 3
    curves = answer_position_curves(engine, pairs, *fitted, periods=(2, 10), n_components=8, layers=[0, 2, 4])
    assert sorted(curves["layer"].unique()) == [0, 2, 4]
    full = answer_position_curves(
        engine, pairs, *answer_residuals(engine, correct, ADD), periods=(2, 10), n_components=8
    )
    cols = [c for c in curves if c.startswith("pair_")]
    layer = "method == 'layer' and term == 'ld'"
    np.testing.assert_allclose(
        curves.query(layer)[cols].to_numpy(), full.query(layer + " and layer in [0, 2, 4]")[cols].to_numpy(), rtol=1e-4
    )


def test_the_engines_answer_correct_agrees_with_greedy_decoding(digits):
    """``answer_correct`` (the ablation's accuracy) says what greedy decoding says: a random model
    is given as "answers" what it writes itself where it stops within the bound (greedy: correct,
    so answer_correct 1) and those answers cut by their last digit (greedy writes on: 0)."""
    from helixclock.patching.metrics import answer_correct
    from helixclock.prompts.tasks import Task
    from helixclock.stages.accuracy.greedy import greedy_accuracy

    hf = tiny_hf_model("llama", len(digits), d=64, seed=1)  # writes 14 different numbers here
    with torch.no_grad():
        hf.lm_head.weight[2:12] *= 1.3
    model = wrap_model(hf, digits, name="digit-llama", number_tokens="several", answer_end=".")
    problems = [(a, b) for a in range(10, 100, 7) for b in range(10, 90, 9)]
    task = Task("add", "a+b", ("a", "b"), "a few", lambda: problems, lambda a, b: a + b)
    acc = greedy_accuracy(model, task, ADD, PatchingEngine(model, batch_size=16, progress=False))
    stops = acc[acc["pred"].str.isdigit() & ~acc["truncated"] & (acc["pred"].str.len() >= 2)]
    assert len(stops) >= 8, acc["pred"].tolist()
    own = stops.assign(answer=stops["pred"].astype(int), expected=1.0)
    cut = stops.assign(answer=stops["pred"].str[:-1].astype(int), expected=0.0)
    engine = PatchingEngine(model, progress=False)
    for table in (own, cut):
        table = table[table["answer"] >= 10].reset_index(drop=True)  # answers of two tokens or more
        pairs = model_pairs_of(model, table)
        got = engine.run(pairs.same(), [[]], metric=answer_correct).metric[0].cpu().numpy()
        key = dict(zip(zip(table["a"], table["b"]), table["expected"]))
        want = [key[(a, b)] for a, b in zip(pairs.meta["clean_a"], pairs.meta["clean_b"])]
        assert len(pairs) >= 4 and got.tolist() == want


def model_pairs_of(model, table):
    """Pairs whose clean prompts are ``table``'s rows (a, b, answer), with the model's end token."""
    from helixclock.causal.pairs import model_pairs

    return model_pairs(model, table.assign(correct=True, answer_token=0), len(table), 0, ADD, ("a", "b"))

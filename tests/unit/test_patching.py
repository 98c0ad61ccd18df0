"""The patching engine: invariants, agreement with plain PyTorch hooks, batching."""

import pandas as pd
import torch
from helpers.hooks import capture, logit_difference, patched_logits
from helpers.prompts import CLEAN, GPTJ_PROMPTS, LAST, POS_A, make_pairs

from helixclock.causal.pairs import draw_pairs
from helixclock.patching import Patch, PatchingEngine, Point, Record
from helixclock.stats.statistics import bootstrap_ci


def test_full_clean_patch_restores_the_clean_logit(tiny_model):
    """Clean and corrupted prompts differ only at the a token: patching the clean residual
    there at layer 0, or at every position from a on at any layer, reproduces the clean run."""
    pairs = make_pairs(tiny_model)
    engine = PatchingEngine(tiny_model)
    L = tiny_model.adapter.n_layers
    after_a = tuple(range(POS_A, pairs.clean.shape[1]))
    variants = [[Patch(Point("resid_pre", 0, (POS_A,)))]]
    variants += [[Patch(Point("resid_pre", l, after_a))] for l in range(L + 1)]
    res = engine.run(pairs, variants)
    clean_ld = engine.clean_ld(pairs)
    assert clean_ld.abs().min() > 1e-4  # the corruption matters at all
    for v in range(len(variants)):
        torch.testing.assert_close(res.metric[v], clean_ld, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(
        res.answer_logit[0], engine.clean_logits(pairs).gather(1, pairs.clean_answer[:, None])[:, 0]
    )
    # at a later layer, the a token alone no longer carries everything
    later = engine.run(pairs, [[Patch(Point("resid_pre", 1, (POS_A,)))]]).metric[0]
    assert (later - clean_ld).abs().max() > 1e-3


def test_identity_patch_gives_zero(tiny_model):
    pairs = make_pairs(tiny_model)
    engine = PatchingEngine(tiny_model)
    L = tiny_model.adapter.n_layers
    identity = lambda clean, corrupted: corrupted  # noqa: E731
    variants = [
        [Patch(Point(k, l, (POS_A, LAST)), identity)] for l in range(L) for k in ("resid_pre", "mlp_out", "head_out")
    ]
    res = engine.run(pairs, variants)
    assert res.metric.abs().max() < 1e-5
    # and patching nothing at all is the corrupted run
    assert engine.run(pairs, [[]]).metric.abs().max() < 1e-5


def test_agrees_with_plain_pytorch_hooks(tiny_model):
    """Every kind of patch, batched in one engine run, equals one hooked forward each."""
    pairs = make_pairs(tiny_model)
    hf, ad = tiny_model.hf, tiny_model.adapter
    engine = PatchingEngine(tiny_model, batch_size=5)  # chunks straddle variants
    corrupted_logits = hf(pairs.corrupted).logits[:, -1].detach()
    cases = []  # (patch, module path, io, position, value, head)
    last = pairs.clean.shape[1] - 1
    for l in range(ad.n_layers):
        site = ad.site("resid_pre", l)
        clean = capture(hf, site.path, site.io, pairs.clean)
        cases.append((Patch(Point("resid_pre", l, (POS_A,))), site.path, "input", POS_A, clean[:, POS_A], None))
        site = ad.site("mlp_out", l)
        clean = capture(hf, site.path, site.io, pairs.clean)
        cases.append((Patch(Point("mlp_out", l, (last,))), site.path, "output", last, clean[:, last], None))
        site = ad.site("head_out", l)
        clean = capture(hf, site.path, site.io, pairs.clean)
        h = 1
        sl = slice(h * ad.d_head, (h + 1) * ad.d_head)
        cases.append((Patch(Point("head_out", l, (last,), index=h)), site.path, "input", last, clean[:, last, sl], h))
        # a function of clean and corrupted values, and an explicit tensor
        site = ad.site("attn_out", l)
        clean = capture(hf, site.path, site.io, pairs.clean)
        corr = capture(hf, site.path, site.io, pairs.corrupted)
        mix = 0.3 * clean[:, last] + 0.7 * corr[:, last]
        cases.append(
            (Patch(Point("attn_out", l, (last,)), lambda c, x: 0.3 * c + 0.7 * x), site.path, "output", last, mix, None)
        )
        const = torch.randn(ad.d_model)
        cases.append(
            (
                Patch(Point("attn_out", l, (last,)), const[None, None].expand(len(CLEAN), 1, -1).clone()),
                site.path,
                "output",
                last,
                const.expand(len(CLEAN), -1),
                None,
            )
        )
    res = engine.run(pairs, [[c[0]] for c in cases])
    for v, (_, path, io, pos, value, head) in enumerate(cases):
        ref = patched_logits(hf, path, io, pairs.corrupted, pos, value, head, ad.n_heads)
        expected = logit_difference(ref, corrupted_logits, pairs.clean_answer)
        torch.testing.assert_close(res.metric[v], expected, atol=1e-4, rtol=1e-4, msg=f"case {v}: {path} {io}")


def test_batch_size_does_not_change_results(tiny_gptj):
    pairs = make_pairs(tiny_gptj)
    variants = [[Patch(Point("resid_pre", l, (POS_A,)))] for l in range(2)] + [
        [Patch(Point("head_out", 1, (LAST,), index=h))] for h in range(4)
    ]
    a = PatchingEngine(tiny_gptj, batch_size=1000).run(pairs, variants).metric
    b = PatchingEngine(tiny_gptj, batch_size=3).run(pairs, variants).metric
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_clean_and_corrupted_runs_are_cached(tiny_gptj, monkeypatch):
    pairs = make_pairs(tiny_gptj)
    engine = PatchingEngine(tiny_gptj)
    calls = []
    original = engine.collect_run
    monkeypatch.setattr(engine, "collect_run", lambda *a, **k: calls.append(a[0].data_ptr()) or original(*a, **k))
    v = [[Patch(Point("resid_pre", 0, (POS_A,)))]]
    engine.run(pairs, v)
    engine.run(pairs, v)
    assert len(calls) == 2  # one clean and one corrupted run, reused the second time


def test_record_reads_patched_values(tiny_gptj):
    pairs = make_pairs(tiny_gptj)
    engine = PatchingEngine(tiny_gptj)
    p0 = Point("resid_pre", 0, (POS_A,))
    res = engine.run(pairs, [[Patch(p0)], []], record=[Point("resid_pre", 1, (POS_A,))])
    rec = res.records[Point("resid_pre", 1, (POS_A,))]
    clean = engine.clean_values(pairs, [Point("resid_pre", 1, (POS_A,))])[Point("resid_pre", 1, (POS_A,))]
    corr = engine.corrupted_values(pairs, [Point("resid_pre", 1, (POS_A,))])[Point("resid_pre", 1, (POS_A,))]
    torch.testing.assert_close(rec[0], clean, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rec[1], corr, atol=1e-5, rtol=1e-5)


def test_a_run_without_logits_stops_after_its_last_site(tiny_gptj):
    """Collecting without logits, and a sweep without a metric (path patching's first pass),
    run the model only up to the last site they read: the later blocks and the unembedding are
    not run, and what is recorded equals a whole run's values."""
    pairs = make_pairs(tiny_gptj)
    engine = PatchingEngine(tiny_gptj)
    hf, ad = tiny_gptj.hf, tiny_gptj.adapter
    ran = []
    last_block = hf.get_submodule(ad.block_path(ad.n_layers - 1))
    handles = [
        last_block.register_forward_hook(lambda *a: ran.append("last block")),
        hf.get_submodule(ad.unembed).register_forward_hook(lambda *a: ran.append("unembed")),
    ]
    p0, p1 = Point("resid_pre", 0, (POS_A,)), Point("resid_pre", 1, (POS_A, LAST))
    try:
        whole, _ = engine.collect(pairs.clean, [p1], logits=True)
        assert set(ran) == {"last block", "unembed"}  # (and the shared prefix's own run)
        ran.clear()
        stopped, logits = engine.collect(pairs.clean, [p1], logits=False)
        assert ran == [] and logits is None
        torch.testing.assert_close(stopped[p1], whole[p1], atol=0, rtol=0)
        engine.run(pairs, [[Patch(p0)]])  # the corrupted run and a scored sweep: whole runs
        ran.clear()
        res = engine.run(pairs, [[Patch(p0)], []], metric=None, record=[p1])
        assert ran == [] and torch.isnan(res.metric).all()
    finally:
        for h in handles:
            h.remove()
    scored = engine.run(pairs, [[Patch(p0)], []], record=[p1])
    torch.testing.assert_close(res.records[p1], scored.records[p1], atol=0, rtol=0)


def test_bootstrap_interval_brackets_the_mean_and_is_seeded():
    x = torch.tensor([[1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10]] * 2)
    mean, lo, hi = bootstrap_ci(x, n_boot=2000, seed=0)
    assert torch.allclose(mean, torch.tensor(5.5))
    assert (lo < mean).all() and (hi > mean).all() and (lo > 3).all() and (hi < 8).all()
    assert torch.equal(bootstrap_ci(x, seed=1)[1], bootstrap_ci(x, seed=1)[1])


def test_drawn_pairs_corrupt_only_the_chosen_operand_and_are_seeded(tokenizer):
    rows = [(a, b, a + b, tokenizer.convert_tokens_to_ids(str(a + b))) for a in range(30) for b in range(30)]
    correct = pd.DataFrame(rows, columns=["a", "b", "answer", "answer_token"])
    p1 = draw_pairs(correct, 50, 7, tokenizer, GPTJ_PROMPTS["add"], ("a",))
    p2 = draw_pairs(correct, 50, 7, tokenizer, GPTJ_PROMPTS["add"], ("a",))
    assert len(p1) == 50 and torch.equal(p1.corrupted, p2.corrupted)  # seeded
    m = p1.meta
    assert (m["clean_b"] == m["corrupted_b"]).all() and (m["clean_a"] != m["corrupted_a"]).all()
    assert (p1.clean[:, 5] != p1.corrupted[:, 5]).all() and (p1.clean[:, 7] == p1.corrupted[:, 7]).all()
    pb = draw_pairs(correct, 50, 7, tokenizer, GPTJ_PROMPTS["add"], ("b",), clean_a=[3, 4])
    assert set(pb.meta["clean_a"]) <= {3, 4} and (pb.meta["clean_a"] == pb.meta["corrupted_a"]).all()
    assert draw_pairs(correct, 50, 8, tokenizer, GPTJ_PROMPTS["add"]).meta["clean_a"].tolist() != m["clean_a"].tolist()


def test_a_patched_run_starts_at_the_first_block_it_touches(family_model):
    """A batch whose patches and records all lie at block l or later does not run blocks
    0..l-1: block l reads the corrupted run's resid_pre[l] (PatchingEngine.residuals).  The
    results equal an engine that runs every block, on every family; GPT-Neo's blocks return a
    tuple, so there every block runs."""
    pairs = make_pairs(family_model)
    hf, ad = family_model.hf, family_model.adapter
    L = ad.n_layers
    late = [[Patch(Point("resid_pre", L, (LAST,)))], [Patch(Point("head_out", L - 1, (LAST,), index=1))], []]
    variants = [[Patch(Point(k, layer, (POS_A, LAST)))] for layer in range(L) for k in ("resid_pre", "mlp_out")]
    variants += late + [[Patch(Point("resid_pre", 1, (POS_A,))), Record(Point("mlp_out", L - 1, (LAST,)))]]
    record = [Point("resid_pre", L, (LAST,))]
    want = PatchingEngine(family_model, batch_size=7, progress=False, skip_blocks=False).run(
        pairs, variants, record=record
    )
    engine = PatchingEngine(family_model, batch_size=7, progress=False)  # batches straddle variants and layers
    got = engine.run(pairs, variants, record=record)
    for name in ("metric", "answer_logit", "positions"):
        torch.testing.assert_close(getattr(got, name), getattr(want, name), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.records[record[0]], want.records[record[0]], atol=1e-5, rtol=1e-5)
    rec = Point("mlp_out", L - 1, (LAST,))
    torch.testing.assert_close(got.variant_records[-1][rec], want.variant_records[-1][rec], atol=1e-5, rtol=1e-5)
    ran = []
    hook = hf.get_submodule(f"{ad.block_path(0)}.{ad.mlp}").register_forward_hook(lambda *a: ran.append(0))
    try:
        engine.run(pairs, late)  # the corrupted run's residuals are kept: block 0 (its MLP) never runs
    finally:
        hook.remove()
    assert (ran == []) == (ad.family != "gpt_neo"), (ad.family, len(ran))

"""The HDF5 residual cache round trip."""

import h5py
import numpy as np
import torch
from helpers.prompts import GPTJ_PROMPTS, add_prompt_ids

from helixclock.jobs.cache_writer import write_residual_cache
from helixclock.project.cache import read_layer, read_residual_cache


def test_round_trip_matches_a_plain_forward(tiny_gptj, tmp_path):
    a = np.array([3, 12, 99, 41, 7, 60])
    b = np.array([4, 57, 0, 41, 80, 39])
    path = tmp_path / "residuals.h5"
    attrs = write_residual_cache(tiny_gptj, GPTJ_PROMPTS["add"], a, b, path, dtype="float32", largest_bare_number=30)
    cache = read_residual_cache(path)
    L1, d = tiny_gptj.adapter.n_layers + 1, tiny_gptj.adapter.d_model
    assert cache.a.shape == cache.b.shape == cache.last.shape == (6, L1, d)
    assert cache.numbers.shape == (31, L1, d)
    # rows come in the task's order (a-major), each with its (a, b)
    order = np.lexsort((b, a))
    assert (cache.ab == np.stack([a[order], b[order]], 1)).all()
    ids = add_prompt_ids(tiny_gptj.tokenizer, [tuple(r) for r in cache.ab])
    with torch.no_grad():
        out = tiny_gptj.hf(ids, output_hidden_states=True)
    hidden = out.hidden_states  # embeddings, block outputs...; the last is after ln_f
    for l in range(L1 - 1):
        np.testing.assert_allclose(cache.a[:, l], hidden[l][:, 5].numpy(), atol=1e-5)
        np.testing.assert_allclose(cache.b[:, l], hidden[l][:, 7].numpy(), atol=1e-5)
        np.testing.assert_allclose(cache.last[:, l], hidden[l][:, 8].numpy(), atol=1e-5)
    np.testing.assert_allclose(read_layer(path, "last", 1), cache.last[:, 1])
    assert attrs["position_a"] == 5 and attrs["position_b"] == 7 and attrs["position_last"] == 8
    assert cache.attrs["template"] == GPTJ_PROMPTS["add"] and "resid_pre" in cache.attrs["layer_convention"]
    with h5py.File(path) as f:
        assert f["a"].chunks[1] == 1  # one layer per chunk
        assert f["numbers"].attrs["values"][-1] == 30


def test_a_float16_cache_stores_float16_and_says_so(tiny_gptj, tmp_path):
    path = tmp_path / "r16.h5"
    write_residual_cache(
        tiny_gptj, GPTJ_PROMPTS["add"], np.array([1, 2]), np.array([3, 4]), path, dtype="float16", largest_bare_number=5
    )
    with h5py.File(path) as f:
        assert f["a"].dtype == np.float16 and f.attrs["dtype"] == "float16"


def test_a_second_writer_of_one_cache_neither_truncates_the_first_nor_fails(tiny_gptj, tmp_path):
    """Two writers of one cache (two Snakemake commands in one folder): each writes a temporary file
    of its own.  A shared `<path>.tmp` (the writer before) is truncated by HDF5 as the second
    writer opens it, before HDF5 checks its lock (a make real lost its Gemma-3 cache's first rows
    so); here the first writer's file is held open while the second writes, and both survive."""
    path = tmp_path / "residuals.h5"
    a, b = np.array([3, 12, 99]), np.array([4, 57, 0])
    first = h5py.File(str(path) + ".tmp", "w")  # the shared name the writer used before, held open
    first.create_dataset("x", data=np.arange(1000.0))
    try:
        write_residual_cache(tiny_gptj, GPTJ_PROMPTS["add"], a, b, path, dtype="float32", largest_bare_number=5)
    finally:
        first.close()
    with h5py.File(str(path) + ".tmp") as f:
        assert f["x"][-1] == 999.0  # the other writer's file is as it wrote it
    assert read_residual_cache(path).a.shape[0] == 3 and not list(tmp_path.glob("*.h5.*.tmp"))

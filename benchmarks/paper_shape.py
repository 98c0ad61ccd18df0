"""The whole DAG on the real GPT-J-6B, estimated: FLOPs per model job and the time on one H100.

No GPU was available while the pipeline was built, so the paper model's run time is
extrapolated from the CPU, in three parts.

1. Workload formulas.  For every model job of the DAG (the rules with ``resources: gpu=1`` in
   workflow/rules; train_toy only runs for toy models; a rule without a formula stops the
   benchmark) a function below lists the forward passes the job's
   library code makes, as groups of :class:`Call`: rows (prompts, or pairs x patch variants
   stacked along the batch), the tokens each row runs (the engine runs the shared instruction
   prefix once per job and then only the tokens from the operand a on), the batch size,
   whether the pass carries gradients (attribution patching: a backward pass each), and the
   rows that go through the final norm and unembedding alone (direct effects).  A formula
   reads the model's shape, the token positions of each task's prompt and the counts of
   config/config.yaml (bootstrap resampling is no forward pass and does not appear).
2. The formulas are checked by counting, at every run: each model job's library calls (as its
   script makes them) run on a tiny random-weight GPT-J (3 layers, 4 heads) with scaled-down
   counts and fabricated accuracy tables, with forward hooks on the first block and on the
   unembedding that sum batch x tokens, the rows with gradients and the passes.  Each job's
   counts must equal its formula's at that shape, or the benchmark stops.  The data-dependent
   counts (correct prompts, pairs drawn, heads categorised, the path-patched heads' layers)
   are read from that run.
3. Timing.  A random-weight model of GPT-J's exact width (d 4096, 16 heads, MLP 16,384,
   rotary 64, vocabulary 50,400), float32 on the CPU, with 2 layers and with 1 (interleaved,
   best of a few): a plain forward of a few a+b prompts (GPT-J's prompt, GPT-2's tokenizer from
   tests/data/gpt2) gives the time per layer per token and of the rest (embedding, final norm,
   unembedding); with the analytic FLOPs that is this CPU's achieved FLOP/s (the unembedding is
   also timed alone, as a cross-check).  Two ratios on the same model test the FLOP model: the
   engine's patched run against plain forwards of the same rows in the same passes (FLOP model:
   1), and the attribution pass's backward against its forward (FLOP model: their FLOPs' ratio).
   (The 2 layers share one set of weights, and the embedding the unembedding's matrix: GPT-J's
   shapes and FLOPs with half the memory to fill; an 800 MB layer fits in no CPU cache either way.)

Extrapolation: FLOPs of every job on the real GPT-J (28 layers, bf16/fp16) with the config's
counts and the paper's accuracies (Table A1, Table C1), and the time on one H100 SXM at a
stated share of its 989 TFLOP/s dense bf16/fp16 peak (0.3; 0.1 as a pessimistic bound).
Not in the time: loading the weights (12.1 GB per model job), HDF5 reads and writes, the fits'
float64 SVDs, and Python/nnsight overhead per forward pass (the passes are counted and printed).

FLOP model, per token: a block 2 (4 d^2 + 2 d d_mlp) + 4 ctx d (scores and mixing over ctx
tokens, ctx = the prompt length, an upper bound); the unembedding 2 d V; a backward pass
(weights frozen, so input gradients only) from the logits down to the earliest neuron scored:
the unembedding, L - 1 blocks and layer 0's MLP output projection.

The last line is JSON: per-job GFLOPs, total PFLOPs, H100 hours at the stated utilisation,
the CPU's GFLOP/s, the timed/FLOP-model ratios and whether every formula check passed.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
import torch
from common import emit
from gptj_counting import check_formulas, count_tiny, tiny_config
from gptj_timing import gpt2_tokenizer, time_width
from gptj_workload import (
    GPTJ,
    H100_PEAK_TFLOPS,
    JOBS,
    MEMORY,
    PAPER_ACCURACY,
    counts_from,
    fabricated_tables,
    geometry,
    memory,
    model_rules,
    n_top,
    path_counts,
    read_config,
    svd_flops,
    totals,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2, help="blocks of the GPT-J-width model timed (and 1)")
    parser.add_argument("--prompts", type=int, default=8, help="a+b prompts of the timed batch")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (best kept, after one warm-up)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--utilisation", type=float, default=0.3, help="share of the H100's peak assumed")
    parser.add_argument("--pessimistic", type=float, default=0.1, help="a second, pessimistic share")
    parser.add_argument("--peak-tflops", type=float, default=H100_PEAK_TFLOPS, help="H100 dense bf16/fp16 peak")
    parser.add_argument("--check-batch", type=int, default=128, help="engine batch of the tiny counting run")
    parser.add_argument("--no-timing", action="store_true", help="skip the GPT-J-width timing")
    parser.add_argument("--calls", action="store_true", help="print every pass group of every job")
    args = parser.parse_args()
    if args.layers < 2:
        parser.error("--layers must be at least 2 (the per-layer time is the difference to 1 layer)")
    torch.set_num_threads(args.threads)
    cfg, entry = read_config()
    unmodelled = sorted(set(model_rules()) - set(JOBS) - {"train_toy", "answer_scores"})
    if unmodelled:
        raise SystemExit(f"model jobs without a workload formula here: {', '.join(unmodelled)}")

    t0 = time.perf_counter()
    got, tiny, tiny_geo, tiny_counts = count_tiny(tiny_config(cfg), entry, args.check_batch)
    bad = check_formulas(got, tiny, tiny_geo, tiny_counts)
    tiny_passes = sum(v["passes"] for v in got.values())
    tiny_ms_per_pass = 1e3 * sum(v["seconds"] for v in got.values()) / max(1, tiny_passes)
    print(
        f"formula check on a tiny GPT-J ({tiny.n_layers} layers, {tiny.n_heads} heads, d {tiny.d_model}, "
        f"MLP {tiny.d_mlp}; {len(JOBS)} jobs, {tiny_passes} passes, {time.perf_counter() - t0:.0f} s): "
        + (
            "every job's token-rows, unembedding rows, gradient rows and passes equal its formula"
            if not bad
            else "MISMATCH\n  " + "\n  ".join(bad)
        ),
        flush=True,
    )
    if bad:
        raise SystemExit(1)

    tok = gpt2_tokenizer()
    tasks = tuple(cfg["accuracy"]["tasks"])
    geo = geometry(tok, entry["prompts"], tasks, cfg["cache"]["largest_bare_number"], "gptj")
    tables = fabricated_tables(tok, tasks, PAPER_ACCURACY, cfg["seed"])
    counts = counts_from(cfg, entry, tables, cfg["batch_size"], top_heads=cfg["clock"]["top_heads"])
    ctx = geo.prompts["add"].length
    rate = args.peak_tflops * 1e12
    rows, per_job = [], {}
    for job, fn in JOBS.items():
        calls = fn(GPTJ, geo, counts)
        t = totals(calls, GPTJ, ctx)
        per_job[job] = t
        rows.append(
            {
                "job": job,
                "token-rows": t["block_rows"],
                "unembed rows": t["unembed_rows"],
                "grad rows": t["grad_rows"],
                "passes": t["passes"],
                "PFLOP": t["flops"] / 1e15,
                f"H100 s @{args.utilisation:g}": t["flops"] / (rate * args.utilisation),
                f"H100 s @{args.pessimistic:g}": t["flops"] / (rate * args.pessimistic),
            }
        )
        if args.calls:
            print(f"\n{job}:")
            for c in calls:
                print(f"  {c.what}: {c.repeat} x {c.rows} rows x {c.tokens} tokens ({c.kind}, {c.passes} passes)")
    table = pd.DataFrame(rows)
    total = table.drop(columns="job").sum()
    table.loc[len(table)] = {"job": "total", **total.to_dict()}
    flops = float(total["PFLOP"]) * 1e15
    hours = flops / (rate * args.utilisation) / 3600
    hours_low = flops / (rate * args.pessimistic) / 3600
    print(
        f"\nGPT-J-6B ({GPTJ.n_layers} layers, d {GPTJ.d_model}, {GPTJ.n_heads} heads, MLP {GPTJ.d_mlp}, vocab "
        f"{GPTJ.vocab}; {GPTJ.params / 1e9:.2f} B parameters), a+b prompt {ctx} tokens, the engine runs "
        f"{geo.prompts['add'].suffix} after the shared prefix; batch {counts.batch}; correct a+b prompts "
        f"{counts.correct['add']} ({PAPER_ACCURACY['add']:.1%}); top neurons {n_top(GPTJ, counts)}; Fig. D7 paths "
        f"{path_counts(GPTJ, counts.senders, counts.receivers)[0]}"
    )
    fmt = {"PFLOP": "{:.3f}".format}
    print(
        table.to_string(
            index=False, formatters={**fmt, **{c: "{:.0f}".format for c in table.columns if c.startswith("H100")}}
        )
    )
    print(
        f"total: {flops / 1e15:.1f} PFLOP; one H100 at {args.utilisation:.0%} of {args.peak_tflops:g} TFLOP/s: "
        f"{hours * 60:.1f} min of compute ({args.pessimistic:.0%}: {hours_low * 60:.1f} min)"
    )

    timing = None if args.no_timing else time_width(entry["prompts"], args.prompts, args.layers, args.repeats)
    if timing:
        print(
            f"\nGPT-J width on this CPU ({timing['threads']} thread(s), float32, {timing['prompts']} prompts x "
            f"{timing['tokens']} tokens; model built in {timing['build_s']} s): "
            f"{timing['ms_per_token_per_layer']} ms per token per block = {timing['gflops_per_s_layers']} GFLOP/s; "
            f"embedding + final norm + unembedding "
            f"{timing['ms_per_token_rest']} ms per token = {timing['gflops_per_s_rest']} GFLOP/s; whole "
            f"{timing['layers']}-layer forward {timing['gflops_per_s_forward']} GFLOP/s"
        )
        print(
            f"unembedding alone {timing['gflops_per_s_unembed_alone']} GFLOP/s; the engine's patched run takes "
            f"{timing['engine_run_vs_plain_forward']}x plain forwards of the same rows (FLOP model: 1); the "
            f"attribution backward {timing['backward_over_forward']}x its forward (FLOP model: "
            f"{timing['backward_over_forward_flop_model']}); autograd saves "
            f"{timing['saved_kb_per_token_layer_fp32']} kB per token per block (float32)"
        )
    mem = memory(GPTJ, counts, geo, timing and timing["saved_kb_per_token_layer_fp32"])
    print("memory (analytic, bf16/fp16): " + "; ".join(f"{MEMORY[k]} {v:.2f} GB" for k, v in mem.items()))
    passes = int(total["passes"])
    print(
        f"not in the estimate: {passes} forward passes, each with Python/nnsight overhead ({tiny_ms_per_pass:.0f} ms "
        f"a pass on this CPU for the 3-layer toy, job time / passes: "
        f"{passes * tiny_ms_per_pass / 1e3 / 60:.1f} min at that rate); "
        f"loading {mem['weights_gb']:.1f} GB of weights in each of {len(JOBS)} model jobs; HDF5 I/O (the residual "
        f"cache alone is {mem['residual_cache_file_gb']:.1f} GB); the fits' float64 SVDs, about "
        f"{svd_flops(GPTJ, counts) / 1e12:.0f} TFLOP (analytic)"
    )

    emit(
        {
            "benchmark": "paper_shape",
            "formula_checks_passed": not bad,
            "jobs_checked": len(JOBS),
            "gflops_per_job": {k: round(v["flops"] / 1e9) for k, v in per_job.items()},
            "total_pflops": round(flops / 1e15, 2),
            "utilisation": args.utilisation,
            "peak_tflops": args.peak_tflops,
            "h100_hours": round(hours, 4),
            "h100_hours_pessimistic": round(hours_low, 4),
            "pessimistic_utilisation": args.pessimistic,
            "forward_passes": passes,
            "tiny_ms_per_pass": round(tiny_ms_per_pass, 1),
            "cpu_gflops_per_s": timing and timing["gflops_per_s_forward"],
            "svd_tflops_fp64_analytic": round(svd_flops(GPTJ, counts) / 1e12),
            "assumptions": {
                "accuracy": PAPER_ACCURACY,
                "top_heads": counts.top_heads,
                "senders": counts.senders,
                "receivers": counts.receivers,
                "backward": "input gradients only (weights frozen)",
            },
            "memory_gb": {k: round(v, 2) for k, v in mem.items()},
            "timing": timing,
        }
    )


if __name__ == "__main__":
    main()

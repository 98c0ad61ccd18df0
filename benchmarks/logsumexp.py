"""The log-probability LD's normaliser over a large vocabulary: helixclock's logsumexp (a few
rows at a time, :func:`helixclock.patching.metrics.logsumexp`) against ``torch.logsumexp`` on
the same logits in the same run.

Every patched run of a model whose numbers take several tokens scores its k answer positions by
log-probability (docs/several-tokens.md, "Numbers of several tokens"), so each batch takes a logsumexp over
[rows, k, vocabulary] logits: 50 rows of three positions are 157 MB of float32 for Gemma-3's
262,144 tokens.  ``torch.logsumexp`` makes temporaries of that size, fresh pages on every call;
a few rows at a time they stay small and are reused.  The results are equal bit for bit (checked
here and in the tests).  No model is needed: the logits are random, at the vocabularies of the
two real models (SmolLM2-135M 49,152; Gemma-3-270M 262,144).  The last line is JSON: per
vocabulary, the seconds of both and their ratio.
"""

from __future__ import annotations

import argparse

import torch
from common import emit, timed

from helixclock.patching.metrics import logsumexp

VOCABULARIES = {"smollm2-135m": 49_152, "gemma3-270m": 262_144}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=50, help="patched rows a batch (pairs x variants)")
    ap.add_argument("--positions", type=int, default=3, help="answer positions a row scores (k)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    device = torch.device("cpu")
    out = {}
    for name, vocab in VOCABULARIES.items():
        logits = torch.randn(args.rows, args.positions, vocab, generator=torch.Generator().manual_seed(0)) * 4
        assert torch.equal(logsumexp(logits), torch.logsumexp(logits, -1))
        ours = timed(lambda x=logits: logsumexp(x), device, args.repeats)
        torch_s = timed(lambda x=logits: torch.logsumexp(x, -1), device, args.repeats)
        out[name] = {"vocabulary": vocab, "helixclock_s": ours, "torch_s": torch_s, "speedup": torch_s / ours}
        shape = f"[{args.rows}, {args.positions}, {vocab}]"
        print(f"{name}: {shape} helixclock {ours * 1e3:.1f} ms, torch {torch_s * 1e3:.1f} ms")
    emit(out)


if __name__ == "__main__":
    main()

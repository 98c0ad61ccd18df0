"""GPT-J's real tokenizer, built offline from GPT-2's vendored BPE files (tests/data/gpt2/).

GPT-J uses GPT-2's byte-level BPE unchanged: ``encoder.json`` is what Hugging Face calls
``vocab.json`` (token -> id, 50,257 entries) and ``vocab.bpe`` is ``merges.txt`` (a
``#version: 0.2`` header line, then one merge "left right" per line, in rank order).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from helpers.paths import REPO

GPT2_DIR = REPO / "tests" / "data" / "gpt2"
ENCODER = GPT2_DIR / "encoder.json"
MERGES = GPT2_DIR / "vocab.bpe"
# SHA-256 of OpenAI's published files (the fingerprints tiktoken pins for its "gpt2" encoding)
SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}
MERGES_HEADER = "#version: 0.2"
GPTJ_VOCAB_SIZE = 50400  # GPT-J's embedding rows: GPT-2's 50,257 tokens and 143 unused ones
EOS_ID = 50256  # <|endoftext|>, GPT-J's bos and eos


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_merges(path: Path = MERGES) -> list[tuple[str, str]]:
    """Merge pairs of a GPT-2 ``vocab.bpe`` in rank order (the header line checked and dropped)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines[0] != MERGES_HEADER:
        raise ValueError(f"{path}: first line is {lines[0]!r}, expected {MERGES_HEADER!r}")
    return [tuple(line.split(" ")) for line in lines[1:] if line]


def gpt2_tokenizer():
    """A Hugging Face fast (``tokenizers``-backed) GPT-2 tokenizer, as GPT-J's hub tokenizer:
    no BOS added, ``<|endoftext|>`` as bos/eos/unk."""
    from transformers import GPT2TokenizerFast

    vocab = json.loads(ENCODER.read_text(encoding="utf-8"))
    return GPT2TokenizerFast(vocab=vocab, merges=read_merges())


def save_tiny_gptj(path: Path, layers: int = 2, d: int = 32, heads: int = 4, seed: int = 0) -> Path:
    """A random-weight GPT-J with the real vocabulary size and the real tokenizer, saved with
    ``save_pretrained`` so it loads from ``path`` exactly like a hub checkpoint."""
    import torch
    from transformers import GPTJConfig, GPTJForCausalLM

    torch.manual_seed(seed)
    cfg = GPTJConfig(
        vocab_size=GPTJ_VOCAB_SIZE,
        n_positions=64,
        n_embd=d,
        n_layer=layers,
        n_head=heads,
        rotary_dim=4,
        n_inner=2 * d,
        bos_token_id=EOS_ID,
        eos_token_id=EOS_ID,
    )
    GPTJForCausalLM(cfg).eval().save_pretrained(path)
    gpt2_tokenizer().save_pretrained(path)
    return path

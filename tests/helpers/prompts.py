"""The authors' GPT-J prompts, a+b prompt ids, the engine tests' clean/corrupted pairs and a
tokenizer that splits numbers into digits."""

from __future__ import annotations

import torch

from helixclock.patching import Pairs

GPTJ_PROMPTS = {
    "add": "Output ONLY a number.\n{a}+{b}=",
    "sub23": "Output ONLY a number.\n{a}-23=",
    "div5": "Output ONLY a number.\n{a}//5=",
    "mul1p5": "Output ONLY a number.\n{a}*1.5=",
    "mod2": "Output ONLY a number.\n{a} modulo 2=",
    "solve_x": "Output ONLY a number.\nx-{a}=0, x=",
}

CLEAN = [(3, 4), (12, 57), (99, 0), (41, 41), (7, 80), (60, 39), (25, 25)]
CORRUPT = [(5, 4), (70, 57), (1, 0), (8, 41), (33, 80), (2, 39), (90, 25)]
# positions in an a+b prompt of the word-level toy tokenizer: Output ONLY a number . {a} + {b} =
POS_A = 5  # a
LAST = 8  # "=", the last token, where the answer is read


def add_prompt_ids(tokenizer, pairs, template=GPTJ_PROMPTS["add"]):
    from helixclock.prompts.tasks import render

    return torch.tensor(tokenizer([render(template, a, b) for a, b in pairs])["input_ids"])


def make_pairs(model):
    tok = model.tokenizer
    clean, corrupt = add_prompt_ids(tok, CLEAN), add_prompt_ids(tok, CORRUPT)
    ans = torch.tensor([tok.convert_tokens_to_ids(str(a + b)) for a, b in CLEAN])
    ans_x = torch.tensor([tok.convert_tokens_to_ids(str(a + b)) for a, b in CORRUPT])
    return Pairs(clean, corrupt, ans, ans_x)


def digit_splitting_tokenizer():
    """A tokenizer that splits numbers into single digits, like many LLMs' do."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<pad>": 1}
    for w in list("0123456789") + ["Output", "ONLY", "a", "number", ".", "+", "="]:
        vocab[w] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Punctuation()]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")

"""Why a helix, and the model's mistakes (paper appendices E and F).

``linear_addition``: App. E, addition along a line fitted to the numbers (Fig. E1).
``wrong_answers``: App. F, the wrong answers by offset, the carry test, and the final logits
over the answers 0..198 with their slopes and periods (Figs. F1, F2, F5, F6).
``logit_lens``: App. F, the top neurons' logit lens and its periods (Figs. F3, F4).
``figures``: the figures of all three, drawn from their tables (no torch).

(The stage is named for the model's mistakes, not for error handling; its tables are written
under ``results/{model}/mistakes/``.)
"""

"""Why a helix, and the model's errors (paper appendices E and F).

``linear_addition``: App. E, addition along a line fitted to the numbers (Fig. E1).
``errors``: App. F, the error distribution, the carry test, neuron logit lens and the final
logits' slope and periods (Figs. F1-F6).
``figures``: the figures of both, drawn from their tables (no torch).
"""

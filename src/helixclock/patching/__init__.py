"""The patching engine: every causal experiment of the paper goes through it.

==================  ===================================================================
module              what
==================  ===================================================================
``points``          Point (a hook point at positions, optionally one head or neuron),
                    Patch, Record
``runs``            Pairs of clean/corrupted prompts and the cached unpatched runs
``metrics``         metrics of a patched run (LD by default)
``prefix``          the shared prompt prefix, run once
``batching``        chunks of rows, halved on CUDA out-of-memory
``engine``          PatchingEngine: collect, run (batched activation patching)
``paths``           direct effects and sender -> receiver path patching (functions over
                    an engine)
``attribution``     attribution patching (gradient x difference) of every neuron at once
                    (a function over an engine)
==================  ===================================================================

Shapes are written in the signatures (jaxtyping, not checked at run time): ``pair`` is a
clean/corrupted pair, ``row`` a row of a forward pass (a pair, or a pair under one variant
of a sweep), ``variant`` a variant of :meth:`PatchingEngine.run`, ``seq`` a prompt's token
positions, ``pos`` the positions a :class:`Point` selects, ``k`` the answer tokens read
(1 for a one-token answer), ``vocab`` the vocabulary and ``*feature`` a hook point's trailing
axes (``d_model``; heads x ``d_head`` for ``head_out``; ``d_mlp`` for neurons).
"""

from .attribution import attribute
from .batching import OOMRetry
from .engine import PatchingEngine, RunResult
from .metrics import answer_correct, clean_answer_logit, logit_difference
from .paths import contribution, delta, direct_effects, path_patch, write_change
from .points import Patch, Point, Record
from .runs import Pairs, RunCache

__all__ = [
    "OOMRetry",
    "PatchingEngine",
    "RunResult",
    "Patch",
    "Point",
    "Record",
    "Pairs",
    "RunCache",
    "logit_difference",
    "clean_answer_logit",
    "answer_correct",
    "attribute",
    "contribution",
    "write_change",
    "delta",
    "direct_effects",
    "path_patch",
]

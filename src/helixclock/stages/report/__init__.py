"""The report: Fig. 1 from the model's own fits, the paper-vs-run comparison, the effects of
config key ``compat`` and the cross-model figures.

``clock``: the a+b coordinates of the last-token helix(a+b) fit behind Fig. 1.
``compare``: the paper's published numbers (``config/paper_values.yaml``) beside the run's.
``quantities``: where each published number's run value is read from, and how.
``status``: the statuses of a row and what each means (``MEANINGS``: agree, differ, not comparable,
not run, not defined, missing).
``agreement``: whether a value agrees with the paper's, or why it is not comparable.
``compat``: the numbers ``compat: authors`` changes, under each mode run (docs/differences.md, "Differences
from the authors' code").
``figures``: fig01_clock, figAll_accuracy, figAll_ld_ratios (no torch).
``gallery``: the site's figure gallery (docs/gallery.md): a finished run's figures of each named model,
downsized, side by side by the paper's sections (``make gallery``).
"""

"""The report: Fig. 1 from the model's own fits, the paper-vs-run comparison and the
cross-model figures.

``clock``: the a+b coordinates of the last-token helix(a+b) fit behind Fig. 1.
``compare``: the paper's published numbers (``config/paper_values.yaml``) beside the run's;
``quantities`` how each is read from the run's tables, ``status`` what a row's status says.
``figures``: fig01_clock, figAll_accuracy, figAll_ld_ratios (no torch).
``look``: the shared seaborn look of the figures of these stages.
"""

"""Findings (docs/findings.md, "Findings"): every claim the project states about a run, declared in
``config/findings.yaml`` before the run (``registry``), computed from the saved tables of the other
stages, never their modules (``contrasts``: rows, choices on a job's selection draw or
cross-fitted over the pairs, per-pair values, intervals), judged within its family for
multiplicity (``verdicts``: Holm, Benjamini-Hochberg, the minimal detectable effect) and
written as a page whose every number is read from the table (``page``); ``tables`` is the
findings job's entry point.
"""

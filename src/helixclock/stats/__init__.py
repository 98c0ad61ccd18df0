"""Statistics of the raw per-pair tables: means and bootstrap intervals (``statistics``), the
findings' inference (``inference``), multiplicity and verdicts (``multiplicity``), choices
cross-fitted over the pairs (``crossfit``) and summaries by answer length and stratum
(``lengths``, ``strata``).
"""

"""One package per paper section: the rooms of the house.

==============  =====================================================  ======================
package         paper                                                  rule file
==============  =====================================================  ======================
accuracy        section 3, appendix A, table C1                        accuracy.smk
structure       section 4.1, appendix B (Fourier structure of numbers)  structure.smk
helix           sections 4.2-4.5, appendix C (helix fits, patching)    helix.smk
last_token      section 5.1 (last-token fits, layer effects)           last_token.smk
heads           section 5.2, appendix D.1 (attention heads)            heads.smk
mlps            section 5.3, appendix D.2 (MLPs)                       mlps.smk
neurons         section 5.4, appendix D.2 (neurons)                    neurons.smk
mistakes        appendices E and F (why a helix, the model's errors)   mistakes.smk
report          Fig. 1, the paper beside the run, cross-model figures  report.smk
==============  =====================================================  ======================

Each package holds the stage's science (modules that may run the model through
:mod:`helixclock.patching`), its ``tables`` (pandas only) and its ``figures`` (seaborn, no
torch: plotting jobs never load torch).  Science shared by several stages lives outside:
:mod:`helixclock.fitting.bases`, :mod:`helixclock.fitting.fits`, :mod:`helixclock.prompts.sampling`,
:mod:`helixclock.causal.pairs`, :mod:`helixclock.stats.statistics`, :mod:`helixclock.fitting.fourier`,
:mod:`helixclock.causal.experiments`; so do the names several stages share, such as
:data:`helixclock.prompts.layout.READINGS` (the readings of the last-token, head and MLP stages) and
:data:`helixclock.stats.statistics.MIN_ERRORS` (the fewest wrong answers of App. F's test, which the
report reads too).  A stage never imports another stage's modules (tests/unit/test_imports.py checks
it); it reads their saved outputs.
"""

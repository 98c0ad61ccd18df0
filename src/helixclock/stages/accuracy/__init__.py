"""Accuracy (paper section 3, appendix A, table C1): every prompt of every task, Table A1,
Fig. A1 and Table C1.  ``sweep`` runs the model; ``tables`` and ``figures`` read its CSVs."""

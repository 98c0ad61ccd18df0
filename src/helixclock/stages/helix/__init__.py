"""The helix (paper sections 4.2-4.5, appendix C): fits of the a-token residuals and their
causal tests by activation patching, on a+b and five other tasks (Table 1).

``fitting`` reads the residual cache (no model); ``patching`` runs the model and saves raw
per-pair tables; ``tables`` summarises them (bootstrap intervals, best period subsets,
Table 1); ``figures`` draws Figs. 3, 4 and C1-C7.
"""

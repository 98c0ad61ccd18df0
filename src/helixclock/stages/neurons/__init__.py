"""Neurons stage (paper section 5.4, appendix D.2): the helix-inspired fit of top neurons'
preactivations N(a, b) (Eq. 5), their dominant Fourier periods, and the figures built on them
(fig08, figD12, figD13, fig10)."""

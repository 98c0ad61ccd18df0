"""Neurons stage (paper section 5.4, appendix D.2): units (layer, neuron, place) at the places of the
model's answers - one place, the whole number at the last token, where numbers are one token (the
paper's neurons) - their attribution, direct effects and ablation (:mod:`.places`, composed by
:mod:`.jobs`), the helix-inspired fit of their preactivations N(a, b) (Eq. 5), their dominant
Fourier periods, and the figures built on them (fig08, fig09, fig10, figD9-figD13)."""

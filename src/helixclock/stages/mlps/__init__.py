"""MLPs (paper section 5.3, appendix D.2): the top-k MLPs by total effect (Fig. D8) and, for
the circuit MLPs, whether they build helix(a+b) or read it out to the logits (Fig. 7)."""

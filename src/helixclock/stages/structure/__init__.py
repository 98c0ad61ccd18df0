"""Structure of numbers (paper section 4.1, appendix B): the Fourier spectrum, PC1 and
distances of bare number tokens at the output of layer 0, read from the residual cache."""

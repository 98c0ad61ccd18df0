"""The Clock algorithm at the last token (paper section 5.1, appendix D): fits of the
last-token residual patched at every layer (Fig. 5), and the total and direct effects of
every attention and MLP layer (Fig. 6)."""

"""Attention heads (paper section 5.2, appendix D.1): head effects, top-k heads, helix fits of
head outputs, a,b / a+b / mixed categories, head properties and path patching."""

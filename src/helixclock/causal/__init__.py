"""The causal experiments the stages share, on the patching engine: clean/corrupted pairs
(``pairs``), experiment templates (``experiments``) and the reading at the first differing
token (``first_difference``).
"""

"""What a run runs on: the locked environment (``lock``), the record of what a run ran on
(``provenance``) and the GPU slot of a model job (``gpus``).
"""

"""Running a job: what every script does first (``pipeline``) and checks before a model loads
(``preconditions``), what a model job does next (``model_jobs``), the residual cache's model
job (``cache_writer``) and what a job asks of a cluster (``placement``, ``memory``).
"""

"""helixclock: reproduce "Language Models Use Trigonometry to Do Addition".

The package is the pipeline's library; Snakemake rules call it through thin scripts.
Importing the package itself imports no torch (the Snakefile uses :mod:`helixclock.lm.config`).
"""

__version__ = "0.1.0"

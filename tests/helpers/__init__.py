"""Builders and harnesses the tests share: tiny models of every family, plain-hook
references, prompts and pairs, tokenizers, the repository's root, saving a test's figure, the
DAG runner and a local Slurm cluster.  Test files import from here, never from conftest or
from each other."""

"""Builders and harnesses the tests of both rooms (tests/unit, tests/dag) share: tiny models of
every family (families) and digit-tokenised ones with their engine and pairs (digit_models),
plain-hook references (hooks), prompts and pairs (prompts), planted tables (tables: accuracy
and pairs tables; report_results: every table the paper comparison reads), phases on a circle
(phases), the registry with values changed (registry), tokenizers (gpt2_tokenizer), the
repository's root (paths), saving a test's figure (figures), the DAG runner (dag) and a local
Slurm cluster (slurm_cluster).  Test files import from here, never from conftest or from each
other."""

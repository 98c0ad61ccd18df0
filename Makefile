# Quickstart targets: `make run` runs the main job on the embedded default; `make test` is the
# README's test command (`make lint && .venv/bin/python -m pytest -q --durations=10`, what .ci/run runs).
# Both create ./.venv on first use (CPU build of torch from TORCH) and reuse it afterwards.
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
STAMP := $(VENV)/.installed
CORES ?= all

.PHONY: run test test-fast lint format venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q "$(TORCH)"
	$(VENV)/bin/python -m pip install -q -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES)

# everything: lint, then every test (the whole tiny DAG and the Slurm run included)
test: $(STAMP) lint
	$(VENV)/bin/python -m pytest -q --durations=10

# the inner loop: no whole-DAG or Slurm runs
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -q -m "not slow"

# ruff check, ruff format --check and snakefmt --check (format with `make format`), snakemake --lint
lint: $(STAMP)
	$(VENV)/bin/ruff check src scripts tests benchmarks
	$(VENV)/bin/ruff format --check src scripts tests benchmarks
	$(VENV)/bin/snakefmt --check Snakefile workflow/rules
	$(VENV)/bin/snakemake --lint

format: $(STAMP)
	$(VENV)/bin/ruff format src scripts tests benchmarks
	$(VENV)/bin/snakefmt Snakefile workflow/rules

clean:
	rm -rf results logs .snakemake .staging

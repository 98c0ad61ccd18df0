# Quickstart targets: `make run` runs the main job on the embedded default, `make test` the tests.
# Both create ./.venv on first use (CPU build of torch from TORCH) and reuse it afterwards.
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
STAMP := $(VENV)/.installed
CORES ?= all

.PHONY: run test venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q "$(TORCH)"
	$(VENV)/bin/python -m pip install -q -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES)

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

clean:
	rm -rf results logs .snakemake

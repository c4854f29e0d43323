# Two entry points for a fresh machine (see README.md):
#   make run   - install, run the default workflow end to end, print where the report is
#   make test  - install, run the test suite (unit tests + the whole default workflow on tiny configs)
PYTHON ?= python3
VENV ?= .venv
CORES ?= 2
BIN := $(VENV)/bin
STAMP := $(VENV)/.structbench-installed

.PHONY: install run dryrun test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	# CPU build of torch, pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/python -m pip install torch==2.13.0
	$(BIN)/python -m pip install -e ".[cpu,embed,workflow,test]"
	touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)
	@echo "Report: $$(pwd)/results/report/report.md"

dryrun: $(STAMP)
	$(BIN)/snakemake -n

test: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf results logs .snakemake

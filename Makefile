# plybot — `make` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help venv tools up test test-fast bench loadtest chaos lint format lock clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP) ## create or refresh .venv with plybot installed

TOOLS := .tools
DASHBOARD := $(TOOLS)/rq-dashboard/bin/rq-dashboard

$(DASHBOARD):
	@test -x $(TOOLS)/rq-dashboard/bin/python || $(PYTHON) -m venv $(TOOLS)/rq-dashboard
	$(TOOLS)/rq-dashboard/bin/python -m pip install -q 'rq-dashboard==0.9.0' 'rq==3.0.0' six \
	    || echo "make tools: could not install rq-dashboard; its test says so"

tools: $(DASHBOARD) ## operators' tools the tests drive, each in a virtualenv of its own (rq-dashboard)

up: $(STAMP) ## run the whole service (Redis, API on :8000, workers)
	$(BIN)/plybot up

test: $(STAMP) tools ## run the whole test suite (two processes; the serial tests alone after)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not serial"
	$(BIN)/python -m pytest -m serial

test-fast: $(STAMP) ## the suite without slow, Redis, service and browser tests (no Redis needed)
	$(BIN)/python -m pytest -n 2 -m "not slow and not redis and not service and not browser"

bench: $(STAMP) ## all six Connect Four benchmark sets (Test_L1_R3: first 100)
	$(BIN)/plybot bench --all

loadtest: $(STAMP) ## throughput and latency of the service, 1 vs 2 workers
	$(BIN)/plybot loadtest

chaos: $(STAMP) ## faults against a real `plybot up` (Redis killed and full, workers killed and hung)
	$(BIN)/plybot chaos

lint: $(STAMP) ## ruff check, ruff format --check, mypy --strict on engine/, worker/, api/ and bot/
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP) ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

lock: $(STAMP) ## pin the image's dependencies with hashes (requirements.lock) from pyproject.toml
	$(BIN)/python -m pip install -q uv
	{ sed -n '1,2p' requirements.lock; $(BIN)/uv pip compile pyproject.toml --generate-hashes \
	    --python-version 3.11 --universal --no-header --quiet; } > requirements.lock.new
	mv requirements.lock.new requirements.lock

clean: ## remove the venv and caches
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# plybot — `make` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help venv tools up browser-deps test test-fast bench loadtest chaos lint format lock clean

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

# bitbully (AGPL) is a peer the benchmarks measure plybot against: run in its own virtualenv by
# `plybot bench --vs-bitbully`, never imported by plybot.
BITBULLY := $(TOOLS)/bitbully/bin/python

$(BITBULLY):
	@test -x $(BITBULLY) || $(PYTHON) -m venv $(TOOLS)/bitbully
	$(BITBULLY) -m pip install -q 'bitbully==0.0.79' 'bitbully-databases==0.0.2' \
	    || echo "make tools: could not install bitbully; its test says so"

tools: $(DASHBOARD) $(BITBULLY) ## tools the tests drive, each in a virtualenv of its own (rq-dashboard, bitbully)

up: $(STAMP) ## run the whole service (Redis, API on :8000, workers)
	$(BIN)/plybot up

# The browser tests drive Debian's Chromium through chromedriver. Installed with apt-get where
# this user may (root, or sudo without a password); elsewhere it says so and goes on: the browser
# tests then skip, saying why (and fail under CI=true). The one copy of this step: .ci/run uses it.
browser-deps: ## install chromium and chromium-driver for the browser tests, where apt-get may
	@missing=""; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null \
	    || command -v google-chrome >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else echo "make: cannot install$$missing (not root, no sudo): the browser tests will skip"; exit 0; fi; \
	if ! command -v apt-get >/dev/null; then \
	    echo "make: no apt-get to install$$missing: the browser tests will skip"; exit 0; fi; \
	echo "make: installing$$missing for the browser tests"; \
	{ $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
	  && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } \
	    || echo "make: could not install$$missing: the browser tests will skip"

test: $(STAMP) tools browser-deps ## run the whole test suite (two processes; the serial tests alone after)
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

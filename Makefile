# Every target sets up what it needs: a fresh machine only needs Python 3.11+, Node 20 and npm.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: run test bench compat lint format synth deploy destroy clean openapi redrive load

# The virtualenv is rebuilt only when the dependency pins change.
$(STAMP): pyproject.toml constraints.txt client/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]' -e ./client
	@touch $@

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

## run: the whole service locally on an embedded AWS (HTTP API on http://127.0.0.1:8000)
run: $(STAMP)
	$(BIN)/python -m local_stack

## test: lint, then the full test suite (unit, integration, infrastructure, end to end)
test: $(STAMP) lint
	$(BIN)/python -m pytest

## openapi: rewrite docs/openapi.json from the API code (a test fails while it is stale)
openapi: $(STAMP)
	$(BIN)/python -m tests.client.openapi_doc

## bench: rows/s and peak RSS of csv, csv.gz and xlsx exports next to bare writers (a few minutes)
bench: $(STAMP)
	$(BIN)/python -m bench

## compat: LibreOffice (installed with apt-get when missing) reads both XLSX engines' files; cells compared
compat: $(STAMP)
	$(BIN)/python -m bench.compat

## redrive: move dead-lettered task messages back to their lanes (ARGS="--stack exports-dev" on AWS, "--endpoint-url http://127.0.0.1:<port>" for make run; --dry-run, --lane, --max)
redrive: $(STAMP)
	$(BIN)/python scripts/redrive.py $(ARGS)

## load: a bounded local load run on loopback, 60 s (its own stack; ARGS="--url http://127.0.0.1:8000 --token dev-..." for make run)
load: $(STAMP)
	$(BIN)/python scripts/load.py $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## synth: write the CloudFormation template to cdk.out (no AWS account needed)
synth: $(STAMP) node_modules/.package-lock.json
	PATH="$(CURDIR)/$(BIN):$$PATH" npx cdk synth --quiet

## deploy: deploy to the AWS account of your current credentials (see README, "Deploy")
deploy: $(STAMP) node_modules/.package-lock.json
	PATH="$(CURDIR)/$(BIN):$$PATH" npx cdk deploy

destroy: $(STAMP) node_modules/.package-lock.json
	PATH="$(CURDIR)/$(BIN):$$PATH" npx cdk destroy

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .ruff_cache

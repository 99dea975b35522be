# Every target sets up what it needs: a fresh machine only needs Python 3.11+ (with pip), Node 20
# and npm. uv is bootstrapped from the package index into .uv/ (once per UV_VERSION), then builds
# .venv from requirements.lock.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Every package of the virtualenv and the Lambda packages, pinned with its hashes (no index URLs).
LOCK := requirements.lock
UV_VERSION := 0.13.9
UV_HOME := .uv
UV := $(UV_HOME)/$(UV_VERSION)/bin/uv
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# uv: the machine's interpreter, never a downloaded one.
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never

.PHONY: run test check typecheck bench compat lint format synth deploy destroy clean openapi redrive load smoke lock package-sizes console pdf-tools crypto-tools

# uv itself, with the machine's pip, into a folder of its own (kept across `make clean` of .venv).
$(UV):
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-warn-script-location --root-user-action=ignore \
		--target $(UV_HOME)/$(UV_VERSION) uv==$(UV_VERSION)
	@test -x $@

# The virtualenv holds exactly what the lock lists, each wheel checked against its hash, plus our
# two projects (editable, without dependencies: the lock has them); re-synced only when the lock
# or a pyproject changes. A test checks that the lock has every pin of the pyprojects.
$(STAMP): $(UV) pyproject.toml $(LOCK) client/pyproject.toml
	test -x $(BIN)/python || $(UV) venv --quiet $(VENV)
	$(UV) pip sync --quiet --python $(BIN)/python --require-hashes $(LOCK)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --editable . --editable ./client
	@touch $@

## lock: re-resolve requirements.lock after changing a dependency in a pyproject.toml (the
## versions already locked are kept where they still fit)
lock: $(UV)
	$(UV) pip compile --quiet pyproject.toml client/pyproject.toml --extra dev --universal --generate-hashes \
		--python-version 3.11 -o $(LOCK)
	$(UV) pip compile --quiet bench/duckdb-requirements.in --generate-hashes --python-version 3.11 -o $(DUCKDB_LOCK)

# The DuckDB peer of the PostgreSQL → Parquet goal, apart from .venv: its postgres extension
# needs DuckDB 1.4.4 (bench/duckdb-requirements.in says why).
DUCKDB_VENV := .venv-duckdb
DUCKDB_LOCK := bench/duckdb.lock
DUCKDB_STAMP := $(DUCKDB_VENV)/.installed-stamp
$(DUCKDB_STAMP): $(UV) $(DUCKDB_LOCK)
	test -x $(DUCKDB_VENV)/bin/python || $(UV) venv --quiet $(DUCKDB_VENV)
	$(UV) pip sync --quiet --python $(DUCKDB_VENV)/bin/python --require-hashes $(DUCKDB_LOCK)
	@touch $@

node_modules/.package-lock.json: package.json package-lock.json clients/typescript/package.json clients/console/package.json
	npm ci --no-audit --no-fund --loglevel=error

# The real-browser tests drive Debian's Chromium (Playwright's own browser downloads are not used).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

## console: build the TypeScript client and the export console that make run serves at /console/
console: node_modules/.package-lock.json
	npm run --silent build --workspace clients/typescript
	npm run --silent build --workspace clients/console

## run: the whole service locally on an embedded AWS (HTTP API on http://127.0.0.1:8000)
run: $(STAMP) console
	$(BIN)/python -m local_stack --stop-with-parent

## test: lint, then mypy and the infrastructure suite beside the rest of the suite (unit,
## integration, end to end) in TEST_WORKERS processes (some tests wait on servers and queues, so
## more processes than cores)
TEST_WORKERS ?= 3
# The suite starts dozens of Python processes (test workers, local stacks, exportctl): with
# bytecode caching off (PYTHONDONTWRITEBYTECODE set) each compiled every module it imports again.
test: export PYTHONDONTWRITEBYTECODE =
# mypy and the infrastructure suite use one core each: they run while the rest starts, and their
# reports are printed after its own. The infrastructure suite runs in a process of its own, so
# the other test processes do not import the CDK (and start its node kernel) to collect it.
# node_modules and Chromium: the TypeScript client's and the console's tests (tests/e2e/test_web_client.py).
test: $(STAMP) $(DUCKDB_STAMP) lint node_modules/.package-lock.json $(CHROMIUM) pdf-tools crypto-tools
	@types=$$(mktemp); infra=$$(mktemp); \
	$(BIN)/mypy > $$types 2>&1 & types_pid=$$!; \
	$(BIN)/python -m pytest -q tests/infra > $$infra 2>&1 & infra_pid=$$!; \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --ignore=tests/infra; tests_rc=$$?; \
	wait $$infra_pid; infra_rc=$$?; echo "infrastructure suite:"; cat $$infra; \
	wait $$types_pid; types_rc=$$?; echo "mypy:"; cat $$types; rm -f $$types $$infra; \
	exit $$(( tests_rc != 0 || infra_rc != 0 || types_rc != 0 ))

# The PDF tests read files back with poppler's pdftoppm and qpdf: Debian packages, installed
# when missing (as root, like CI).
pdf-tools:
	@command -v pdftoppm >/dev/null && command -v qpdf >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils qpdf; }

# The encryption-at-delivery tests open the files with GnuPG and 7-Zip, as customers do (Debian
# packages, installed when missing, as root like CI).
crypto-tools:
	@command -v gpg >/dev/null && command -v 7z >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnupg p7zip-full; }

## openapi: rewrite docs/openapi.json from the API code (a test fails while it is stale)
openapi: $(STAMP)
	$(BIN)/python -m tests.client.openapi_doc

## bench: our exports and writers against their peers (COPY, DuckDB, orjson, pyarrow, rustpy-xlsxwriter) in one run, each goal MET/MISSED with the load
bench: $(STAMP) $(DUCKDB_STAMP)
	$(BIN)/python -m bench

## compat: LibreOffice (installed with apt-get when missing) reads both XLSX engines' files; cells compared
compat: $(STAMP)
	$(BIN)/python -m bench.compat

## redrive: move dead-lettered task messages back to their lanes (ARGS="--stack exports-dev" on AWS, "--endpoint-url http://127.0.0.1:<port>" for make run; --dry-run, --lane, --max)
redrive: $(STAMP)
	$(BIN)/python scripts/redrive.py $(ARGS)

## load: a bounded local load run on loopback, 60 s (its own stack; ARGS="--url http://127.0.0.1:8000 --token dev-..." for make run; ARGS="--burst 600 --timeout-sec 30" for a burst, "--schedules 200" for a schedule stampede: docs/capacity.md)
load: $(STAMP)
	$(BIN)/python -m scripts.load $(ARGS)

## lint: ruff, and the import contracts of exports/ ([tool.importlinter] in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

## check: the fast loop before a commit (.pre-commit-config.yaml runs it): lint, mypy and the unit
## tests (no process started, no network), in under a minute
check: lint
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 tests/unit

## typecheck: mypy over the service, local mode, the CDK app and the client ([tool.mypy] in pyproject.toml)
typecheck: $(STAMP)
	$(BIN)/mypy

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

## smoke: the README walkthrough against a deployed stack (URL=https://... TOKEN=... [CALLBACK_URL=https://...])
smoke: $(STAMP)
	$(BIN)/python scripts/smoke.py --url "$(URL)" --token "$(TOKEN)" $(if $(CALLBACK_URL),--callback-url "$(CALLBACK_URL)") $(ARGS)

## package-sizes: build the Lambda packages, report their sizes (and botocore's share), fail if one is within 25% of the 250 MB limit
package-sizes: $(STAMP)
	$(BIN)/python scripts/package_sizes.py $(ARGS)

clean:
	rm -rf $(VENV) $(DUCKDB_VENV) $(UV_HOME) node_modules cdk.out .pytest_cache .ruff_cache

# One command checks everything: `make test` runs lint, types and the whole test suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LOCKS := requirements.lock requirements-dev.lock
# Every install takes the locked versions, each file checked against the lock's hashes (.ci/lock
# writes the locks with pip-tools): a new upstream release, or a file swapped on an index, changes
# nothing here. requirements-dev.lock is the whole set the checks run (the runtime lock's versions,
# the dev tools, pip and setuptools); pip resolves each lock's dependencies, so a lock that misses
# one (or an extra) fails here rather than in the image. Every pin has a wheel, so nothing is
# built from source but the pool itself, without build isolation, with the locked setuptools.
HASHED_PIP = $(1)/pip install --quiet --require-hashes --only-binary :all:

.PHONY: install scan-install services test lint types scan pytest pytest-serial bench demo lock upstream-check soak soak-model soak-money

$(BIN)/aipool: pyproject.toml $(LOCKS)
	$(PYTHON) -m venv $(VENV)
	$(call HASHED_PIP,$(BIN)) -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-index --no-deps --no-build-isolation -e .
	$(BIN)/pip check
	touch $(BIN)/aipool

install: $(BIN)/aipool

# The scanners in a venv of their own (checkov pins packaging and idna apart from the pool),
# from their own hashed lock.
SCAN_VENV := .venv-scan
$(SCAN_VENV)/bin/checkov: requirements-scan.lock
	$(PYTHON) -m venv $(SCAN_VENV)
	$(call HASHED_PIP,$(SCAN_VENV)/bin) -r requirements-scan.lock
	$(SCAN_VENV)/bin/pip check
	touch $(SCAN_VENV)/bin/checkov

scan-install: $(SCAN_VENV)/bin/checkov

# The project's install, the scanners' venv and the services (apt, on a fresh machine) run at once;
# the scanners' venv is about 22 s of pip's CPU beside the project's 32 s. Then the checks run
# beside the test shards (each check's output printed whole when it ends): the shards wait on
# workers more than they use the two cores, and lint, types and scan took about 2 min before them.
test:
	$(MAKE) --no-print-directory -j3 install scan-install services
	$(MAKE) --no-print-directory -j4 --output-sync=target lint types scan pytest

# Redis, PostgreSQL, RabbitMQ and promtool, each started or installed only when missing.
services:
	.ci/services

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types:
	$(BIN)/mypy

# checkov on the rendered overlays and bandit on the packages, against the reviewed baseline
# (deploy/scan-baseline.toml): a new finding, or a baseline entry that covers nothing, fails.
scan: install scan-install
	$(BIN)/python -m tests.deploy.scan --scanners $(SCAN_VENV)/bin

# The suite in four shards at once, each on its own Redis server and databases (.ci/pytest-shards):
# most of it waits on real workers, Redis and PostgreSQL, and one process took 25 min here.
pytest: services
	PYTEST=$(BIN)/pytest .ci/pytest-shards

# The suite in one process (slower; its output reads in order).
pytest-serial: services
	$(BIN)/pytest

# The long tests at the sizes that give confidence before a release (tests/support/sizes.py):
# five kills in a row, a 240 s soak, a minute's database outage, a million ledger rows, ...
# A soak's length is its size: the suite's 300 s per test (pyproject.toml) would stop it part way
# (the model test's 5,000 interleavings take about 10 min here), so each soak allows two hours.
SOAK_TIMEOUT := --timeout=7200

soak: install services
	AIPOOL_TEST_SOAK=1 $(BIN)/pytest -p no:cacheprovider $(SOAK_TIMEOUT) tests/reliability \
		tests/aipool/attempt/test_model.py tests/aipool/ledger/test_spend.py

# The attempt lifecycle's model test at length: 5,000 random interleavings of 60 steps (make test
# runs 80 of 40).
soak-model: install services
	AIPOOL_TEST_MODEL_EXAMPLES=5000 AIPOOL_TEST_MODEL_STEPS=60 $(BIN)/pytest -p no:cacheprovider $(SOAK_TIMEOUT) \
		tests/aipool/attempt/test_model.py tests/aipool/attempt/test_model_failover.py

# The money state machine (tests/tasks/test_maintenance_stateful.py) at length: 400 interleavings
# of 60 steps (make test runs 8 of 30).
soak-money: install services
	AIPOOL_TEST_MONEY_EXAMPLES=400 AIPOOL_TEST_MONEY_STEPS=60 $(BIN)/pytest -p no:cacheprovider -s $(SOAK_TIMEOUT) \
		tests/tasks/test_maintenance_stateful.py

bench: install
	bench/run --write

demo: install
	$(BIN)/aipool demo

# Refresh the locks from the newest releases the inputs allow, with pip-tools (then `make test`);
# `.ci/lock` alone adds what pyproject.toml newly asks for and keeps every other pin.
lock:
	.ci/lock --upgrade

# Run the suite against the newest releases, locks untouched; names the releases that differ.
upstream-check: services
	.ci/upstream

# One command checks everything: `make test` runs lint, types and the whole test suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LOCKS := requirements.lock requirements-dev.lock
# Every install takes the locked versions (tests/deploy/locks.py): a new upstream release changes
# nothing here until `make lock` is run on purpose. The project is built without build isolation
# so that its build, too, uses the locked setuptools rather than the newest one.
LOCKED_PIP = $(1)/pip install --quiet -c requirements.lock -c requirements-dev.lock

.PHONY: install services test lint types pytest pytest-serial bench demo lock upstream-check soak soak-model soak-money

$(BIN)/aipool: pyproject.toml $(LOCKS)
	$(PYTHON) -m venv $(VENV)
	$(call LOCKED_PIP,$(BIN)) pip setuptools
	$(call LOCKED_PIP,$(BIN)) --no-build-isolation -e ".[dev]"
	touch $(BIN)/aipool

install: $(BIN)/aipool

# The project's install (pip) and the services' (apt, on a fresh machine) overlap: both wait on
# the network more than on the CPU.
test:
	$(MAKE) --no-print-directory -j2 install services
	$(MAKE) --no-print-directory lint types pytest

# Redis, PostgreSQL, RabbitMQ and promtool, each started or installed only when missing.
services:
	.ci/services

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types:
	$(BIN)/mypy

# The suite in three shards at once, each on its own Redis server and databases (.ci/pytest-shards):
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
		tests/aipool/attempt/test_model.py

# The money state machine (tests/tasks/test_maintenance_stateful.py) at length: 400 interleavings
# of 60 steps (make test runs 8 of 30).
soak-money: install services
	AIPOOL_TEST_MONEY_EXAMPLES=400 AIPOOL_TEST_MONEY_STEPS=60 $(BIN)/pytest -p no:cacheprovider -s $(SOAK_TIMEOUT) \
		tests/tasks/test_maintenance_stateful.py

bench: install
	bench/run --write

demo: install
	$(BIN)/aipool demo

# Refresh both locks from the newest releases pyproject.toml allows (then `make test`).
lock:
	.ci/upstream --write-locks

# Run the suite against the newest releases, locks untouched; names the releases that differ.
upstream-check: services
	.ci/upstream

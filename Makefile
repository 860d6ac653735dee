# One command checks everything: `make test` runs lint, types and the whole test suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install services test lint types pytest bench demo

$(BIN)/aipool: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(BIN)/aipool

install: $(BIN)/aipool

test: install lint types pytest

# Redis, PostgreSQL, RabbitMQ and promtool, each started or installed only when missing.
services:
	.ci/services

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types:
	$(BIN)/mypy

pytest: services
	$(BIN)/pytest

bench: install
	bench/run

demo: install
	$(BIN)/aipool demo

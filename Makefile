# Targets the README and .ci/run name. `make test` creates .venv when it is missing.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,all

.PHONY: install demo test lint format typecheck unit bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"

demo: $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	$(BIN)/kompakt demo

lint:
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

format:
	$(BIN)/ruff format src tests benchmarks examples
	$(BIN)/ruff check --fix src tests benchmarks examples

typecheck:
	$(BIN)/mypy

unit:
	$(BIN)/pytest -q -n 2 --timeout 600 --cov=kompakt --cov-report=term --cov-fail-under=90

test: install lint typecheck unit

bench:
	$(BIN)/python benchmarks/bench_index.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# Two entry points: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Test processes: the suite is mostly single-threaded XLA compilation, so CI's 2 cores run two
# test files at a time (a file stays in one process: its module fixtures are built once).
TEST_WORKERS ?= 2

.PHONY: demo test install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

install-dev: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'

demo: install
	$(BIN)/robocal demo

test: install-dev
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

clean:
	rm -rf $(VENV) out .pytest_cache

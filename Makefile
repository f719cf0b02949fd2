# The two set-up commands: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit proto e2e clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/corral demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

test: lint typecheck
	$(PY) -m pytest -q $(PYTEST_ARGS)

proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -Iproto --python_out=. --pyi_out=. --grpc_python_out=. proto/corral/v1/*.proto

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

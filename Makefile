# The two set-up commands: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit proto e2e clean fuzz chaos

$(STAMP): pyproject.toml scripts/install_pymesos.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) scripts/install_pymesos.py
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/corral demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Both halves run in PYTEST_WORKERS processes (pytest-xdist): first the unit tests (in-process,
# mostly CPU-bound), then the rest (real clusters, containers, the fuzzed master). Those wait on
# conditions with bounded timeouts, never on wall-clock luck, and each LocalCluster agent offers
# a port range of its own (frameworks/sdk/testing/port_blocks.py), so two at once do not meet.
# Exit status 5 (no test selected, e.g. by a -k in PYTEST_ARGS) fails neither half.
PYTEST_WORKERS ?= 2

# Corral's sources are byte-compiled first: where PYTHONDONTWRITEBYTECODE is set (it is on the
# machines CI runs on) nothing else writes the .pyc files, and every master, agent and CLI
# process the tests start would compile them again. Then the allocator's numba loops are
# compiled into their on-disk cache once, before two workers would each compile them.
test: lint typecheck
	$(PY) -m compileall -q -j 0 corral tests
	$(PY) -c "from corral.master.allocator import DrfAllocator; DrfAllocator()"
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) tests/unit $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --ignore=tests/unit $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The master fuzz suite's large run (a small one is part of `make test`): prints calls per status.
fuzz: $(STAMP)
	CORRAL_FUZZ_CALLS=$${CORRAL_FUZZ_CALLS:-10000} $(PY) -m pytest -q -s -p no:cacheprovider tests/fuzz

# Faults under load on real clusters (tests/chaos): kill -9 the master and agents, pause an
# agent past its timeout, lose an agent while the master is down; a checker asserts that no
# task is lost, run twice or ended twice, and that no resource is allocated twice.
chaos: $(STAMP)
	$(PY) -m compileall -q -j 0 corral tests
	CORRAL_CHAOS=1 $(PY) -m pytest -q tests/chaos $(PYTEST_ARGS)

proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -Iproto --python_out=. --pyi_out=. --grpc_python_out=. proto/corral/v1/*.proto

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# agentmem: `make demo` shows the main job, `make test` runs the suite (installing pytest and
# pytest-xdist if needed).
PYTHON ?= python3
SHARED ?= ../shared

RUFF_VERSION ?= 0.17.6

.PHONY: demo test test-quick lint coverage bench bench-quick clean

demo:
	$(PYTHON) agentmem.py demo

# pytest-xdist spreads the suite over the machine's cores when it can be had (else one process)
XDIST = $$($(PYTHON) -c "import xdist" 2>/dev/null && echo "-n auto")

test:
	@$(PYTHON) -c "import pytest" 2>/dev/null || $(PYTHON) -m pip install --quiet --disable-pip-version-check pytest
	@$(PYTHON) -c "import xdist" 2>/dev/null || $(PYTHON) -m pip install --quiet --disable-pip-version-check pytest-xdist || true
	$(PYTHON) -m pytest $(XDIST) -rs --doctest-modules agentmem.py tests

test-quick:
	$(PYTHON) -m pytest $(XDIST) -rs --doctest-modules -m "not slow" agentmem.py tests

lint:
	@$(PYTHON) -m ruff --version 2>/dev/null | grep -q "$(RUFF_VERSION)" || $(PYTHON) -m pip install --quiet --disable-pip-version-check "ruff==$(RUFF_VERSION)"
	$(PYTHON) -m ruff check agentmem.py tests bench
	$(PYTHON) -m ruff format --check agentmem.py

coverage:
	@$(PYTHON) -c "import coverage" 2>/dev/null || $(PYTHON) -m pip install --quiet --disable-pip-version-check coverage
	$(PYTHON) bench/coverage_run.py

bench:
	@$(PYTHON) -c "import coverage" 2>/dev/null || $(PYTHON) -m pip install --quiet --disable-pip-version-check coverage
	$(PYTHON) bench/run.py --shared $(SHARED) --write docs/benchmarks.md --coverage

bench-quick:
	$(PYTHON) bench/run.py --shared $(SHARED) --quick

clean:
	rm -rf .pytest_cache tests/__pycache__ __pycache__ build *.egg-info .coverage .coverage.* htmlcov

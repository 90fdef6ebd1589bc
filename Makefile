# agentmem: `make demo` shows the main job, `make test` runs the suite (installing pytest if needed).
PYTHON ?= python3
SHARED ?= ../shared

.PHONY: demo test doctest bench bench-quick clean

demo:
	$(PYTHON) agentmem.py demo

test:
	@$(PYTHON) -c "import pytest" 2>/dev/null || $(PYTHON) -m pip install --quiet --disable-pip-version-check pytest
	$(PYTHON) -m pytest tests

bench:
	$(PYTHON) bench/run.py --shared $(SHARED) --write docs/benchmarks.md

bench-quick:
	$(PYTHON) bench/run.py --shared $(SHARED) --quick

clean:
	rm -rf .pytest_cache tests/__pycache__ __pycache__ build *.egg-info

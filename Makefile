# simtgpu: every target sets itself up first (scripts/setup.sh is idempotent and fast).
VENV   := .venv
PY     := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
JOBS   ?= auto
N      ?= 2000
SEED   ?= 1

.PHONY: setup demo test bench regress lint docs clean

setup:
	@bash scripts/setup.sh

demo: setup
	@$(PY) -m simtgpu.cli.demo

test: setup
	@$(PY) -m pytest -q -n $(JOBS) tests

bench: setup
	@$(PY) -m simtgpu.cli.bench

regress: setup
	@$(PY) -m pytest -q -n $(JOBS) tests/rtl -m regress --regress-n=$(N) --regress-seed=$(SEED)

lint: setup
	@$(PY) -m ruff check .

docs: setup
	@$(VENV)/bin/simtgpu isa --markdown > docs/isa.md

clean:
	rm -rf build .pytest_cache

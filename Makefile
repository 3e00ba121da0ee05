# rdma_dev: an RDMA device model with a loopback bypass, simulated under cocotb.
#   make sim       the demonstration (Icarus), prints a report and the waveform path
#   make test      the regression CI runs, in parallel (SIM=icarus|verilator, SHARD=i/N, SEED=n)
#   make regress   long random runs with many seeds, on Icarus and Verilator
#   make coverage  the regression with functional coverage, merged into one report
#   make lint      verilator --lint-only -Wall on the RTL
#   make synth     Yosys synthesis of the device: UltraScale+ at 256 and 512 bits, ECP5 at 64,
#                  per block LUTs, flip-flops, RAMs, DSPs, logic levels: a table + sim/out/synth.json
#   make pnr       nextpnr place and route of the ECP5 netlist on an LFE5UM-85F: Fmax and
#                  utilisation, a table + sim/out/pnr.json
#   make fuzz      hostile packets and random work requests beside live traffic, invariants
#                  checked as it runs, port to port and between two devices side by side
#                  (FUZZ_PACKETS, FUZZ_WRS, SEED, FUZZ_KINDS, FUZZ_BETWEEN=both|port|fabric,
#                  RDMA_LINK=ib|eth|both; Verilator unless SIM is given): a table +
#                  sim/out/fuzz.json
#   make formal    every SymbiYosys proof, and every mutant each must fail on: a table +
#                  sim/out/formal.json (make test runs the proofs that take under a minute)
#   make waves     open the last waveform in GTKWave
#   make bench     clock-cycle benchmarks and simulation speed, table + sim/out/bench.json
#   make rdma-core-tests  rdma-core's own test suite (Debian python3-pyverbs) against the device,
#                  ports on InfiniBand and on Ethernet (RoCE v2; RDMA_LINK=ib or eth: one of
#                  them), bypass on and off: a table + sim/out/rdma-core-tests.json
#   make durations record every test's duration in .test_durations (SHARD and ordering use it)
#   make clean     remove build and output folders
# Set-up is automatic: a .venv from requirements.txt, and Icarus (and tshark, to check our
# pcaps) from Debian when missing.

SIM ?= icarus
export SIM
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PNR_STAMP := $(VENV)/.installed-pnr
JOBS ?= auto
# SHARD=i/N runs the i-th of N shards balanced by .test_durations (pytest-split)
SHARD ?=
SHARD_ARGS := $(if $(SHARD),--splits $(word 2,$(subst /, ,$(SHARD))) --group $(word 1,$(subst /, ,$(SHARD))))
REGRESS_SEEDS ?= 4
PYTEST := $(PY) -m pytest -n $(JOBS) --dist worksteal
# the RTL: the top and the include files in rtl/, the blocks in one folder per concern
# (docs/architecture.md)
RTL_SOURCES := $(wildcard rtl/*.v rtl/*/*.v)

.PHONY: all sim test regress coverage durations lint synth pnr formal fuzz waves bench rdma-core-tests clean deps simulator

all: test

deps: $(STAMP) simulator

$(STAMP): requirements.txt
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -c 'import ensurepip' 2>/dev/null || \
	  sh sim/apt-install.sh python3-venv
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

# nextpnr only for make pnr: it is large and nothing else needs it
$(PNR_STAMP): requirements-pnr.txt $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-pnr.txt
	@touch $@

simulator:
	@command -v tshark >/dev/null 2>&1 || sh sim/apt-install.sh tshark || \
	  echo "tshark is missing: the test that Wireshark decodes our pcaps will be skipped"
	@if [ "$(SIM)" = icarus ]; then \
	  command -v iverilog >/dev/null 2>&1 || sh sim/apt-install.sh iverilog; \
	fi
	@if [ "$(SIM)" = verilator ]; then \
	  command -v g++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1 || sh sim/apt-install.sh g++ make; \
	fi

sim: $(STAMP)
	@$(MAKE) --no-print-directory simulator SIM=icarus
	SIM=icarus $(PY) tools/demo.py

test: deps
	@start=$$(date +%s); $(PYTEST) $(SHARD_ARGS) tests; status=$$?; \
	  echo "make test$(if $(SHARD), SHARD=$(SHARD)) on $(SIM): $$(( $$(date +%s) - start )) s wall"; \
	  exit $$status

regress: $(STAMP)
	@for sim in icarus verilator; do \
	  $(MAKE) --no-print-directory simulator SIM=$$sim && \
	  SIM=$$sim REGRESS=1 RANDOM_RUNS=$(REGRESS_SEEDS) $(PYTEST) tests || exit 1; \
	done

coverage: deps
	rm -rf sim/out/coverage
	FUNCTIONAL_COVERAGE=1 $(PYTEST) tests
	$(PY) -m tb.coverage sim/out/coverage

durations: deps
	$(PYTEST) --store-durations --clean-durations tests

lint:
	@command -v verilator >/dev/null 2>&1 || sh sim/apt-install.sh verilator
	verilator --lint-only -Wall -Irtl --top-module rdma_dev $(RTL_SOURCES)

synth: $(STAMP)
	$(PY) -m tools.synth

pnr: $(PNR_STAMP)
	$(PY) -m tools.pnr

formal: $(STAMP)
	$(PY) -m tb.formal --mutants

# Verilator unless SIM was given on the command line or in the environment
FUZZ_SIM := $(if $(filter command line environment,$(origin SIM)),$(SIM),verilator)
fuzz: $(STAMP)
	@$(MAKE) --no-print-directory simulator SIM=$(FUZZ_SIM)
	SIM=$(FUZZ_SIM) $(PY) -m tools.fuzz

waves:
	@command -v gtkwave >/dev/null 2>&1 || sh sim/apt-install.sh gtkwave
	@test -f sim/out/last_waves || { echo "no waveform yet: run 'make sim' or a test with WAVES=1"; exit 1; }
	gtkwave "$$(cat sim/out/last_waves)" sim/rdma_dev.gtkw

bench: deps
	$(PY) tools/bench.py

rdma-core-tests: deps
	@test -d /usr/share/doc/rdma-core/tests || sh sim/apt-install.sh python3-pyverbs
	$(PY) tools/rdma_core_tests.py

clean:
	rm -rf sim/build sim/out .pytest_cache

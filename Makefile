# Build, test and demo targets. Needs cargo, python3 (3.10 or newer) and pip access to PyPI.
#   make setup      .venv with the package installed in development mode (extension in release)
#   make demo       run examples/dumbbell-newreno.toml into out/demo
#   make test       Rust tests, then the Python tests (without the slow ones)
#   make test-slow  the slow Python tests only
#   make test-kernel the kernel tests (root, network namespaces, TUN, tracefs); says why when it skips
#   make kernel-accuracy  the link emulator's accuracy on this machine (root; about 3 minutes)
#   make kernel-linux  the simulator's Linux stack beside Linux on 29 paths, 3 runs each, and its table (root; ~36 min)
#   make kernel-bbr    BBR beside Linux's bbr on 16 paths, 3 runs each, and its table (root; ~25 min)
#   make kernel-bbr3   BBRv3's eBPF port in the kernel beside its model on 8 paths (root; ~10 min)
#   make kernel-paths  variable-rate, trace-driven, bursty-loss and reordering paths in both worlds (root; ~10 min)
#   make kernel-aqm    CoDel, FQ-CoDel and PIE bottlenecks in both worlds on 12 paths (root; ~12 min)
#   make validate-aqm  the AQMs against ns-3's, packet by packet on replayed arrivals (docs/aqm.md)
#   make validate-aqm-scenarios  12 TCP scenarios through CoDel, FQ-CoDel and PIE, startlab and
#                   ns-3 side by side (docs/aqm.md; about 3 minutes)
#   make bpf        the eBPF controllers' object alone, into $(BPF_OBJECT) (out/bpf/startlab.bpf.o);
#                   STARTLAB_BPF_OBJECT=that-file makes startlab use it without a rebuild
#   make lint       rustfmt, clippy (warnings are errors), ruff and mypy
#   make wheel      build the wheel and sdist, install the wheel where no compiler is and run from it
#   make bench      the Rust benchmarks
#   make bench-compare BASE=REV  this tree's speed against commit REV, side by side (ratios)
#   make reproduce  the full reproduction of the papers into out/reproduce (about 13 min on 2 cores)
#   make clean      remove build outputs, .venv and out/

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Rebuilt (with pip) only when the package metadata changes; otherwise setup just rebuilds the
# extension, which cargo does incrementally.
INSTALLED := $(VENV)/.installed

# Build against the venv's interpreter everywhere, so that cargo and maturin share one
# configuration of pyo3 and don't rebuild each other's artifacts.
export VIRTUAL_ENV := $(abspath $(VENV))
export PYO3_PYTHON := $(abspath $(BIN)/python)
# maturin sets this for its builds; set it the same way for cargo's (evaluated once .venv exists).
export PYO3_ENVIRONMENT_SIGNATURE = $(shell test -x $(BIN)/python && $(BIN)/python -c \
	'import sys; print(f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}-{64 if sys.maxsize > 2**32 else 32}bit")')

.PHONY: help setup demo test test-slow lint bench clean bpf

BPF_OBJECT ?= out/bpf/startlab.bpf.o

bpf:
	mkdir -p $(dir $(BPF_OBJECT))
	sh crates/startlab-bpf/compile.sh $(BPF_OBJECT)
	@echo "built $(BPF_OBJECT)"


help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

# System packages the build needs: libelf and zlib headers for libbpf (the kernel world loads
# its eBPF controllers with it), clang and libbpf's headers to compile those controllers.
# Installed with apt-get when missing and run as root; otherwise named.
SYSTEM_PACKAGES := libelf-dev zlib1g-dev pkg-config clang libbpf-dev
SYSTEM_STAMP := $(VENV)/.system-packages

$(SYSTEM_STAMP):
	@if command -v dpkg >/dev/null; then \
		missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done | xargs); \
		if [ -n "$$missing" ]; then \
			if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
				echo "installing $$missing"; \
				apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
			else \
				echo "missing system packages: $$missing (install them: sudo apt-get install $$missing)"; exit 1; \
			fi; \
		fi; \
	fi
	@mkdir -p $(VENV) && touch $@

$(BIN)/maturin: | $(SYSTEM_STAMP)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet 'maturin>=1.5,<2'

# The kernel world (feature `kernel`: libbpf, TUN, namespaces) is built on Linux only; elsewhere
# the package is the simulator, the Python API, sweeps and the reproduction.
KERNEL_FEATURES := $(if $(filter Linux,$(shell uname -s)),--features kernel,)

$(INSTALLED): pyproject.toml | $(BIN)/maturin
	$(BIN)/maturin develop --release --extras dev $(KERNEL_FEATURES)
	touch $@

setup: $(INSTALLED)
	$(BIN)/maturin develop --release --skip-install --quiet $(KERNEL_FEATURES)

demo: setup
	$(BIN)/startlab run examples/dumbbell-newreno.toml -o out/demo --force
	@for plot in cwnd queue throughput; do echo "plot: $(CURDIR)/out/demo/$$plot.png"; done

test: setup
	cargo test --workspace
	$(BIN)/python -m pytest -q -m "not slow and not kernel"

test-slow: setup
	$(BIN)/python -m pytest -q -m "slow and not kernel"

.PHONY: test-kernel
test-kernel: setup
	@if [ "$$(id -u)" != 0 ]; then echo "kernel tests SKIPPED: they need root (network namespaces, TUN devices, tracefs)"; \
	elif ! command -v ip >/dev/null; then echo "kernel tests SKIPPED: iproute2 (ip) is not installed"; \
	elif [ ! -c /dev/net/tun ]; then echo "kernel tests SKIPPED: this kernel has no TUN devices (/dev/net/tun)"; \
	elif ! ip netns add startlab-probe-$$$$ 2>/dev/null; then echo "kernel tests SKIPPED: this machine does not allow network namespaces"; \
	else ip netns del startlab-probe-$$$$; \
		cargo test -p startlab-kernel --test 'kernel_*' -- --ignored && \
		$(BIN)/python -m pytest -q -m kernel; fi

.PHONY: kernel-linux
kernel-linux: setup
	rm -rf out/kernel-linux
	$(BIN)/startlab sweep examples/sweeps/kernel-linux.toml -o out/kernel-linux
	$(BIN)/python -m startlab.validation out/kernel-linux --describe examples/sweeps/kernel-linux.toml

.PHONY: kernel-bbr
kernel-bbr: setup
	rm -rf out/kernel-bbr
	$(BIN)/startlab sweep examples/sweeps/kernel-bbr.toml -o out/kernel-bbr
	$(BIN)/python -m startlab.validation out/kernel-bbr --targets bbr --describe examples/sweeps/kernel-bbr.toml

.PHONY: kernel-bbr3
kernel-bbr3: setup
	rm -rf out/kernel-bbr3
	$(BIN)/startlab sweep examples/sweeps/kernel-bbr3.toml -o out/kernel-bbr3
	$(BIN)/python -m startlab.validation out/kernel-bbr3 --targets bbr --describe examples/sweeps/kernel-bbr3.toml

.PHONY: kernel-paths
kernel-paths: setup
	rm -rf out/kernel-paths
	$(BIN)/startlab sweep examples/sweeps/kernel-paths.toml -o out/kernel-paths
	$(BIN)/python -m startlab.validation out/kernel-paths --describe examples/sweeps/kernel-paths.toml

.PHONY: kernel-aqm
kernel-aqm: setup
	rm -rf out/kernel-aqm
	$(BIN)/startlab sweep examples/sweeps/kernel-aqm.toml -o out/kernel-aqm
	$(BIN)/python -m startlab.validation out/kernel-aqm --targets aqm --describe examples/sweeps/kernel-aqm.toml

.PHONY: kernel-accuracy
kernel-accuracy: setup
	$(BIN)/startlab kernel accuracy -o out/kernel-accuracy.json

lint: setup
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --features startlab-py/kernel -- -D warnings
	$(BIN)/ruff check python tests/python bench reproduce
	$(BIN)/ruff format --check python tests/python bench reproduce
	$(BIN)/mypy

# The wheel and sdist as users install them (maturin, abi3, no kernel world), checked in a fresh
# environment without a compiler: .ci/wheel.
.PHONY: wheel
wheel: setup
	bash .ci/wheel

bench:
	cargo run --release -p startlab-bench

BASE ?= HEAD~1
.PHONY: bench-compare
bench-compare:
	$(PYTHON) bench/compare_revs.py --base $(BASE) --reps $(or $(REPS),5)

clean:
	rm -rf target $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis
	rm -f python/startlab/_core*.so python/startlab/_core*.pyd
	find python tests -name __pycache__ -type d -prune -exec rm -rf {} +

# ---- ns-3 comparison (bench/ns3/, docs/performance.md) -------------------------------------
#   make bench-ns3  startlab vs ns-3 on the same scenarios, alternating (REPS=3, NS3_SCENARIOS=a,b,c,d)
NS3_VENV := bench/ns3/.venv
REPS ?= 3
NS3_SCENARIOS ?= a,b,c,d
STARTLAB_BENCH = $(or $(CARGO_TARGET_DIR),target)/release/startlab-bench

$(NS3_VENV)/.installed:
	$(PYTHON) -m venv $(NS3_VENV)
	$(NS3_VENV)/bin/python -m pip install --quiet 'ns3==3.44.post0' 'tomli; python_version < "3.11"'
	touch $@

.PHONY: bench-ns3
bench-ns3: $(NS3_VENV)/.installed
	cargo build --release -p startlab-bench
	$(NS3_VENV)/bin/python bench/ns3/compare.py --startlab $(STARTLAB_BENCH) --reps $(REPS) \
		--scenarios $(NS3_SCENARIOS) --json $(NS3_VENV)/last-run.json

.PHONY: validate-aqm
validate-aqm: $(NS3_VENV)/.installed
	cargo build --release -p startlab-bench
	$(NS3_VENV)/bin/python bench/ns3/aqm_replay.py compare --startlab $(STARTLAB_BENCH) --json $(NS3_VENV)/aqm-replay.json

.PHONY: validate-aqm-scenarios
validate-aqm-scenarios: setup $(NS3_VENV)/.installed
	$(NS3_VENV)/bin/python bench/ns3/aqm_scenarios.py compare --startlab $(BIN)/startlab \
		--json $(NS3_VENV)/aqm-scenarios.json

# ---- sweep throughput (bench/sweep_bench.py, docs/sweeps.md) --------------------------------
#   make bench-sweep  200 short runs on 1 and 2 local workers and on a local 2-worker Dask cluster
.PHONY: bench-sweep
bench-sweep: setup
	$(BIN)/python bench/sweep_bench.py

.PHONY: reproduce
reproduce: setup
	$(BIN)/startlab reproduce -o out/reproduce
	@echo "report: $(CURDIR)/out/reproduce/report/index.html"

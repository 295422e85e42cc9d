# xgate: two set-up commands for a newcomer (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
NATIVE := $(VENV)/.native
# the Rust judging core (native/): rebuilt when its sources change; cargo's target directory is kept outside
# the checkout, so a fresh clone on the same machine compiles only what changed
NATIVE_SOURCES := $(wildcard native/src/*.rs) native/Cargo.toml native/Cargo.lock native/pyproject.toml \
                  $(wildcard native/xgate_core/*)
export CARGO_TARGET_DIR ?= $(HOME)/.cache/xgate/cargo-target
# Python caches bytecode while the demo and the tests run, whatever the shell says: the install writes none up
# front (--no-compile below), and without the cache every process the tests start (gateways, CLIs, Spark's
# Python workers) compiled the project and its libraries from source again: `import gateway.cli` 2.5 s of CPU
# instead of 1.3
CACHED := env -u PYTHONDONTWRITEBYTECODE

BROKERS := kafka mosquitto rabbitmq nats

.PHONY: demo test lint bench soak fault-run clean install brokers brokers-stop browser

# --no-compile: bytecode is written as modules are first imported, not for every file of every wheel up front
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[dev]'
	touch $(STAMP)

# pip builds it with maturin (its build backend, native/pyproject.toml) in release mode
$(NATIVE): $(STAMP) $(NATIVE_SOURCES)
	@command -v cargo >/dev/null || { echo "make: the native core needs a Rust toolchain (cargo): see README, Set up"; exit 2; }
	$(PY) -m pip install --quiet --no-compile ./native
	touch $(NATIVE)

install: $(STAMP) $(NATIVE)

# The gateway on config/demo between local brokers (started here when not running, stopped again on the way
# out), with sample traffic and a live summary until Ctrl-C. DEMO_ARGS="--duration 20" stops by itself.
DEMO_ARGS ?=
demo: $(STAMP) $(NATIVE)
	$(VENV)/bin/xgate lint config/demo
	$(CACHED) $(PY) -m gateway.testing.demo --config config/demo $(DEMO_ARGS)

# the core's own Rust unit tests first (linked against libpython: the extension-module feature off), then every
# test in one session on three workers: a broker test's file on one worker, Spark's tests together on one, each
# other test wherever a worker is free, the longest groups first (tests/conftest.py says why)
test: $(STAMP) $(NATIVE) brokers browser
	cd native && cargo test --release --no-default-features --quiet
	$(CACHED) $(PY) -m pytest -n 3 --dist loadgroup --no-loadscope-reorder

# start (or reuse) every broker on 127.0.0.1; installs a missing one
brokers: $(STAMP)
	@for b in $(BROKERS); do bash deploy/brokers/$$b.sh start || exit 1; done

brokers-stop:
	@for b in $(BROKERS); do bash deploy/brokers/$$b.sh stop; done

# Debian's chromium and chromedriver for the console's browser tests (installed when missing)
browser:
	@bash deploy/browser/chromium.sh install

# every benchmark (bench/__main__.py): hot path, memory, the Spark runner; ratios measured in one run
bench: $(STAMP) $(NATIVE) brokers
	$(PY) -m bench

# 30 minutes of `xgate run` at half its max rate with a fault every 5 minutes, on private NATS servers it
# starts and stops itself (bench/soak.py); not part of `make bench`. Shorter: $(PY) -m bench.soak --minutes 4
soak: $(STAMP) $(NATIVE)
	$(PY) -m bench.soak

# issue 17's acceptance: the demo's routes under load with oversized messages, broken documents and a cut
# destination, every message accounted for (bench/fault_run.py); exit 0 only when every criterion holds
fault-run: $(STAMP) $(NATIVE) brokers
	$(PY) -m bench.fault_run --minutes 2

clean:
	rm -rf $(VENV) build .pytest_cache

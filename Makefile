# xgate: two set-up commands for a newcomer (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

BROKERS := tansu mosquitto rabbitmq nats

.PHONY: demo test lint bench clean install brokers brokers-stop

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The gateway on config/demo between local brokers, with sample traffic and a live summary;
# then the same traffic judged offline by `xgate check`, for comparison.
demo: $(STAMP) brokers
	@mkdir -p build
	$(VENV)/bin/xgate lint config/demo
	$(PY) -m gateway.testing.demo --config config/demo --count 5000 --seed 7
	$(PY) -m gateway.testing.traffic --count 5000 --seed 7 > build/demo-traffic.jsonl
	$(VENV)/bin/xgate check --registry config/demo --format table build/demo-traffic.jsonl || test $$? -eq 1
	@echo "one verdict per message: $(VENV)/bin/xgate check --registry config/demo build/demo-traffic.jsonl"
	@echo "run it yourself:         $(VENV)/bin/xgate run --config config/demo --summary 2"

test: $(STAMP) brokers
	$(PY) -m pytest

# start (or reuse) every broker on 127.0.0.1; installs a missing one
brokers: $(STAMP)
	@for b in $(BROKERS); do bash deploy/brokers/$$b.sh start || exit 1; done

brokers-stop:
	@for b in $(BROKERS); do bash deploy/brokers/$$b.sh stop; done

# every benchmark (bench/__main__.py): hot path, memory, the Spark runner; ratios measured in one run
bench: $(STAMP) brokers
	$(PY) -m bench

clean:
	rm -rf $(VENV) build .pytest_cache

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

# Until the service lands, the demo judges bundled sample traffic offline and prints the live summary.
demo: $(STAMP)
	@mkdir -p build
	$(VENV)/bin/xgate lint config/
	$(PY) -m gateway.testing.traffic --count 5000 --seed 7 > build/demo-traffic.jsonl
	$(VENV)/bin/xgate check --registry config/demo --format table build/demo-traffic.jsonl || test $$? -eq 1
	@echo "one verdict per message: $(VENV)/bin/xgate check --registry config/demo build/demo-traffic.jsonl"
	@echo "why one message failed:  head -1 build/demo-traffic.jsonl > /tmp/m.json && $(VENV)/bin/xgate explain --registry config/demo /tmp/m.json"

test: $(STAMP)
	$(PY) -m pytest

# start (or reuse) every broker on 127.0.0.1; installs a missing one
brokers: $(STAMP)
	@for b in $(BROKERS); do bash deploy/brokers/$$b.sh start || exit 1; done

brokers-stop:
	@for b in $(BROKERS); do bash deploy/brokers/$$b.sh stop; done

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) build .pytest_cache

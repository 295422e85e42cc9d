"""Faults on real brokers: every message sent is accounted for afterwards (duplicates counted, none lost)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import Gateway, World, restart_broker, run_scenario
from tests.integration.profiles import PROFILES

COUNT = int(os.environ.get("XGATE_FAULT_COUNT", "5000"))

pytestmark = pytest.mark.integration


def check_nothing_lost(report: dict[str, Any]) -> None:
    log = report.pop("gateway_log_tail")
    summary = json.dumps(report, indent=1)
    assert report["gateway_exit"] == 0, f"{summary}\n{log}"
    for destination in ("valid", "dlq", "unknown"):
        counts = report[destination]
        assert counts["missing"] == 0 and counts["unexpected"] == 0, f"{summary}\n{log}"
    duplicates = sum(report[d]["duplicates"] for d in ("valid", "dlq", "unknown"))
    print(f"accounted for {COUNT} messages; duplicates: {duplicates}")


def restart_after(broker: str, delay: float) -> Any:
    def during(world: World, gateway: Gateway) -> None:
        time.sleep(delay)
        restart_broker(broker)
    return during


def test_destination_broker_restart_mid_stream(tmp_path: Path) -> None:
    # NATS JetStream in, RabbitMQ (AMQP 1.0) out; RabbitMQ restarts while messages flow
    report = run_scenario(PROFILES["NATS"], tmp_path, COUNT, destination=PROFILES["AMQP/1.0"],
                          during=restart_after("rabbitmq", 1.0), timeout=300)
    check_nothing_lost(report)


def test_source_broker_restart_mid_stream(tmp_path: Path) -> None:
    # RabbitMQ (AMQP 1.0) in, NATS JetStream out; RabbitMQ restarts while messages flow
    report = run_scenario(PROFILES["AMQP/1.0"], tmp_path, COUNT, destination=PROFILES["NATS"],
                          during=restart_after("rabbitmq", 1.0), timeout=300)
    check_nothing_lost(report)


def test_sigterm_under_load_drains_and_a_restarted_gateway_finishes(tmp_path: Path) -> None:
    def during(world: World, gateway: Gateway) -> Gateway:
        time.sleep(0.7)
        code = gateway.stop(timeout=60)
        assert code == 0, gateway.output()[-3000:]
        return Gateway(world.config_dir)
    report = run_scenario(PROFILES["NATS"], tmp_path, COUNT, during=during, timeout=300)
    check_nothing_lost(report)

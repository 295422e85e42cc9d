"""`xgate run` Kafka to Kafka on Apache Kafka under faults: every message accounted for, duplicates counted.

- the broker restarts mid-stream (a private Kafka: a test never restarts the shared one);
- a second gateway joins the consumer group and leaves it again while 20,000 messages flow (two
  rebalances under load, on the shared broker).
Each leaves its figures in build/reliability/ like tests/integration/test_faults.py.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import Gateway, World, run_scenario
from tests.integration.profiles import PROFILES, private_kafka
from tests.integration.test_faults import RATE, check_nothing_lost, metric
from tests.kafka_broker import PrivateKafka

pytestmark = pytest.mark.integration

COUNT = int(os.environ.get("XGATE_FAULT_COUNT", "5000"))
REBALANCE_COUNT = 20_000


@pytest.fixture
def broker() -> Iterator[PrivateKafka]:
    with PrivateKafka() as kafka:
        yield kafka


def test_kafka_broker_restart_mid_stream(tmp_path: Path, broker: PrivateKafka) -> None:
    def during(world: World, gateway: Gateway) -> None:
        time.sleep(2.0)
        assert metric(gateway, "xgate_messages_total") > 0, "restarted before any message went through"
        broker.restart()
        world.fault_ended = time.monotonic()
    report = run_scenario(private_kafka(broker), tmp_path, COUNT, during=during, timeout=300, rate=RATE)
    check_nothing_lost(report, "kafka_broker_restart", "broker restart (Apache Kafka in and out)")


def test_a_second_gateway_joins_and_leaves_the_group_under_load(tmp_path: Path) -> None:
    """Both gateways share the source's consumer group: its 4 partitions move to the newcomer and back."""
    seen: dict[str, float] = {}

    def during(world: World, gateway: Gateway) -> None:
        time.sleep(3.0)
        seen["first_before_join"] = metric(gateway, "xgate_messages_total")
        second = Gateway(world.config_dir)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # until the newcomer got partitions and judged something
                time.sleep(0.5)
                if second.process.poll() is None and _judged(second) > 0:
                    break
            time.sleep(3.0)
            seen["second"] = _judged(second)
        finally:
            seen["second_exit"] = second.stop()
        world.fault_ended = time.monotonic()

    rate = float(os.environ.get("XGATE_REBALANCE_RATE", "1000"))
    report = run_scenario(PROFILES["KAFKA"], tmp_path, REBALANCE_COUNT, during=during, timeout=300, rate=rate)
    assert seen["second_exit"] == 0, seen
    assert seen["second"] > 0, f"the second gateway never got a partition: {seen}"
    check_nothing_lost(report, "kafka_rebalance", "a second gateway joins and leaves the group (Kafka)",
                       {"second_gateway_judged": seen["second"]})


def _judged(gateway: Gateway) -> float:
    try:
        return metric(gateway, "xgate_messages_total")
    except (OSError, AssertionError):  # not serving /metrics yet
        return 0.0

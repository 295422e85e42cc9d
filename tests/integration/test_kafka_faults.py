"""`xgate run` Kafka to Kafka on Apache Kafka under faults: every message accounted for, duplicates counted.

- the broker restarts mid-stream (a private Kafka: a test never restarts the shared one);
- a second gateway joins the consumer group and leaves it again while 20,000 messages flow (two
  rebalances under load, on the shared broker);
- an exactly-once route's gateway is killed (SIGKILL) mid-stream and started again: a read_committed
  reader finds each of 20,000 messages once.
Each leaves its figures in build/reliability/ like tests/integration/test_faults.py.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.harness import (
    Collector,
    Gateway,
    World,
    account,
    prepare,
    publish,
    run_scenario,
    wait_until_live,
)
from tests.integration.profiles import PROFILES, private_kafka
from tests.integration.reliability import record
from tests.integration.test_faults import RATE, check_nothing_lost, metric
from tests.integration.traffic import mixed
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


EXACTLY_ONCE_COUNT = 20_000


def test_exactly_once_route_survives_sigkill_without_loss_or_duplicates(tmp_path: Path) -> None:
    """`exactly_once: true`: the gateway is killed mid-stream and started again; a read_committed reader of
    the destinations finds every message once."""
    world = prepare(PROFILES["KAFKA"], tmp_path)
    gateway_yaml = world.config_dir / "gateway.yaml"
    settings = yaml.safe_load(gateway_yaml.read_text())
    settings["routes"][0]["exactly_once"] = True
    for name in ("valid", "dlq", "unknown"):  # how the test reads them: committed records only
        settings["endpoints"][name] = {**settings["endpoints"].get(name, {}), "isolation_level": "read_committed"}
    gateway_yaml.write_text(yaml.safe_dump(settings))
    records = mixed("KAFKA", EXACTLY_ONCE_COUNT)
    expected = world.expected(records)
    killed_after: dict[str, float] = {}

    async def main() -> dict[str, Any]:
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir)
            try:
                probes = await wait_until_live(world, collector)
                publishing = asyncio.create_task(publish(world, records, rate=float(os.environ.get(
                    "XGATE_EOS_RATE", "1000"))))
                await asyncio.sleep(5.0)
                killed_after["judged"] = metric(gateway, "xgate_messages_total")
                gateway.kill()  # SIGKILL: its open transaction is left for the next holder of the id to abort
                gateway = Gateway(world.config_dir)
                await publishing
                await collector.wait_for(expected, 300)
            finally:
                code = gateway.stop()
            report = account(expected, collector, probes)
            report["gateway_exit"], report["gateway_log_tail"] = code, gateway.output()[-3000:]
            return report
    report = asyncio.run(main())
    assert killed_after["judged"] > 0, "killed before any message went through"
    log = report.pop("gateway_log_tail")
    assert report["gateway_exit"] == 0, f"{report}\n{log}"
    for destination in ("valid", "dlq", "unknown"):
        counts = report[destination]
        assert (counts["missing"], counts["unexpected"], counts["duplicates"]) == (0, 0, 0), f"{report}\n{log}"
    record("kafka_exactly_once_sigkill", "gateway killed (SIGKILL) mid-stream, exactly-once Kafka route", report)
    print(f"exactly-once: {EXACTLY_ONCE_COUNT} messages, killed after {killed_after['judged']:.0f} judged; "
          f"0 lost, 0 duplicates at read_committed")

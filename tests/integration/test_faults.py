"""Faults on real brokers: every message sent is accounted for afterwards (duplicates counted, none lost).

Messages are published at a steady rate, so the fault strikes while they flow. Each test leaves its
figures in build/reliability/ (`python -m tests.integration.reliability` prints docs/reliability.md's table).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.integration.harness import (
    Gateway,
    World,
    await_reconnect,
    broker_connections,
    restart_broker,
    rss_bytes,
    run_scenario,
    start_broker,
    stop_broker,
)
from tests.integration.profiles import PROFILES, private_amqp, private_nats
from tests.integration.reliability import record
from tests.integration.slow_link import SlowLink

COUNT = int(os.environ.get("XGATE_FAULT_COUNT", "5000"))
RATE = float(os.environ.get("XGATE_FAULT_RATE", "500"))  # messages a second into the source
# The long outage is long relative to the product's own clocks, which the test sets short: the source's
# `ackwait` (JetStream redelivers what the gateway holds unacknowledged) and the in-flight window (filled in
# WINDOW / rate seconds). The outage outlasts the ackwait four times and the window's filling eight times,
# as the minute did with the defaults (ackwait 30, window 1000 at 100/s); XGATE_FAULT_OUTAGE=60 for the
# docs/reliability.md's minute.
OUTAGE = float(os.environ.get("XGATE_FAULT_OUTAGE", "24"))  # seconds the destination stays down
ACK_WAIT = OUTAGE / 4  # the source's `ackwait` in that test
WINDOW = 300  # runtime.inflight in that test

pytestmark = pytest.mark.integration


def check_nothing_lost(report: dict[str, Any], test: str, fault: str, extra: dict[str, Any] | None = None) -> None:
    log = report.pop("gateway_log_tail")
    summary = json.dumps(report, indent=1)
    assert report["gateway_exit"] == 0, f"{summary}\n{log}"
    for destination in ("valid", "dlq", "unknown"):
        counts = report[destination]
        assert counts["missing"] == 0 and counts["unexpected"] == 0, f"{summary}\n{log}"
    struck = report.get("fault")
    if struck:  # the fault must have struck mid-stream, and the gateway come back through it
        assert struck["published_before_fault_s"] > 0 and struck["published_after_fault_s"] > 0, summary
        assert struck["arrived_before_fault"] > 0, f"nothing had come through before the fault: {summary}"
        assert report["recovery_seconds"] is not None, f"nothing came through after the fault: {summary}"
        assert struck["reconnected"] is not False, f"no new connection to the faulted broker: {summary}"
    row = record(test, fault, report, extra)
    print(f"accounted for {row['sent']} messages; duplicates: {row['duplicated']}; "
          f"recovery: {row['recovery_seconds']} s")


def restart_after(broker: str, env: dict[str, str], delay: float) -> Any:
    """Restart a private node (its environment `env`, its AMQP port XGATE_RABBITMQ_PORT) `delay` s into the run:
    the shared node on 5672 serves other tests meanwhile."""
    port = int(env["XGATE_RABBITMQ_PORT"])

    def during(world: World, gateway: Gateway) -> None:
        time.sleep(delay)
        before = broker_connections(gateway.process.pid, port)
        assert before, f"the gateway held no connection to {broker} when the fault struck"
        world.fault_started = time.monotonic()
        restart_broker(broker, env)
        world.fault_ended = time.monotonic()
        world.reconnected = await_reconnect(gateway.process.pid, port, before)
    return during


def metric(gateway: Gateway, name: str) -> float:
    """The sum of one metric over all its label sets, scraped from the running gateway."""
    status, text = gateway.scrape()
    assert status == 200, text
    pattern = re.compile(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+-]+)$", re.MULTILINE)
    return sum(float(value) for value in pattern.findall(text))


def test_destination_broker_restart_mid_stream(tmp_path: Path, private_rabbitmq_node: dict[str, str]) -> None:
    # NATS JetStream in, RabbitMQ (AMQP 1.0) out; RabbitMQ restarts while messages flow
    report = run_scenario(PROFILES["NATS"], tmp_path, COUNT, destination=private_amqp(private_rabbitmq_node),
                          during=restart_after("rabbitmq", private_rabbitmq_node, 2.0), timeout=300, rate=RATE)
    check_nothing_lost(report, "destination_restart", "destination broker restart (RabbitMQ, AMQP 1.0 out)")


def test_source_broker_restart_mid_stream(tmp_path: Path, private_rabbitmq_node: dict[str, str]) -> None:
    # RabbitMQ (AMQP 1.0) in, NATS JetStream out; RabbitMQ restarts while messages flow
    report = run_scenario(private_amqp(private_rabbitmq_node), tmp_path, COUNT, destination=PROFILES["NATS"],
                          during=restart_after("rabbitmq", private_rabbitmq_node, 2.0), timeout=300, rate=RATE)
    check_nothing_lost(report, "source_restart", "source broker restart (RabbitMQ, AMQP 1.0 in)")


def test_destination_down_for_a_minute_under_load(tmp_path: Path) -> None:
    """NATS in, a NATS server of its own out; that server is stopped for OUTAGE seconds while messages keep
    coming. The gateway stops taking messages once its window is full (memory stays flat), then drains.

    "A minute" in the product's time: the window (WINDOW) fills within the first seconds of the outage, and
    the source's ackwait (ACK_WAIT) runs out several times over, so JetStream redelivers what the gateway holds."""
    port = free_port()
    nats = PROFILES["NATS"]
    source = replace(nats, options=lambda run: {name: {**options, "ackwait": ACK_WAIT} if name == "in" else options
                                                for name, options in nats.options(run).items()})
    destination = private_nats(port)
    env = destination.broker_env
    samples: dict[str, Any] = {}

    def during(world: World, gateway: Gateway) -> None:
        time.sleep(2.0)
        connected = broker_connections(gateway.process.pid, port)
        assert connected, "the gateway held no connection to the destination when the fault struck"
        world.fault_started = time.monotonic()
        stop_broker("nats", env)
        down = time.monotonic()
        before = rss_bytes(gateway.process.pid)
        peak, judged_at = before, {}
        while (elapsed := time.monotonic() - down) < OUTAGE:
            peak = max(peak, rss_bytes(gateway.process.pid))
            for mark in (OUTAGE / 2, OUTAGE - 2):  # the second half of the outage: nothing more is taken
                if mark not in judged_at and elapsed >= mark:
                    judged_at[mark] = metric(gateway, "xgate_messages_total")
            samples["inflight"] = max(samples.get("inflight", 0), metric(gateway, "xgate_inflight_messages"))
            time.sleep(0.5)
        start_broker("nats", env)
        world.fault_ended = time.monotonic()
        world.reconnected = await_reconnect(gateway.process.pid, port, connected)
        samples.update(rss_before=before, rss_peak=peak, judged=list(judged_at.values()))

    rate = min(RATE, 100.0)  # enough to keep coming through the whole outage
    count = int(rate * (OUTAGE + 10))  # 2 s before the outage, 8 s after it
    try:
        report = run_scenario(source, tmp_path, count, destination=destination, during=during,
                              timeout=300, rate=rate, runtime={"inflight": WINDOW})
    finally:
        stop_broker("nats", env)
    growth = samples["rss_peak"] - samples["rss_before"]
    print(f"RSS before the outage {samples['rss_before'] / 2**20:.1f} MiB, peak during it "
          f"{samples['rss_peak'] / 2**20:.1f} MiB; judged at mid-outage and at its end: {samples['judged']}; "
          f"most in flight: {samples['inflight']:.0f}")
    assert samples["inflight"] <= WINDOW, samples  # the window (runtime.inflight) bounds what is held
    assert samples["judged"][0] == samples["judged"][1], "the gateway went on taking messages it could not deliver"
    assert growth < 64 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB while the destination was down"
    check_nothing_lost(report, "destination_down", f"destination down {OUTAGE:.0f} s under load (NATS out)",
                       {"rss_growth_mib": round(growth / 2**20, 1)})


def test_sigkill_mid_stream_then_restart(tmp_path: Path) -> None:
    """At-least-once: what the killed gateway had taken but not settled comes again (duplicates counted)."""
    def during(world: World, gateway: Gateway) -> Gateway:
        time.sleep(3.0)
        assert metric(gateway, "xgate_messages_total") > 0, "killed before any message went through"
        world.fault_started = time.monotonic()
        gateway.kill()
        replacement = Gateway(world.config_dir)
        world.fault_ended = time.monotonic()
        return replacement
    report = run_scenario(PROFILES["AMQP/1.0"], tmp_path, COUNT, destination=PROFILES["NATS"], during=during,
                          timeout=300, rate=RATE)
    check_nothing_lost(report, "sigkill", "gateway killed (SIGKILL) mid-stream and started again (AMQP in)")


def test_slow_destination(tmp_path: Path) -> None:
    """The destination sits behind a link that holds every chunk 50 ms each way: slower, nothing lost."""
    port = free_port()
    start_broker("nats", {"XGATE_NATS_PORT": str(port)})
    try:
        with SlowLink(port, delay=0.05) as link:
            destination = private_nats(port, f"127.0.0.1:{link.port}")
            report = run_scenario(PROFILES["NATS"], tmp_path, COUNT, destination=destination, timeout=300,
                                  rate=RATE)
            assert link.chunks > 0, "nothing crossed the slow link"
    finally:
        stop_broker("nats", {"XGATE_NATS_PORT": str(port)})
    check_nothing_lost(report, "slow_destination", "slow destination (NATS behind a 50 ms each-way link)")


def test_sigterm_under_load_drains_and_a_restarted_gateway_finishes(tmp_path: Path) -> None:
    def during(world: World, gateway: Gateway) -> Gateway:
        time.sleep(2.0)
        world.fault_started = time.monotonic()
        code = gateway.stop(timeout=60)
        assert code == 0, gateway.output()[-3000:]
        replacement = Gateway(world.config_dir)
        world.fault_ended = time.monotonic()
        return replacement
    report = run_scenario(PROFILES["NATS"], tmp_path, COUNT, during=during, timeout=300, rate=RATE)
    check_nothing_lost(report, "sigterm", "gateway stopped (SIGTERM, drains) mid-stream and started again")
